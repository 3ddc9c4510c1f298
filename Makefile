# The two commands of the README: `make run` and `make test`. Everything else is for developers and CI.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench setup clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	touch $(STAMP)

setup: $(STAMP)

## Set up and run the whole service on the embedded default: web, Celery worker and scheduler (SQLite, file broker).
run: $(STAMP)
	$(BIN)/python manage.py runlocal

## Set up and run the whole test suite (PostgreSQL and Redis tests run when DATABASE_URL / CACHE_URL point at them).
test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python manage.py makemigrations --check --dry-run

bench: $(STAMP)
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .local staticfiles
