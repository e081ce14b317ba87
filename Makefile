# Quick start: `make run` (set up, extract a bundled fixture) and `make test` (set up, run tests).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip
FIXTURE ?= fixtures/clean/vat_invoice_0001.jpg

.PHONY: run test setup setup-dev fonts lint eval fixtures clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Runtime install: the package and its default engine (PP-OCR ONNX models ship in the rapidocr wheel).
$(VENV)/.setup: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e .
	touch $@

# Test install: dev tools, and the CJK fonts the fixture generator renders with.
$(VENV)/.setup-dev: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e '.[dev]'
	touch $@

setup: $(VENV)/.setup
setup-dev: $(VENV)/.setup $(VENV)/.setup-dev fonts

# Fonts for `roi synth` (fixture generation): installed from Debian's packages when missing.
fonts:
	@fc-list | grep -qi 'AR PL UKai' && fc-list | grep -qi 'WenQuanYi Zen Hei' || { \
	  command -v apt-get >/dev/null || { echo "install fonts-arphic-ukai fonts-arphic-uming fonts-wqy-zenhei fonts-wqy-microhei" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    fonts-arphic-ukai fonts-arphic-uming fonts-wqy-zenhei fonts-wqy-microhei >/dev/null; }

run: setup
	$(BIN)/roi extract $(FIXTURE) --template vat_invoice --table

test: setup-dev
	$(BIN)/ruff check extractor service tests bench
	$(BIN)/pytest -q

eval: setup
	$(BIN)/roi eval fixtures

lint: setup-dev
	$(BIN)/ruff check extractor service tests bench
	$(BIN)/ruff format --check extractor service tests bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
