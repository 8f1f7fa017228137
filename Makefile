# zerotrain build. `make` builds the CPU binary; `make test` runs every test;
# `make demo` trains a small GPT-2 on the embedded default text.
# Dependencies come from Debian packages (scripts/setup.sh, run once by the stamp below).

CC       ?= gcc
MPICC    ?= mpicc
BUILD    ?= build
PYTHON   ?= /usr/bin/python3

SETUP    ?= bash scripts/setup.sh

# MPI: take the compile and link flags from the wrapper so plain gcc builds everything.
# They are read when a recipe runs, never when this file is parsed: on a fresh machine the
# wrapper exists only once the setup stamp below has installed MPI (tests/sh/fresh_make.sh).
# The rules for the two files ask the wrapper once; recursive `=` reads them late.
MPI_CFLAGS = $(file <$(BUILD)/mpi.cflags)
MPI_LIBS   = $(file <$(BUILD)/mpi.libs)

# The floors (docs/design.md, "Floors"): every folder with sources is on the include path, and
# includes name files by their base name (scripts/check_floors.py keeps the names unique and
# the includes pointing down).
SRC_DIRS := src/core kernels kernels/cpu kernels/cuda comm optim src/parallel src/tokenizer \
            src/model src/formats src/planner src/checkpoint src/app
INCLUDES := $(addprefix -I,$(SRC_DIRS))

# No fast-math anywhere: the tests compare this arithmetic against references.
# -fno-math-errno only drops errno writes from sqrtf & co. (results bit-identical), which
# lets gcc vectorise the AdamW loop (measured 439 -> 83 ms per step on gpt2 124M).
CFLAGS   ?= -O2 -g -march=native
CFLAGS   += -fno-math-errno -std=c11 -Wall -Wextra -Wpointer-arith -Wno-unused-parameter -fopenmp -D_GNU_SOURCE \
            -MMD -MP $(INCLUDES) $(MPI_CFLAGS)
# oneDNN (-ldnnl): the bf16 GEMM on CPUs with bf16 instructions (kernels/cpu/gemm_bf16_cpu.c).
LDLIBS   += $(MPI_LIBS) -lopenblas -ldnnl -lcjson -lxxhash -lm -fopenmp

# kernels/cuda/backend_cuda.c and comm/comm_nccl.c need the CUDA toolkit: `make cuda` only.
CUDA_C_SRC := kernels/cuda/backend_cuda.c kernels/cuda/bf16_ops_cuda.c kernels/cuda/gemm_lt_cuda.c \
              comm/comm_nccl.c
MAIN_SRC := src/app/main.c
LIB_SRC  := $(filter-out $(MAIN_SRC) $(CUDA_C_SRC),$(wildcard $(addsuffix /*.c,$(SRC_DIRS))))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
DEPS_OK  := $(BUILD)/.deps-ok

.PHONY: all test demo data clean setup bench cuda test-cuda
all: $(BUILD)/zerotrain $(BUILD)/zt_tests $(BUILD)/libzt_faults.so data

setup: $(DEPS_OK)
$(DEPS_OK): scripts/setup.sh
	$(SETUP)
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/mpi.cflags: $(DEPS_OK)
	$(MPICC) --showme:compile > $@.tmp || { echo "make: '$(MPICC) --showme:compile' failed: is Open MPI installed (make setup)?"; exit 1; }
	mv $@.tmp $@
$(BUILD)/mpi.libs: $(DEPS_OK)
	$(MPICC) --showme:link > $@.tmp || { echo "make: '$(MPICC) --showme:link' failed: is Open MPI installed (make setup)?"; exit 1; }
	mv $@.tmp $@

# Everything that compiles waits for the system packages and the MPI flags.
$(BUILD)/%.o: %.c | $(DEPS_OK) $(BUILD)/mpi.cflags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libzt.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/zerotrain: $(BUILD)/src/app/main.o $(BUILD)/libzt.a | $(BUILD)/mpi.libs
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
	ln -sf $(BUILD)/zerotrain zerotrain

# zerotrain's version (src/app/version.c: the log's first record names it): `git describe`
# of the checkout being built, "unknown" outside one. The stamp is rewritten only when the
# version changes, so version.o (and the binaries) rebuild then and only then.
ZT_VERSION := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo '$(ZT_VERSION)' | cmp -s - $@ || echo '$(ZT_VERSION)' > $@
$(BUILD)/src/app/version.o: $(BUILD)/version.stamp
$(BUILD)/src/app/version.o: CFLAGS += -DZT_VERSION='"$(ZT_VERSION)"'
.PHONY: FORCE
FORCE:

# The test runner's name table is generated from the ZT_TEST(name) definitions.
$(BUILD)/test_table.h: $(TEST_SRC) tests/gen_table.sh
	@mkdir -p $(BUILD)
	bash tests/gen_table.sh $(TEST_SRC) > $@

$(BUILD)/tests/main.o: $(BUILD)/test_table.h
$(BUILD)/tests/%.o: CFLAGS += -I$(BUILD)

$(BUILD)/zt_tests: $(TEST_OBJ) $(BUILD)/libzt.a | $(BUILD)/mpi.libs
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Fault injection for the shell tests (LD_PRELOAD), so no test hook sits in the program.
$(BUILD)/libzt_faults.so: tests/preload/faults.c | $(DEPS_OK)
	@mkdir -p $(BUILD)
	$(CC) -O2 -g -std=c11 -Wall -Wextra -fPIC -shared -o $@ $< -ldl

# The embedded default data: byte-level tokens of the GPL-3 text every Debian ships.
DEFAULT_TEXT ?= /usr/share/common-licenses/GPL-3
data: $(BUILD)/data/default_train.bin
$(BUILD)/data/default_train.bin: $(BUILD)/zerotrain
	@mkdir -p $(BUILD)/data
	$(BUILD)/zerotrain prepare --text $(DEFAULT_TEXT) --out $(BUILD)/data/default_train.bin \
	    --val-out $(BUILD)/data/default_val.bin --val-frac 0.1

test: all
	PYTHON=$(PYTHON) bash tests/run.sh

# The design card's layout on one machine: 8 ranks = 4 pipeline stages x 2 tensor-parallel
# ranks, ZeRO-1 (dp = 1 here: add ranks for more dp). One OpenMP thread per rank.
MPIRUN ?= mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
demo: all
	OMP_NUM_THREADS=1 $(MPIRUN) -x OMP_NUM_THREADS -np 8 $(BUILD)/zerotrain train --zero 1 --pp 4 --tp 2 \
	    --micro-batch 2 --grad-accum 4 --steps 300 --lr 1e-3 --log $(BUILD)/demo.jsonl

# Benchmarks (bench/RESULTS.md): `make bench` builds them; the bench/*.sh scripts run them.
bench: $(BUILD)/comm_bw $(BUILD)/gemm_bf16
$(BUILD)/comm_bw: bench/comm_bw.c $(BUILD)/libzt.a | $(BUILD)/mpi.cflags $(BUILD)/mpi.libs
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/gemm_bf16: bench/gemm_bf16.c $(BUILD)/libzt.a | $(BUILD)/mpi.cflags $(BUILD)/mpi.libs
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- The CUDA build (`make cuda`): build/zerotrain-cuda and build/zt_tests_cuda ----
# The same library and programs plus the CUDA backend (kernels/cuda/*.cu by nvcc,
# kernels/cuda/backend_cuda.c by gcc). Linked ahead of libzt.a, backend_cuda.o's definitions
# replace backend_nocuda.c's "built without CUDA" ones. Plain `make` never needs nvcc.
# ZT_CUDA_EXACT=1: no FMA contraction in device code (-fmad=false), so arithmetic-only
# kernels match the CPU bit for bit. ZT_CUDA_DEBUG=1: wait for and check every kernel.
NVCC      ?= $(or $(shell command -v nvcc 2>/dev/null),/usr/local/cuda/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O2 -g -lineinfo
NVCCFLAGS += -std=c++17 $(CUDA_ARCH) -MMD -MP $(INCLUDES) \
             -Xcompiler -Wall,-Wno-unused-parameter,-fno-math-errno \
             $(if $(ZT_CUDA_EXACT),-fmad=false) $(if $(ZT_CUDA_DEBUG),-DZT_CUDA_DEBUG)
CUDA_CFLAGS := -I$(CUDA_HOME)/include $(if $(ZT_CUDA_DEBUG),-DZT_CUDA_DEBUG)
CUDA_LIBS   := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcublas -lcublasLt -lcudart \
               -lstdc++
CUDA_CU   := $(wildcard kernels/cuda/*.cu)
CUDA_OBJ  := $(CUDA_CU:%.cu=$(BUILD)/cuda/%.o) $(CUDA_C_SRC:%.c=$(BUILD)/cuda/%.o)

cuda: $(BUILD)/zerotrain-cuda $(BUILD)/zt_tests_cuda

# On a machine with a GPU: the CUDA tests (each CUDA op against the CPU one, the shared
# math, the 20-step training comparison). They SKIP where no GPU opens.
test-cuda: cuda all
	ZT_TESTS=$(BUILD)/zt_tests_cuda ONLY=cuda PYTHON=$(PYTHON) bash tests/run.sh

$(BUILD)/cuda/%.o: %.cu | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@
$(BUILD)/cuda/%.o: %.c | $(DEPS_OK) $(BUILD)/mpi.cflags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CUDA_CFLAGS) -c $< -o $@

$(BUILD)/zerotrain-cuda: $(BUILD)/src/app/main.o $(CUDA_OBJ) $(BUILD)/libzt.a | $(BUILD)/mpi.libs
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CUDA_LIBS)
$(BUILD)/zt_tests_cuda: $(TEST_OBJ) $(CUDA_OBJ) $(BUILD)/libzt.a | $(BUILD)/mpi.libs
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(CUDA_LIBS)

clean:
	rm -rf $(BUILD) zerotrain

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/src/app/main.d $(CUDA_OBJ:.o=.d)
