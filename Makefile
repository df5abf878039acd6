# scope-profiler: the two commands a newcomer types are `make demo` and
# `make test`; both install missing Debian packages first (as root).
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX  ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench install clean

all: build

# The browser (Chromium, for the report's browser test) is installed only
# for `make test`; `make demo` needs none.
DEPS_ARGS ?=
test: DEPS_ARGS = --with-browser

deps:
	@scripts/install-deps.sh $(DEPS_ARGS)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@scripts/install-lint.sh $(BUILD)/lint-tools
	@scripts/run-tests.sh $(BUILD)

bench: build
	@$(BUILD)/bench/overhead --json bench/results.json
	@$(BUILD)/bench/finalize_bench --json $(BUILD)/bench/finalize.json
	@$(BUILD)/bench/file_size --json $(BUILD)/bench/file_size.json
	@bench/callgrind.sh $(BUILD) || true

install: build
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
