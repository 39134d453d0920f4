# godali: `make` builds build/libgodali.so (and build/libgodali_cuda.so when a CUDA
# toolkit is found; GPU=1 insists, GPU=0 skips); `make test` runs every test suite;
# `make bench` runs the main job. Both first run scripts/setup.sh (idempotent).

GO      ?= go
PYTHON  ?= /usr/bin/python3
BUILD   := build
GPU     ?= auto
LIBJPEG := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libjpeg.so.62 /usr/lib/aarch64-linux-gnu/libjpeg.so.62 /usr/lib64/libjpeg.so.62 /usr/lib/libjpeg.so.62))
NVCC    ?= $(firstword $(wildcard /usr/bin/nvcc /usr/local/cuda/bin/nvcc))
GOSRC   := $(shell find capi engine codec internal nvjpeg kernels -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.cu' 2>/dev/null) go.mod go.sum include/godali.h

ifeq ($(GPU),auto)
  WANT_CUDA := $(if $(NVCC),1,)
else ifeq ($(GPU),1)
  WANT_CUDA := 1
else
  WANT_CUDA :=
endif

# $ORIGIN: the library finds the libjpeg copied next to it on hosts that lack one.
export CGO_LDFLAGS := -Wl,-rpath,$$ORIGIN -Wl,--enable-new-dtags

.PHONY: all setup cpu cuda test test-go test-c test-python bench python clean

all: setup cpu $(if $(WANT_CUDA),cuda)

setup:
	@bash scripts/setup.sh

cpu: $(BUILD)/libgodali.so

$(BUILD)/libgodali.so: $(GOSRC)
	@mkdir -p $(BUILD)
	$(GO) build -buildmode=c-shared -trimpath -o $@ ./capi
	@rm -f $(BUILD)/libgodali.h
	@if [ -n "$(LIBJPEG)" ]; then cp -L $(LIBJPEG) $(BUILD)/libjpeg.so.62; fi

cuda: $(BUILD)/libgodali_cuda.so

$(BUILD)/libgodali_cuda.so: $(GOSRC)
	@test -n "$(NVCC)" || { echo "make: GPU=1 but no CUDA toolkit (nvcc) found; run scripts/setup.sh" >&2; exit 1; }
	@mkdir -p $(BUILD)
	$(MAKE) -C kernels NVCC=$(NVCC) OUT=$(CURDIR)/$(BUILD)/kernels
	$(GO) build -tags cuda -buildmode=c-shared -trimpath -o $@ ./capi
	@rm -f $(BUILD)/libgodali_cuda.h
	@if [ -n "$(LIBJPEG)" ]; then cp -L $(LIBJPEG) $(BUILD)/libjpeg.so.62; fi

test: all test-go test-c test-python

test-go: setup
	$(GO) test ./...
	$(if $(WANT_CUDA),$(GO) vet -tags cuda ./...)

test-c: cpu
	cmake -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)/cmake -j2
	ctest --test-dir $(BUILD)/cmake --output-on-failure

test-python: cpu
	PYTHONPATH=$(CURDIR)/python $(PYTHON) -m pytest -q python/tests

# Copies the built libraries into the Python package, for `pip install ./python`.
python: all
	mkdir -p python/godali/lib
	cp $(BUILD)/libgodali*.so $(BUILD)/libjpeg.so.62 python/godali/lib/ 2>/dev/null || cp $(BUILD)/libgodali.so python/godali/lib/

bench: all
	PYTHONPATH=$(CURDIR)/python $(PYTHON) -m godali bench $(ARGS)

clean:
	rm -rf $(BUILD) python/godali/lib
