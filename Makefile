# The two commands of the README: `make run` and `make test`. Everything else is for developers and CI.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-all lint bench setup messages shell clean

# Development installs the runtime pins plus the test tools (requirements-dev.txt); production installs
# requirements.txt alone (docs/operations.md).
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP) messages

## Compile the translations (locale/*/LC_MESSAGES/*.po → .mo, not committed); up-to-date catalogs are skipped.
messages: $(STAMP)
	$(BIN)/python manage.py compilemessages --ignore=$(VENV) --ignore=.local -v 0

# PostgreSQL and Redis: the servers DATABASE_URL, CACHE_URL and CELERY_BROKER_URL name, else embedded ones from their
# wheels under .local/, started and stopped around the command (tools/localservices.py).
LOCAL := $(BIN)/python tools/localservices.py

## Set up and run the whole service: web, Celery worker and scheduler.
run: setup
	$(LOCAL) $(BIN)/python manage.py runlocal

## Set up and run the test suite on every core, all but the slow tests (soak, browser, fuzz, real processes).
test: setup
	$(LOCAL) $(BIN)/python -m pytest -n auto -m "not slow" $(PYTEST_ARGS)

## Every test, the slow ones too (what CI runs).
test-all: setup
	$(LOCAL) $(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

## A Django shell on the same services as `make run`.
shell: setup
	$(LOCAL) $(BIN)/python manage.py shell

## Refresh the committed docs/screenshots/ (the browser tests; the tests write to the ignored tests/e2e/screenshots/).
screenshots: $(STAMP)
	SCREENSHOTS_DIR=docs/screenshots $(LOCAL) $(BIN)/python -m pytest tests/e2e $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(LOCAL) $(BIN)/python manage.py makemigrations --check --dry-run

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .local staticfiles
