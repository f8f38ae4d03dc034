# The two entry points the README opens with. Both install what is missing,
# configure, and build with -j2 (two parallel builds thrash a 2-core machine).
BUILD_DIR ?= build
JOBS ?= 2
DEMO_MODEL ?= models/exports/gpt2_tiny.onnx

.PHONY: all deps build test demo clean

all: build

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja
	cmake --build $(BUILD_DIR) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure

demo: build
	./scripts/demo.sh $(BUILD_DIR) $(DEMO_MODEL)

clean:
	rm -rf $(BUILD_DIR)
