# verl.cpp entry points. `make test` and `make demo` do the whole set-up first.
BUILD_DIR ?= build
JOBS ?= 2
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all deps deps-test configure build build-verl test test-unit demo bench fuzz clean

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

# libFuzzer harnesses (fuzz/, docs/fuzzing.md) built with clang under ASan + UBSan in $(FUZZ_BUILD_DIR), each run
# for FUZZ_SECONDS over its committed corpus (new inputs go to $(FUZZ_BUILD_DIR)/corpus/<name>); a crash stops
# the run and leaves crash-* in $(FUZZ_BUILD_DIR)/artifacts. FUZZ_HARNESSES picks some (default: all).
# Needs clang: scripts/install-deps.sh --fuzz.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_HARNESSES ?= json hf_config yaml_config overrides tokenizer_json tokenizer_config parquet safetensors \
                  data_proto checkpoint_metadata
fuzz:
	cmake -S fuzz -B $(FUZZ_BUILD_DIR) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(FUZZ_BUILD_DIR) -j$(JOBS)
	@mkdir -p $(FUZZ_BUILD_DIR)/artifacts
	@for h in $(FUZZ_HARNESSES); do \
	  mkdir -p $(FUZZ_BUILD_DIR)/corpus/$$h; \
	  echo "== fuzz $$h for $(FUZZ_SECONDS) s"; \
	  ASAN_OPTIONS=allocator_may_return_null=1 $(FUZZ_BUILD_DIR)/verl_fuzz_$$h -max_total_time=$(FUZZ_SECONDS) \
	    -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD_DIR)/artifacts/$$h- \
	    $(FUZZ_BUILD_DIR)/corpus/$$h fuzz/corpus/$$h || exit 1; \
	done

clean:
	rm -rf $(BUILD_DIR)
