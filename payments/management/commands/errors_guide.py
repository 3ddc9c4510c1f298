"""Write the error codes, generated from the code (payments.reference.errors), into docs/errors.md between its markers.
tests/payments/reference/test_reference.py fails when the guide differs from what this writes."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, no_translations
from django.urls import get_resolver

from payments.reference.errors import errors_markdown

BEGIN, END = "<!-- errors:begin -->\n", "<!-- errors:end -->"


def guide_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "errors.md"


def guide_generated(text: str) -> str:
    """`text` (the guide) with the generated list between its markers."""
    if BEGIN not in text or END not in text:
        raise CommandError(f"docs/errors.md lost its markers ({BEGIN.strip()} … {END})")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}{errors_markdown()}\n{END}{tail}"


class Command(BaseCommand):
    help = "Write the error codes generated from the code into docs/errors.md (--check: only say if it differs)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--check", action="store_true", help="Exit non-zero if docs/errors.md differs.")

    @no_translations  # the API's messages are English
    def handle(self, *args, check: bool, **options) -> None:
        _ = get_resolver().url_patterns  # every API module, so every DomainError subclass, is loaded
        path = guide_path()
        current = path.read_text()
        generated = guide_generated(current)
        if generated == current:
            self.stdout.write("docs/errors.md is up to date")
        elif check:
            raise CommandError("docs/errors.md differs from the code: run `python manage.py errors_guide`")
        else:
            path.write_text(generated)
            self.stdout.write("docs/errors.md written")
