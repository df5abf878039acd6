# scope-profiler: the two commands a newcomer types are `make demo` and
# `make test`; both install missing Debian packages first (as root).
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX  ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test test-asan test-tsan bench install clean

all: build

deps:
	@scripts/install-deps.sh --with-browser

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@scripts/run-tests.sh $(BUILD)

bench: build
	@$(BUILD)/bench/overhead --json bench/results.json
	@$(BUILD)/bench/file_size --json $(BUILD)/bench/file_size.json

install: build
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-tsan
