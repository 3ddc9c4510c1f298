"""The API reference as integrators read it in `/openapi.json` and `/docs`: what the declarations cannot say of
themselves. `hook.reference_postprocess` (a drf-spectacular postprocessing hook, named in settings) gives every
property without a help_text its description and example from `glossary`, every operation its description and
request examples from `operations`, and the info section the error codes from `errors` (the DomainError subclasses
and their meanings). A field's own help_text always wins over the glossary."""
