# The two commands of the README: `make run` and `make test`. Everything else is for developers and CI.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench setup messages clean

# Development installs the runtime pins plus the test tools (requirements-dev.txt); production installs
# requirements.txt alone (README, "Production deployment").
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP) messages

## Compile the translations (locale/*/LC_MESSAGES/*.po → .mo, not committed); up-to-date catalogs are skipped.
messages: $(STAMP)
	$(BIN)/python manage.py compilemessages --ignore=$(VENV) --ignore=.local -v 0

## Set up and run the whole service on the embedded default: web, Celery worker and scheduler (SQLite, file broker).
run: setup
	$(BIN)/python manage.py runlocal

## Set up and run the whole test suite (PostgreSQL and Redis tests run when DATABASE_URL / CACHE_URL point at them).
test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## Refresh the committed docs/screenshots/ (the browser tests; `make test` writes to the ignored tests/e2e/screenshots/).
screenshots: $(STAMP)
	SCREENSHOTS_DIR=docs/screenshots $(BIN)/python -m pytest tests/e2e $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python manage.py makemigrations --check --dry-run

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .local staticfiles
