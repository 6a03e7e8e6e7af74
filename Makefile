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

# The capture SDK's oldest supported provider releases (README "Instrument an agent"), tested in
# a second, small environment: the provider SDKs, the SDK's own deps and pytest, nothing else.
OLDEST := .venv-oldest
OLDEST_PINS := 'openai==1.66.0' 'anthropic==0.40.0' 'google-genai==1.0.0' 'httpx<0.28'
OLDEST_STAMP := $(OLDEST)/.installed
OLDEST_TESTS := tests/sdk/test_openai_calls.py tests/sdk/test_anthropic_calls.py \
	tests/sdk/test_gemini_calls.py tests/sdk/test_tools.py tests/sdk/test_faults.py \
	tests/sdk/test_anthropic_beta.py tests/sdk/test_genai_afc_executions.py \
	tests/sdk/test_deferred_bookkeeping.py
$(OLDEST_STAMP): Makefile
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install -q $(OLDEST_PINS) 'wrapt>=1.16' 'opentelemetry-sdk>=1.27' 'orjson>=3.10' pytest pyyaml
	touch $(OLDEST_STAMP)

test: $(STAMP) $(CHROMIUM) $(OLDEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q
	PYTHONPATH=$(CURDIR) $(OLDEST)/bin/python -m pytest -q -p no:cacheprovider $(OLDEST_TESTS)

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(OLDEST) .evalshift build *.egg-info
