# What a person types. Everything builds in build/ (Release); programs land in build/bin/.
#
#   make demo        install what is missing, build the library and baton, train on Fashion-MNIST
#   make test        the same set-up, then the tests of labels unit and integration, each timed
#   make test-all    every test label (unit, integration, slow, mpi, postgres, faults, browser, gpu)
#   make test-asan   the unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer
#   make build-torch2  the same tree against LibTorch 2.x with CUDA (the pinned PyPI torch wheel in
#                    .venv-torch2/, scripts/torch2-requirements.txt) in build-torch2/
#   make test-torch2 its unit and integration tests (on the CPU); make test-gpu: label gpu (skips
#                    without a GPU)
#   make bench       build and run the benchmarks (figures: bench/README.md)
#   make format      clang-format every C++ file; make tidy runs clang-tidy
#   make fuzz        build and run the parsers' fuzzers for a short while (clang, libFuzzer)
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 120
CXX_FILES = $(shell git ls-files '*.h' '*.cpp')

.PHONY: build deps configure demo test test-all test-asan build-torch2 test-torch2 test-gpu bench format format-check tidy fuzz install clean

build: configure
	cmake --build --preset default -j $(JOBS)

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset default >/dev/null

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

test-all: build
	@scripts/install-deps.sh --browser
	ctest --preset all -j $(JOBS)

build-torch2:
	@scripts/install-deps.sh --torch2
	@BATON_TORCH2_PREFIX="$$(scripts/torch2-env.sh | tail -n1)" && [ -n "$$BATON_TORCH2_PREFIX" ] && \
	  BATON_TORCH2_PREFIX="$$BATON_TORCH2_PREFIX" cmake --preset torch2 >/dev/null
	cmake --build --preset torch2 -j $(JOBS)

test-torch2: build-torch2
	ctest --preset torch2 -j $(JOBS)

test-gpu: build-torch2
	ctest --test-dir build-torch2 -L gpu --output-on-failure

test-asan: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

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

fuzz:
	@scripts/install-deps.sh --fuzz
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	scripts/run-fuzzers.sh build-fuzz/bin $(FUZZ_SECONDS) $(JOBS)

install: build
	cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-debug build-fuzz build-tidy build-torch2
