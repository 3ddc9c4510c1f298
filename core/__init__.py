"""The API machinery every app shares: base views, errors, pagination, renderers, middleware, metrics, crypto.

core imports no app; apps import core; config wires them (import-linter's contracts in pyproject.toml)."""
