# Both targets do all set-up on a fresh machine: create .venv, install the project, then run.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[providers,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/evalshift demo

# The report tests load report.html in Debian's headless Chromium (CI runs as root on a fresh machine).
CHROMIUM := $(VENV)/.chromium
$(CHROMIUM): $(STAMP)
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	touch $(CHROMIUM)

test: $(STAMP) $(CHROMIUM)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .evalshift build *.egg-info
