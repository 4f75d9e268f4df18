# sagejit: the two commands are `make demo` and `make test`; both install what is missing first.
BUILD_DIR ?= build
SANITIZE_DIR ?= build-sanitize
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
APT_PACKAGES := cmake ninja-build g++ make pkg-config clang-22 lld-22 llvm-22 \
  libfmt-dev nlohmann-json3-dev doctest-dev libcli11-dev libxxhash-dev \
  libamdhip64-dev libhiprtc-builtins5 python3 python3-venv ccache debootstrap
# The venv `make test` runs the Python tests in, and what it holds.
VENV ?= .venv
PYTHON_TEST_REQUIREMENTS := python/requirements-test.txt
# The GPU-runtime directories of that venv (pip's NVRTC wheel: nvidia/cu13/lib), found by the package's own
# rule (sagejit/_runtime_dirs.py) and handed to the C++ tests as SAGEJIT_LIBRARY_DIRS, ahead of the caller's.
VENV_LIBRARY_DIRS = $(shell cd python && $(abspath $(VENV))/bin/python -c \
  "from sagejit import _runtime_dirs as r; print(':'.join(r.runtime_search_dirs()))")$(if $(SAGEJIT_LIBRARY_DIRS),:$(SAGEJIT_LIBRARY_DIRS))
# ctest's and pytest's JUnit reports, read back for the list of skipped tests.
TEST_REPORTS = $(abspath $(BUILD_DIR))/test-reports
# A subset of the C++ tests: make test-cpp CTEST_ARGS="-R test_sm90_kernel".
CTEST_ARGS ?=
# In CI only GPU tests may skip (tools/scripts/skip_report.py); elsewhere a skip is listed, not an error.
SKIP_POLICY = $(if $(filter true,$(CI)),--require-only-gpu-skips,)

.PHONY: all deps configure build demo python-env test test-cpp test-python test-wheel test-gpu sanitize clean

all: build

# Install missing Debian packages (as root), or print the exact command and stop.
deps:
	@./tools/scripts/install_deps.sh $(APT_PACKAGES)

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job: report the toolchains and GPUs, precompile the gfx1201 kernels, selftest on a GPU.
demo: build
	@./tools/scripts/demo.sh $(BUILD_DIR)

# The C++ tests (ctest), then the Python tests (pytest, in the venv), then the wheel as a user gets it;
# last, every test that skipped, with its reason.
test: test-cpp test-python test-wheel
	@python3 tools/scripts/skip_report.py $(TEST_REPORTS)/ctest.xml $(TEST_REPORTS)/pytest.xml $(SKIP_POLICY)

# After python-env: the NVRTC that the sm_90 compile tests need is the venv's pip wheel.
test-cpp: build python-env
	@mkdir -p $(TEST_REPORTS) && rm -f $(TEST_REPORTS)/ctest.xml
	@cd $(BUILD_DIR) && SAGEJIT_LIBRARY_DIRS="$(VENV_LIBRARY_DIRS)" ctest --output-on-failure -j $(JOBS) \
	  --output-junit $(TEST_REPORTS)/ctest.xml $(CTEST_ARGS)

python-env: deps
	@./tools/scripts/python_env.sh $(VENV) $(PYTHON_TEST_REQUIREMENTS)

test-python: build python-env
	@mkdir -p $(TEST_REPORTS) && rm -f $(TEST_REPORTS)/pytest.xml
	@cd python && SAGEJIT_LIBRARY=$(CURDIR)/$(BUILD_DIR)/runtime/libsagejit.so SAGEJIT_LOG=warn \
	  PYTHONDONTWRITEBYTECODE=1 $(CURDIR)/$(VENV)/bin/python -m pytest -q -rs -p no:cacheprovider \
	  --junitxml=$(TEST_REPORTS)/pytest.xml tests

# `pip wheel .`, then the wheel installed into a new venv and used there (tools/scripts/wheel_smoke.sh).
test-wheel: deps python-env
	@./tools/scripts/wheel_smoke.sh $(CURDIR)/$(VENV)/bin/python

# GPU tests only (they skip without a GPU).
test-gpu: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -L gpu

# CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer, plus a short fuzz run of the
# tuning-table loader (libFuzzer, clang).
# libclang-rt-22-dev: the libFuzzer and sanitizer runtimes of clang-22 (the fuzz target links them).
sanitize: deps
	@./tools/scripts/install_deps.sh libclang-rt-22-dev
	@cmake -S . -B $(SANITIZE_DIR) -G Ninja -DSAGEJIT_SANITIZE=ON -DSAGEJIT_FUZZ=ON $(CMAKE_FLAGS)
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)
	@cd $(SANITIZE_DIR) && LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ctest --output-on-failure -j $(JOBS) -L cpu
	@./tools/scripts/run_fuzzers.sh $(SANITIZE_DIR)

clean:
	@rm -rf $(BUILD_DIR) $(SANITIZE_DIR) build-wheel
