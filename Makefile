# What a person types. Everything builds in build/ (Release); programs land in build/bin/.
#
#   make demo        install what is missing, build the library and baton, train on Fashion-MNIST
#                    (make build, test and demo build against python3's PyTorch 2.x when it has one,
#                    else Debian's LibTorch 1.13: scripts/configure.sh)
#   make test        the same set-up, then the tests of labels unit and integration, each timed
#   make test-all    every test label (unit, integration, slow, mpi, postgres, nginx, mlflow, llm, faults, browser, gpu),
#                    then make test-asan and make tidy
#   make test-asan   the unit and integration tests built with AddressSanitizer +
#                    UndefinedBehaviorSanitizer against LibTorch 2.x with CUDA (run on the CPU)
#   make check-torch2  CI's check of LibTorch 2.x with CUDA: the library (CUDA files too), the CLI and
#                    the GPU tests compile, unoptimised; the linking test (the wheel's libtorch.so
#                    after libstdc++), the fused Adam's tests and the language models' tests (label
#                    llm: against transformers, tokenizers and sentencepiece in .venv-llm) run there
#   make build-torch2  the same tree against LibTorch 2.x with CUDA (the pinned PyPI torch wheel in
#                    .venv-torch2/, scripts/torch2-requirements.txt) in build-torch2/
#   make test-torch2 its unit and integration tests (on the CPU); make test-gpu: label gpu (skips
#                    without a GPU)
#   make bench       build and run the benchmarks (figures: bench/README.md)
#   make format      clang-format every C++ file; make tidy runs clang-tidy (make tidy-changed: on
#                    what changed since the last landed commit, as CI does)
#   make fuzz        build and run the parsers' fuzzers for a short while (clang, libFuzzer)
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 120
CXX_FILES = $(shell git ls-files '*.h' '*.cpp')

.PHONY: build deps configure demo test test-all test-asan check-torch2 build-torch2 test-torch2 test-gpu bench format format-check tidy tidy-changed fuzz install clean

build: configure
	cmake --build --preset default -j $(JOBS)

deps:
	@scripts/install-deps.sh

# build/ against python3's PyTorch when it is 2.11 or later, else Debian's LibTorch 1.13
# (BATON_LIBTORCH=system|python|DIR chooses; scripts/configure.sh says more).
configure:
	@scripts/configure.sh

# Builds only the library and `baton`, quietly (logs in build/logs/), then trains; with an NVIDIA GPU
# (nvidia-smi answers) against LibTorch with CUDA, on the GPU. scripts/demo.sh says more.
demo:
	@JOBS=$(JOBS) scripts/demo.sh

# unit (the test programs and the layering check), then integration (the CLI, install, faults,
# search and valgrind scripts), each timed; both run, and either failing fails make test.
test: build
	@rc=0; for label in unit integration; do start=$$SECONDS; \
	  ctest --preset $$label -j $(JOBS) || rc=$$?; \
	  echo "make test: $$label: $$((SECONDS - start)) s"; done; exit $$rc

# Every label, then the sanitizers' unit suite and clang-tidy over every source, each timed; all
# run, and any failing fails make test-all.
test-all: build
	@scripts/install-deps.sh --browser --servers --torch2
	@bench/peers/make-venv.sh --mlflow >/dev/null || echo "make test-all: no .venv-mlflow (PyPI unreachable?): label mlflow skips"
	@bench/peers/make-venv.sh --llm >/dev/null || echo "make test-all: no .venv-llm (PyPI unreachable?): label llm skips"
	@rc=0; for part in "ctest --preset all -j $(JOBS)" "$(MAKE) --no-print-directory test-asan" \
	  "$(MAKE) --no-print-directory tidy"; do start=$$SECONDS; $$part || rc=$$?; \
	  echo "make test-all: $$part: $$((SECONDS - start)) s"; done; exit $$rc

build-torch2:
	@scripts/install-deps.sh --torch2
	@BATON_TORCH2_PREFIX="$$(scripts/torch2-env.sh | tail -n1)" && [ -n "$$BATON_TORCH2_PREFIX" ] && \
	  BATON_TORCH2_PREFIX="$$BATON_TORCH2_PREFIX" cmake --preset torch2 >/dev/null
	cmake --build --preset torch2 -j $(JOBS)

test-torch2: build-torch2
	ctest --preset torch2 -j $(JOBS)

test-gpu: build-torch2
	ctest --test-dir build-torch2 -L gpu --output-on-failure

# The sanitizers' build is against LibTorch 2.x with CUDA, so that it also proves the CUDA files
# compile and link; make test-all runs it.
test-asan:
	@scripts/install-deps.sh --torch2
	@BATON_TORCH2_PREFIX="$$(scripts/torch2-env.sh | tail -n1)" && [ -n "$$BATON_TORCH2_PREFIX" ] && \
	  BATON_TORCH2_PREFIX="$$BATON_TORCH2_PREFIX" cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

# CI's check of the LibTorch 2.x build (the one the GPU and the benchmarks use): the library with its
# CUDA files, the CLI and the GPU tests compile and link against the pinned wheel's LibTorch with
# CUDA, unoptimised (a compile check: nothing runs; make test-torch2 and make test-asan run the tests
# on that LibTorch).
check-torch2:
	@scripts/install-deps.sh --torch2
	@BATON_TORCH2_PREFIX="$$(scripts/torch2-env.sh | tail -n1)" && [ -n "$$BATON_TORCH2_PREFIX" ] && \
	  BATON_TORCH2_PREFIX="$$BATON_TORCH2_PREFIX" cmake --preset torch2-check >/dev/null
	cmake --build --preset torch2-check -j $(JOBS) --target baton_cli gpu_tests hf_reference_tests optim_tests
	build-torch2-check/bin/gpu_tests --gtest_filter='Linking.*' --gtest_brief=1
	build-torch2-check/bin/optim_tests --gtest_filter='FusedAdam.*' --gtest_brief=1
	ctest --test-dir build-torch2-check -L llm --output-on-failure

bench: build
	@scripts/install-deps.sh --bench
	build/bin/engine_bench
	build/bin/trainer_bench
	build/bin/resume_bench
	bench/peer_fashion.sh

format:
	clang-format -i $(CXX_FILES)

format-check:
	@clang-format --dry-run -Werror $(CXX_FILES) && echo "format-check: $(words $(CXX_FILES)) files formatted (make format fixes any that are not)"

tidy: deps
	scripts/tidy.sh

# clang-tidy on the sources changed since the last landed commit (.ci/landed), as CI runs it; every
# source when that commit is not in this clone's history (a shallow clone).
tidy-changed: deps
	@base=$$(cat .ci/landed); if git cat-file -e "$$base^{commit}" 2>/dev/null; then scripts/tidy.sh --since "$$base"; \
	  else echo "tidy-changed: $$base (.ci/landed) is not in this clone: every source"; scripts/tidy.sh; fi

fuzz:
	@scripts/install-deps.sh --fuzz
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	scripts/run-fuzzers.sh build-fuzz/bin $(FUZZ_SECONDS) $(JOBS)

install: build
	cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-debug build-fuzz build-tidy build-torch2 build-torch2-check
