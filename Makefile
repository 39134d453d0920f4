# godali: `make` builds build/libgodali.so (and build/libgodali_cuda.so when a CUDA
# toolkit is found; GPU=1 insists, GPU=0 skips); `make test` runs every test suite;
# `make bench` runs the main job. Both first run scripts/setup.sh (idempotent).

GO      ?= go
# The project's Python: the venv scripts/setup.sh makes from Debian's python3 (Debian's
# torch and packages, and the pinned PyPI ones of scripts/requirements.txt), never
# whatever python3 comes first on PATH (pyenv, conda). GODALI_VENV moves it (setup.sh
# reads the same); `make PYTHON=...` runs the targets under another interpreter.
VENV    := $(or $(GODALI_VENV),/usr/local/lib/godali-venv)
PYTHON  := $(VENV)/bin/python
# The Go tests' Python references (internal/pyref, the PIL and moto tests) run under it too.
export GODALI_PYTHON := $(PYTHON)
# Standard-library scripts of the build (gather_licenses.py) run before setup too.
HOSTPY  := $(firstword $(wildcard $(PYTHON) /usr/bin/python3) python3)
BUILD   := build
GPU     ?= auto
LIBJPEG := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libjpeg.so.62 /usr/lib/aarch64-linux-gnu/libjpeg.so.62 /usr/lib64/libjpeg.so.62 /usr/lib/libjpeg.so.62))
NVCC    ?= $(firstword $(wildcard /usr/bin/nvcc /usr/local/cuda/bin/nvcc))
GOSRC   := $(shell find capi cmd codec engine formats imaging internal kernels nvdec nvjpeg ops source -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.cu' 2>/dev/null) go.mod go.sum include/godali.h

ifeq ($(GPU),auto)
  WANT_CUDA := $(if $(NVCC),1,)
else ifeq ($(GPU),1)
  WANT_CUDA := 1
else
  WANT_CUDA :=
endif

# $ORIGIN: the library finds the libjpeg copied next to it on hosts that lack one.
export CGO_LDFLAGS := -Wl,-rpath,$$ORIGIN -Wl,--enable-new-dtags

# Shared-library versioning, as distributions and CMake expect: the file is
# libgodali.so.$(VERSION), its SONAME libgodali.so.$(SOVERSION) (what programs record as
# DT_NEEDED and the loader looks for), and libgodali.so, the name the linker and the
# Python package look for, is a link to it. The same for libgodali_cuda.so.
VERSION   := $(shell sed -n 's/^\#define GODALI_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' include/godali.h | paste -sd.)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))
# $(call so_links,libgodali.so): the SONAME and development links beside the versioned file.
so_links = ln -sfn $(1).$(VERSION) $(BUILD)/$(1).$(SOVERSION) && ln -sfn $(1).$(SOVERSION) $(BUILD)/$(1)
so_flags = -Wl,-soname,$(1).$(SOVERSION)

.PHONY: all setup cpu cuda index test test-go test-c test-python test-torch2 bench bench-remote python wheel test-wheel clean fuzz

all: setup cpu $(if $(WANT_CUDA),cuda)

# `make test` (and test-python) also installs DALI 2.4, the tests' differential oracle
# (scripts/setup.sh); `make bench` does not.
ifneq ($(filter test test-python,$(MAKECMDGOALS)),)
  export GODALI_DALI_ORACLE ?= 1
endif
ifneq ($(filter test test-torch2,$(MAKECMDGOALS)),)
  export GODALI_WITH_TORCH2 ?= 1
endif
# ... and the CUDA toolkit, to build the CUDA flavour and test it on the GPU emulator
# (setup.sh installs it where a GPU is present too; `make bench` elsewhere does not).
ifneq ($(filter test test-cuda test-cuda-emu cuda,$(MAKECMDGOALS)),)
  export GODALI_WITH_CUDA ?= 1
endif

setup:
	@bash scripts/setup.sh

# The targets that do not run setup first (check, test-python, ...) need the project's
# Python: setup makes it where it is missing.
$(PYTHON):
	@echo "make: $(PYTHON) (the project's Python) is missing: running scripts/setup.sh"
	@bash scripts/setup.sh

cpu: $(BUILD)/libgodali.so $(BUILD)/godali-index $(BUILD)/licenses/go/MODULES.txt $(BUILD)/cmake/godaliConfig.cmake

# godali-index (cmd/godali-index): writes the index files of webdataset, TFRecord and
# RecordIO shards; `cmake --install` puts it into <prefix>/bin.
index: $(BUILD)/godali-index

$(BUILD)/godali-index: $(GOSRC)
	@mkdir -p $(BUILD)
	$(GO) build -trimpath -o $@ ./cmd/godali-index

# The licence texts of everything the libraries bundle (libjpeg-turbo, DLPack, the Go
# modules and standard library compiled in), for `cmake --install` and the wheel.
$(BUILD)/licenses/go/MODULES.txt: go.mod go.sum LICENSE THIRD_PARTY_NOTICES.md $(wildcard licenses/*) scripts/gather_licenses.py
	GO=$(GO) $(HOSTPY) scripts/gather_licenses.py $(BUILD)/licenses

# The CMake package config (find_package(godali) with -Dgodali_DIR=<repo>/build/cmake),
# written right after the library so that a C++ trainer can use it after `make`.
CMAKE_CONFIGURE = if command -v cmake >/dev/null; then \
	  cmake -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=Release >$(BUILD)/cmake-configure.log 2>&1 \
	    || { cat $(BUILD)/cmake-configure.log >&2; exit 1; }; \
	  touch $@; \
	else echo "make: cmake not found: skipping the CMake package (run scripts/setup.sh)" >&2; fi
$(BUILD)/cmake/godaliConfig.cmake: $(BUILD)/libgodali.so $(BUILD)/licenses/go/MODULES.txt CMakeLists.txt cmake/godaliConfig.cmake.in cmake/godali.pc.in
	@$(CMAKE_CONFIGURE)

$(BUILD)/libgodali.so: $(BUILD)/libgodali.so.$(VERSION)
	@$(call so_links,libgodali.so)

$(BUILD)/libgodali.so.$(VERSION): $(GOSRC)
	@mkdir -p $(BUILD)
	@rm -f $(BUILD)/libgodali.so # a file of its own before versioning
	CGO_LDFLAGS='$(CGO_LDFLAGS) $(call so_flags,libgodali.so)' $(GO) build -buildmode=c-shared -trimpath -o $@ ./capi
	@rm -f $(basename $@).h
	@$(call so_links,libgodali.so)
	@if [ -n "$(LIBJPEG)" ]; then cp -L $(LIBJPEG) $(BUILD)/libjpeg.so.62.tmp && mv -f $(BUILD)/libjpeg.so.62.tmp $(BUILD)/libjpeg.so.62; fi

# --- CUDA flavour ------------------------------------------------------------------
# Builds against the toolkit's headers and libcuda stub; at run time the driver's
# libcuda.so.1 is used and nvJPEG is dlopen'ed (nvjpeg/), so nothing else is linked.
# gorgonia.org/cu v0.9.6 does not compile against CUDA 13 headers (cuCtxCreate,
# cuMemAdvise, cuMemPrefetchAsync and cuGraph* changed signatures); CUDA 11.8 and 12.x
# headers work, and the result runs on newer drivers (docs/cuda.md).
CUDA_INC   ?= $(patsubst %/cuda.h,%,$(firstword $(wildcard /usr/include/cuda.h /usr/local/cuda/include/cuda.h)))
CUDA_STUBS ?= $(patsubst %/libcuda.so,%,$(firstword $(wildcard /usr/lib/x86_64-linux-gnu/stubs/libcuda.so /usr/lib/aarch64-linux-gnu/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/targets/*/lib/stubs/libcuda.so)))
# Single quotes keep $$ORIGIN (in CGO_LDFLAGS) away from the shell.
CUDA_ENV   := CGO_CFLAGS='$(if $(CUDA_INC),-I$(CUDA_INC)) $(CGO_CFLAGS)' CGO_LDFLAGS='$(CGO_LDFLAGS) $(if $(CUDA_STUBS),-L$(CUDA_STUBS))'
CUDA_TESTS := $(BUILD)/cudatest

.PHONY: cuda-kernels test-cuda-compile test-cuda

cuda: $(BUILD)/libgodali_cuda.so $(BUILD)/cmake/cuda.stamp

# The CMake package again once the CUDA flavour exists, so that `cmake --install` and
# godaliConfig.cmake include it (`make` configures after the CPU flavour first).
$(BUILD)/cmake/cuda.stamp: $(BUILD)/libgodali_cuda.so $(BUILD)/cmake/godaliConfig.cmake
	@$(CMAKE_CONFIGURE)

cuda-kernels:
	@test -n "$(NVCC)" || { echo "make: GPU=1 but no CUDA toolkit (nvcc) found; run scripts/setup.sh" >&2; exit 1; }
	$(MAKE) -C kernels NVCC=$(NVCC) OUT=$(CURDIR)/$(BUILD)/kernels

$(BUILD)/libgodali_cuda.so: $(BUILD)/libgodali_cuda.so.$(VERSION)
	@$(call so_links,libgodali_cuda.so)

$(BUILD)/libgodali_cuda.so.$(VERSION): $(GOSRC) | cuda-kernels
	@mkdir -p $(BUILD)
	@rm -f $(BUILD)/libgodali_cuda.so # a file of its own before versioning
	CGO_CFLAGS='$(if $(CUDA_INC),-I$(CUDA_INC)) $(CGO_CFLAGS)' CGO_LDFLAGS='$(CGO_LDFLAGS) $(if $(CUDA_STUBS),-L$(CUDA_STUBS)) $(call so_flags,libgodali_cuda.so)' \
	  $(GO) build -tags cuda -buildmode=c-shared -trimpath -o $@ ./capi
	@rm -f $(basename $@).h
	@$(call so_links,libgodali_cuda.so)
	@if [ -n "$(LIBJPEG)" ]; then cp -L $(LIBJPEG) $(BUILD)/libjpeg.so.62.tmp && mv -f $(BUILD)/libjpeg.so.62.tmp $(BUILD)/libjpeg.so.62; fi

# Compiles the GPU tests without running them (CI has no GPU) into $(CUDA_TESTS), with
# libjpeg next to them so that the binaries can be carried to a GPU host that lacks it,
# and runs the nvJPEG loader test, which needs the library but no GPU.
test-cuda-compile: cuda-kernels
	$(CUDA_ENV) $(GO) vet -tags cuda ./...
	@mkdir -p $(CUDA_TESTS)
	$(CUDA_ENV) $(GO) test -tags cuda -c -o $(CUDA_TESTS)/ ./internal/cuda/ ./nvjpeg/ ./nvdec/ ./kernels/ ./engine/ ./ops/decoders/ ./ops/readers/ ./ops/image/
	@if [ -n "$(LIBJPEG)" ]; then cp -L $(LIBJPEG) $(CUDA_TESTS)/libjpeg.so.62.tmp && mv -f $(CUDA_TESTS)/libjpeg.so.62.tmp $(CUDA_TESTS)/libjpeg.so.62; fi
	$(CUDA_ENV) $(GO) test -tags 'cuda nodevice' -run 'TestLoad|TestCandidates|TestROIArgs' ./nvjpeg/

# Runs the compiled GPU tests from their package directories (they read test data
# there). Without a GPU each binary prints SKIP and succeeds; GODALI_REQUIRE_GPU=1 makes
# that a failure.
test-cuda: test-cuda-compile
	cd internal/cuda && ../../$(CUDA_TESTS)/cuda.test -test.v $(TESTFLAGS)
	cd nvjpeg && ../$(CUDA_TESTS)/nvjpeg.test -test.v $(TESTFLAGS)
	cd nvdec && ../$(CUDA_TESTS)/nvdec.test -test.v $(TESTFLAGS)
	cd kernels && ../$(CUDA_TESTS)/kernels.test -test.v $(TESTFLAGS)
	cd engine && ../$(CUDA_TESTS)/engine.test -test.v $(TESTFLAGS)
	cd ops/decoders && ../../$(CUDA_TESTS)/decoders.test -test.v $(TESTFLAGS)
	cd ops/readers && ../../$(CUDA_TESTS)/readers.test -test.v -test.run 'GPU' $(TESTFLAGS)
	cd ops/image && ../../$(CUDA_TESTS)/image.test -test.v $(TESTFLAGS)

# --- GPU emulator (tests/gpuemu) ------------------------------------------------------
# CPU stand-ins for libcuda.so.1, libnvidia-ml.so.1 and nvJPEG: streams run their queued
# work in order on threads of their own, device memory has guard pages, and the real
# kernels/kernels.cu is compiled for the host. With them the CUDA flavour's tests and the
# Python suite run where there is no GPU (CI): they check godali's host code, stream
# ordering and kernel arithmetic, never GPU timing or nvJPEG's own accuracy
# (tests/gpuemu/README.md). GODALI_EMU_DELAY_US delays every queued operation, to bring
# out missing waits (GODALI_EMU_DELAY_RANDOM=1: random delays, so streams overtake each
# other); GODALI_EMU_STRICT=1 aborts on the hazards the emulator detects.
GPUEMU  := $(BUILD)/gpuemu
EMU_ENV := LD_LIBRARY_PATH=$(CURDIR)/$(GPUEMU) GODALI_NVJPEG_LIBRARY=$(CURDIR)/$(GPUEMU)/libnvjpeg_emu.so GODALI_NVCUVID_LIBRARY=$(CURDIR)/$(GPUEMU)/libnvcuvid_emu.so GODALI_REQUIRE_GPU=1 GODALI_EMU_STRICT=1

.PHONY: gpuemu test-cuda-emu test-wheel-emu

gpuemu: test-cuda-compile cuda
	$(MAKE) -C tests/gpuemu OUT=$(CURDIR)/$(GPUEMU) CUDA_INC=$(CUDA_INC) all check

test-cuda-emu: gpuemu cpu | $(PYTHON)
	cd internal/cuda && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../../$(CUDA_TESTS)/cuda.test $(TESTFLAGS)
	cd nvjpeg && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../$(CUDA_TESTS)/nvjpeg.test $(TESTFLAGS)
	cd nvjpeg && $(EMU_ENV) GODALI_EMU_HW_DECODER=0 ../$(CUDA_TESTS)/nvjpeg.test $(TESTFLAGS)
	cd nvdec && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../$(CUDA_TESTS)/nvdec.test $(TESTFLAGS)
	cd kernels && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../$(CUDA_TESTS)/kernels.test $(TESTFLAGS)
	cd engine && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../$(CUDA_TESTS)/engine.test $(TESTFLAGS)
	cd ops/decoders && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../../$(CUDA_TESTS)/decoders.test $(TESTFLAGS)
	cd ops/readers && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../../$(CUDA_TESTS)/readers.test -test.run 'GPU' $(TESTFLAGS)
	cd ops/image && $(EMU_ENV) GODALI_EMU_DELAY_US=100 ../../$(CUDA_TESTS)/image.test $(TESTFLAGS)
	cd engine && $(EMU_ENV) GODALI_EMU_HW_DECODER=0 ../$(CUDA_TESTS)/engine.test -test.run 'GPU|Mixed|ResNet' $(TESTFLAGS)
	cd engine && for seed in 1 2 3 4 5 6; do $(EMU_ENV) GODALI_EMU_DELAY_US=20000 GODALI_EMU_DELAY_RANDOM=1 GODALI_EMU_SEED=$$seed ../$(CUDA_TESTS)/engine.test -test.run 'Gather|ResNet50GPU' $(TESTFLAGS) || exit 1; done
	cd engine && for seed in 1 2 3; do $(EMU_ENV) GODALI_EMU_DELAY_US=5000 GODALI_EMU_DELAY_RANDOM=1 GODALI_EMU_SEED=$$seed ../$(CUDA_TESTS)/engine.test -test.run 'TestGPU(Reset|Close|Ragged|Skip|Checkpoint)' $(TESTFLAGS) || exit 1; done
	$(EMU_ENV) GODALI_FLAVOUR=cuda PYTHONPATH=$(CURDIR)/python $(PYTHON) -m pytest -q python/tests

# `make test` (and CI, .ci/run) turn a test's missing reference (PIL, FFmpeg, cv2, scipy,
# torch, lmdb, the corpus...: scripts/setup.sh installs them all) into a failure instead
# of a skip (internal/testref, python/tests/conftest.py).
test: export GODALI_STRICT_REFERENCES = 1
test: all test-go test-c test-python test-torch2 test-wheel $(if $(WANT_CUDA),test-cuda test-cuda-emu test-wheel-emu)

# --- The edit loop ----------------------------------------------------------------------
# `make check`: go vet, the Go tests in -short mode (long reference runs and fuzz-seed
# sweeps skip themselves with testing.Short) and the Python tests not marked slow, on
# the CPU flavour only: a few minutes where `make test` takes tens (benchmarks/RESULTS.md
# has the figure). Narrow it to one operator family or one operator:
#   make check FAMILY=image     ./ops/image's Go tests and the Python tests marked image
#                               (families: the ops/ packages, and api (engine, capi),
#                               torch and tools: python/tests/conftest.py FAMILIES)
#   make check OP=resize        Go tests of ./ops/... and imaging whose names contain the
#                               operator's (any case, '_' ignored) and pytest -k resize
# Missing references skip here; GODALI_STRICT_REFERENCES=1 makes them failures.
FAMILY ?=
OP     ?=
ifneq ($(OP),)
  CHECK_GO_PKGS := ./ops/... ./imaging/...
  CHECK_GO_RUN  := -run '(?i)$(subst _,,$(OP))'
  CHECK_PY_SEL  := -k '$(OP)'
else ifneq ($(FAMILY),)
  CHECK_FAMILIES := $(filter-out all internal,$(notdir $(patsubst %/,%,$(wildcard ops/[a-z]*/)))) api torch tools
  CHECK_GO_PKGS := $(if $(filter-out $(CHECK_FAMILIES),$(FAMILY)),$(error FAMILY=$(FAMILY): families are $(CHECK_FAMILIES)))$(if $(wildcard ops/$(FAMILY)),./ops/$(FAMILY)/...,$(if $(filter api,$(FAMILY)),./engine/... ./capi/...))
  CHECK_GO_RUN  :=
  CHECK_PY_SEL  := -m 'family_$(FAMILY) and not slow'
else
  CHECK_GO_PKGS := ./...
  CHECK_GO_RUN  :=
  CHECK_PY_SEL  :=
endif

.PHONY: check
check: cpu | $(PYTHON)
	$(if $(CHECK_GO_PKGS),$(GO) vet $(CHECK_GO_PKGS),@echo "check: FAMILY=$(FAMILY) has no Go packages")
	$(if $(CHECK_GO_PKGS),$(GO) test -short $(CHECK_GO_RUN) $(CHECK_GO_PKGS))
	PYTHONPATH=$(CURDIR)/python $(PYTHON) -m pytest -q -p no:cacheprovider $(if $(CHECK_PY_SEL),$(CHECK_PY_SEL),-m 'not slow') python/tests

test-go: setup
	$(GO) vet ./...
	$(GO) test ./...

# Fuzz targets for every parser a user's bytes reach: the image decoders, pipeline
# descriptions, checkpoints, LMDB databases, and what remote servers answer (HTTP
# responses, S3 listings). `make fuzz` runs each for FUZZTIME; `go test` (test-go)
# runs their seed corpora and the crashers kept under */testdata/fuzz.
FUZZTIME     ?= 30s
FUZZPARALLEL ?= 1
FUZZ_TARGETS := codec:FuzzDecode codec:FuzzJPEG codec:FuzzPNG codec:FuzzBMP codec:FuzzTIFF \
                codec:FuzzWebP codec:FuzzPNM codec:FuzzGIF \
                engine:FuzzPipelineDescription engine:FuzzCheckpointRestore formats/lmdb:FuzzLMDB \
                source/remote:FuzzRemoteResponse source/remote:FuzzS3Listing imaging:FuzzWindowFilters

fuzz: setup
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz ./$$pkg $$name for $(FUZZTIME)"; \
	  $(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s -parallel $(FUZZPARALLEL) || exit 1; \
	done

test-c: cpu
	cmake --build $(BUILD)/cmake -j2
	ctest --test-dir $(BUILD)/cmake --output-on-failure
	@sed -n 's|^-- \(examples/cpp_train: .*\)|ctest: \1|p' $(BUILD)/cmake-configure.log

test-python: cpu | $(PYTHON)
	PYTHONPATH=$(CURDIR)/python $(PYTHON) -m pytest -q python/tests
	cd tools && PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tools $(PYTHON) -m pytest -q tests
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tests/compat $(PYTHON) -m pytest -q tests/compat

# docs/operators-reference.md (every operator, from the schemas) and docs/not-supported.md
# (the DALI names godali refuses), written by scripts/gen_operator_reference.py;
# python/tests/test_operator_reference.py fails when they are stale.
.PHONY: operator-reference
operator-reference: cpu | $(PYTHON)
	PYTHONPATH=$(CURDIR)/python $(PYTHON) scripts/gen_operator_reference.py

# DALI 2.4's public surface against godali's (tests/compat/surface.py): re-dumps DALI's
# names and schemas when DALI is installed (GODALI_DALI_ORACLE=1 scripts/setup.sh puts it
# in $(DALIDIR)), then regenerates docs/dali-parity.md and the baseline that
# tests/compat/test_surface.py keeps from shrinking.
DALIDIR ?= /usr/local/lib/godali-dali
.PHONY: compat-report
compat-report: cpu | $(PYTHON)
	@if [ -f $(DALIDIR)/nvidia/dali/__init__.py ]; then \
	  PYTHONPATH=$(DALIDIR) $(PYTHON) tests/compat/surface.py dump-dali tests/compat/dali_surface.json; \
	else echo "compat-report: DALI not installed in $(DALIDIR): using the stored tests/compat/dali_surface.json"; fi
	PYTHONPATH=$(CURDIR)/python $(PYTHON) tests/compat/surface.py report tests/compat/dali_surface.json docs/dali-parity.md tests/compat/parity_baseline.json

# DALI 2.4 as the differential oracle (tests/compat/, docs/operators.md "DALI 2.4 as the
# oracle"): `make oracle` runs what `make test` runs of it (oracle.py's hand-written
# cases, propsweep.py's quick property sweep, pipesweep.py's pipeline scenarios);
# `make oracle-long` runs the property sweep at ORACLE_N cases (ORACLE_SEED: another
# seed) through the same rules, and prints every disagreement; `make oracle-schemas`
# re-dumps the schemas the sweep draws from (tests/compat/oracle_schemas.json).
ORACLE_N ?= 4000
ORACLE_SEED ?= 2029
ORACLE_TESTS := tests/compat/test_oracle.py tests/compat/test_propsweep.py tests/compat/test_pipesweep.py
.PHONY: oracle oracle-long oracle-schemas
oracle: cpu | $(PYTHON)
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tests/compat $(PYTHON) -m pytest -q $(ORACLE_TESTS)
oracle-long: cpu | $(PYTHON)
	ORACLE_N=$(ORACLE_N) ORACLE_SEED=$(ORACLE_SEED) PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tests/compat \
	  $(PYTHON) -m pytest -q -s tests/compat/test_propsweep.py
oracle-schemas: cpu | $(PYTHON)
	PYTHONPATH=$(DALIDIR) $(PYTHON) tests/compat/propsweep.py dump dali tests/compat/oracle_schemas.json
	PYTHONPATH=$(CURDIR)/python $(PYTHON) tests/compat/propsweep.py dump godali tests/compat/oracle_schemas.json

# enable_conditionals against DALI 2.4 on LONG generated programs (tests/compat/cond_oracle.py;
# `make test` runs the QUICK ones through tests/compat/test_cond_oracle.py).
.PHONY: oracle-conditionals
oracle-conditionals: cpu | $(PYTHON)
	rm -rf $(BUILD)/cond-oracle
	PYTHONPATH=$(DALIDIR) $(PYTHON) tests/compat/cond_oracle.py run dali $(BUILD)/cond-oracle/dali --long
	PYTHONPATH=$(CURDIR)/python $(PYTHON) tests/compat/cond_oracle.py run godali $(BUILD)/cond-oracle/godali --long
	$(PYTHON) tests/compat/cond_oracle.py compare $(BUILD)/cond-oracle/dali $(BUILD)/cond-oracle/godali --long

# DALI 2.4's CPU image decoders against godali's over the real-world image corpus, the
# bench's photographs and generated files (tests/compat/decsweep.py; needs DALI and
# nvImageCodec, which scripts/setup.sh installs for GODALI_DALI_ORACLE=1): prints every
# case that differs and the counts per configuration (docs/operators.md, "DALI's image
# decoders side by side"); `make test` runs the quick sweep (tests/compat/test_decsweep.py).
.PHONY: oracle-decoders
oracle-decoders: cpu | $(PYTHON)
	rm -rf $(BUILD)/decsweep
	LD_LIBRARY_PATH=$(DALIDIR)/nvidia/nvimgcodec PYTHONPATH=$(DALIDIR):$(CURDIR)/tests/compat $(PYTHON) tests/compat/decsweep.py run dali $(BUILD)/decsweep/dali
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tests/compat $(PYTHON) tests/compat/decsweep.py run godali $(BUILD)/decsweep/godali
	$(PYTHON) tests/compat/decsweep.py compare $(BUILD)/decsweep/dali $(BUILD)/decsweep/godali

# The torch-facing tests again, under a current torch 2.x / torchvision / Pillow / numpy
# from PyPI (scripts/torch2-requirements.txt), in the venv that scripts/setup.sh makes
# outside the repository; test-python runs them (with everything else) under Debian's
# torch 1.13. The CUDA-device tests among them skip without a GPU, as in test-python; of
# the docs' snippets, those of docs/pytorch.md run here; torchrun runs in
# test_torch_install's two-rank script (test_distributed.py would add 25 s for little more).
TORCH2_VENV  ?= $(or $(GODALI_TORCH2_VENV),/usr/local/lib/godali-torch2)
TORCH2_TESTS := $(addprefix python/tests/,test_torch_dropin.py test_torch_install.py \
                test_torch_gpu.py test_pytorch.py test_tv_exact.py test_tv_autoaug.py \
                test_dlpack.py test_outputs.py test_doc_snippets.py test_torch_faithful.py \
                test_torch_epochs.py test_torch_presets.py)

test-torch2: cpu
	@if [ ! -f $(TORCH2_VENV)/godali-requirements.txt ]; then \
	  if [ "$(GODALI_NO_TORCH2)" = 1 ]; then echo "make: test-torch2 skipped (GODALI_NO_TORCH2=1: no torch 2 venv)"; exit 0; fi; \
	  echo "make: no torch 2 venv at $(TORCH2_VENV): run scripts/setup.sh (or set GODALI_NO_TORCH2=1)" >&2; exit 1; \
	fi; \
	$(TORCH2_VENV)/bin/python -c 'import sys, torch, torchvision, PIL, numpy; print("test-torch2: Python %s, torch %s, torchvision %s, Pillow %s, numpy %s" % (sys.version.split()[0], torch.__version__, torchvision.__version__, PIL.__version__, numpy.__version__))' && \
	PYTHONPATH=$(CURDIR)/python $(TORCH2_VENV)/bin/python -m pytest -q $(TORCH2_TESTS) \
	  -k 'not test_snippet_runs or pytorch.md'

# --- The wheel's libraries: built for an old glibc ------------------------------------
# A library linked on this machine asks for its glibc's newest symbol versions (Debian
# 12: 2.34+), which makes the wheel manylinux_2_34 and uninstallable on RHEL/Rocky 8
# (2.28), Ubuntu 20.04 (2.31) and many clusters. The wheel's copies are therefore built
# apart, in $(WHEEL_LIBS), by zig's clang (PyPI's ziglang; scripts/floor-cc.sh) against
# glibc $(GLIBC_FLOOR)'s headers and symbols. That compiler sees no host header or
# library except the few linked here, gathered as links in $(FLOOR): libjpeg's headers
# and library (libjpeg.so.62 itself needs only GLIBC_2.14), FFmpeg's headers, and the
# CUDA toolkit's headers and driver stub. The CUDA flavour keeps its dependency on libcuda.so.1 by name: the
# wheel never carries it (auditwheel --exclude), so the host's driver library is loaded.
# -z lazy: zig links with BIND_NOW by default, which would make the CUDA flavour fail to
# load on the NVML symbols that go-nvml binds only once it has dlopen'ed the driver's
# libnvidia-ml (and that older drivers lack); GNU ld's default is lazy too.
GLIBC_FLOOR ?= 2.28
WHEEL_LIBS  := $(BUILD)/manylinux
FLOOR       := $(WHEEL_LIBS)/floor
FLOOR_CC    := $(CURDIR)/scripts/floor-cc.sh
JPEG_H      := $(firstword $(wildcard /usr/include/jpeglib.h /usr/local/include/jpeglib.h))
JCONFIG_H   := $(firstword $(wildcard /usr/include/*-linux-gnu/jconfig.h /usr/include/jconfig.h /usr/local/include/jconfig.h))
# FFmpeg's headers only (codec/video dlopens the host's libraries at run time).
FFMPEG_HDRS := $(wildcard $(addprefix $(patsubst %/libavcodec/avcodec.h,%,$(firstword $(wildcard /usr/include/*-linux-gnu/libavcodec/avcodec.h /usr/include/libavcodec/avcodec.h)))/,libavcodec libavformat libavutil libswscale libswresample))
FLOOR_ENV    = GODALI_GLIBC_FLOOR=$(GLIBC_FLOOR) GODALI_FLOOR_PYTHON=$(PYTHON) \
               CC='$(FLOOR_CC) cc' CXX='$(FLOOR_CC) c++' \
               CGO_CFLAGS='-I$(CURDIR)/$(FLOOR)/include -O2' \
               CGO_LDFLAGS='$(CGO_LDFLAGS) -L$(CURDIR)/$(FLOOR)/lib -Wl,-z,lazy'
# The CUDA toolkit's headers (cuda.h, nvjpeg.h and what they include): Debian installs
# them into /usr/include beside glibc's, so each header and folder of the packages that
# own cuda.h and nvjpeg.h is linked alone; a toolkit folder of its own (/usr/local/cuda)
# is linked whole. The stub libcuda.so gives the link its libcuda.so.1 dependency.
FLOOR_CUDA_LINKS = \
	if [ "$(CUDA_INC)" = /usr/include ] && command -v dpkg >/dev/null; then \
	  hdrs=$$(dpkg -L $$(dpkg -S /usr/include/cuda.h /usr/include/nvjpeg.h | cut -d: -f1 | sort -u) | grep '^/usr/include/[^/]*$$'); \
	else hdrs=$$(ls -d $(CUDA_INC)/*); fi; \
	ln -s $$hdrs $(FLOOR)/include/ && ln -s $(CUDA_STUBS)/libcuda.so $(FLOOR)/lib/libcuda.so
# Shared libraries a wheel must never carry: the NVIDIA driver's (they must match the
# host's kernel module) and the CUDA toolkit's (nvJPEG is dlopen'ed from the host).
WHEEL_EXCLUDE := libcuda.so.1 libnvidia-ml.so.1

.PHONY: wheel-libs floor-toolchain

$(FLOOR)/.ready: Makefile scripts/floor-cc.sh
	@test -n "$(LIBJPEG)" -a -n "$(JPEG_H)" -a -n "$(JCONFIG_H)" || { echo "make: libjpeg62-turbo-dev is missing (scripts/setup.sh installs it)" >&2; exit 1; }
	@$(PYTHON) -m ziglang version >/dev/null 2>&1 || { echo "make: the wheel is compiled by zig's clang: $(PYTHON) -m pip install ziglang==0.14.1 (scripts/setup.sh does)" >&2; exit 1; }
	rm -rf $(FLOOR) && mkdir -p $(FLOOR)/include $(FLOOR)/lib
	ln -s $(dir $(JPEG_H))jpeglib.h $(dir $(JPEG_H))jerror.h $(dir $(JPEG_H))jmorecfg.h $(JCONFIG_H) $(FLOOR)/include/
	ln -s $(LIBJPEG) $(FLOOR)/lib/libjpeg.so
	@test -n "$(FFMPEG_HDRS)" || { echo "make: FFmpeg's headers are missing (libavcodec-dev ...; scripts/setup.sh installs them)" >&2; exit 1; }
	ln -s $(FFMPEG_HDRS) $(FLOOR)/include/
	$(if $(WANT_CUDA),$(FLOOR_CUDA_LINKS))
	@touch $@

floor-toolchain: $(FLOOR)/.ready

$(WHEEL_LIBS)/libgodali.so: $(GOSRC) $(FLOOR)/.ready Makefile
	$(FLOOR_ENV) $(GO) build -buildmode=c-shared -trimpath -o $@ ./capi
	@rm -f $(WHEEL_LIBS)/libgodali.h

$(WHEEL_LIBS)/libgodali_cuda.so: $(GOSRC) $(FLOOR)/.ready Makefile | cuda-kernels
	$(FLOOR_ENV) $(GO) build -tags cuda -buildmode=c-shared -trimpath -o $@ ./capi
	@rm -f $(WHEEL_LIBS)/libgodali_cuda.h

wheel-libs: $(WHEEL_LIBS)/libgodali.so $(if $(WANT_CUDA),$(WHEEL_LIBS)/libgodali_cuda.so)

# Copies the wheel's libraries, libjpeg and the licences of everything they bundle into
# the Python package, for `pip install ./python`.
python: setup wheel-libs $(BUILD)/licenses/go/MODULES.txt
	rm -rf python/godali/lib && mkdir -p python/godali/lib
	cp $(WHEEL_LIBS)/libgodali*.so python/godali/lib/
	cp -L $(LIBJPEG) python/godali/lib/libjpeg.so.62
	cp -r $(BUILD)/licenses python/godali/lib/licenses

# dist/godali-*-py3-none-manylinux_2_28_*.whl (or an older tag): the package repaired by
# auditwheel, which checks the libraries' symbol versions against the manylinux policy.
# The driver's libraries are excluded from grafting (WHEEL_EXCLUDE); tests/wheel_check.py
# checks that nothing of the driver or the toolkit, nor a too-new glibc symbol, got in.
WHEEL_TMP  := $(BUILD)/wheel
WHEEL_PLAT := manylinux_$(subst .,_,$(GLIBC_FLOOR))_$(shell uname -m)
wheel: python
	rm -rf $(WHEEL_TMP) python/build && mkdir -p $(WHEEL_TMP) dist
	$(PYTHON) -m pip wheel --no-deps --no-build-isolation -w $(WHEEL_TMP) ./python
	rm -f dist/godali-*.whl
	$(PYTHON) -m auditwheel repair --plat $(WHEEL_PLAT) $(foreach x,$(WHEEL_EXCLUDE),--exclude $(x)) \
	  -w dist $(WHEEL_TMP)/godali-*.whl
	@ls -l dist/godali-*.whl

# Installs the wheel into a fresh venv, checks what it carries (tests/wheel_check.py: no
# driver or toolkit library, manylinux tag and every bundled library's GLIBC symbols at
# most $(GLIBC_FLOOR), the licences of everything bundled) and runs a small pipeline into
# a torch tensor (tests/wheel_smoke.sh: why the venv takes torch from the system).
test-wheel: wheel
	GODALI_GLIBC_FLOOR=$(GLIBC_FLOOR) bash tests/wheel_smoke.sh dist/godali-*.whl

# The same, then the wheel's CUDA flavour on the GPU emulator's libcuda.so.1 standing for
# the host driver's: it must be that one in the process's maps (never a copy from the
# wheel), and a pipeline with a mixed-device decoder must run on it.
test-wheel-emu: wheel gpuemu
	GODALI_GLIBC_FLOOR=$(GLIBC_FLOOR) GODALI_WHEEL_EMU=$(CURDIR)/$(GPUEMU) bash tests/wheel_smoke.sh dist/godali-*.whl

bench: all
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tools $(PYTHON) -m godali_tools bench $(ARGS)

# Webdataset shards local vs s3:// (moto) and HTTP (nginx) behind godali-faultproxy
# with 20 and 50 ms added per request; it starts and stops its own loopback servers.
bench-remote: setup cpu
	$(GO) build -o $(BUILD)/godali-faultproxy ./source/remote/cmd/godali-faultproxy
	PYTHONPATH=$(CURDIR)/python:$(CURDIR)/tools $(PYTHON) -m godali_tools bench-remote $(ARGS)

clean:
	rm -rf $(BUILD) python/godali/lib python/build dist
