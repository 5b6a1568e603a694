# verl.cpp entry points. `make test` and `make demo` do the whole set-up first.
BUILD_DIR ?= build
JOBS ?= 2
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all deps deps-test configure build build-verl test test-unit demo bench clean

all: build

# Build and run: Debian packages and LibTorch (.venv/libtorch). Tests add .venv/test, npm packages, Chromium.
deps:
	scripts/install-deps.sh

deps-test:
	scripts/install-deps.sh --test

configure:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DPython3_EXECUTABLE=/usr/bin/python3 $(CMAKE_FLAGS)

# Everything: the library, the `verl` binary, tests and benchmarks.
build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

# The `verl` binary alone (what `make demo` needs).
build-verl: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target verl

test: deps-test build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

test-unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L unit

# The embedded default: SFT warm start + GRPO on the arithmetic task, in $(DEMO_OUT); DEMO_ARGS are passed to
# `verl demo` (e.g. DEMO_ARGS="--algo ppo --seed 1").
DEMO_OUT ?= verl_demo
DEMO_ARGS ?=
demo: deps build-verl
	$(BUILD_DIR)/verl demo --out $(DEMO_OUT) $(DEMO_ARGS)

bench: build
	@for b in $(BUILD_DIR)/bench/bench_*; do echo "== $$b"; $$b; done

clean:
	rm -rf $(BUILD_DIR)
