# What a person types. Everything builds in build/ (Release); programs land in build/bin/.
#
#   make demo        install what is missing, build, run the main job
#   make test        the same set-up, then the fast tests (ctest label: unit)
#   make test-all    every test label (unit, slow, mpi, postgres)
#   make test-asan   the unit tests built with AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench       build and run the benchmarks (figures: bench/README.md)
#   make format      clang-format every C++ file; make tidy runs clang-tidy
#   make fuzz        build and run the parsers' fuzzers for a short while (clang, libFuzzer)
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 120
CXX_FILES = $(shell git ls-files '*.h' '*.cpp')

.PHONY: build deps configure demo test test-all test-asan bench format format-check tidy fuzz install clean

build: configure
	cmake --build --preset default -j $(JOBS)

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset default >/dev/null

demo: build
	build/bin/baton train recipes/fashion_mnist.yaml

test: build
	ctest --preset unit -j $(JOBS)

test-all: build
	ctest --preset all -j $(JOBS)

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
	clang-format --dry-run -Werror $(CXX_FILES)

tidy: deps
	scripts/tidy.sh

fuzz:
	@scripts/install-deps.sh --fuzz
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	scripts/run-fuzzers.sh build-fuzz/bin $(FUZZ_SECONDS)

install: build
	cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-debug build-fuzz build-tidy
