# proftrace: probes (bpf/) -> ABI (bpf/proftrace.h) -> stream/aggregator (user/)
# -> reports. All build outputs go to $(OUTPUT); `make V=1` shows commands.

BUILD ?= release
ifeq ($(BUILD),asan)
OUTPUT := .output-asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
BIN := $(OUTPUT)/proftrace
else
OUTPUT := .output
SANFLAGS :=
BIN := proftrace
endif

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PYTHON ?= /usr/bin/python3
ARCH := x86

VERSION := 0.1.0
CFLAGS ?= -g -O2
CFLAGS += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	  -MMD -MP -DPT_VERSION='"$(VERSION)"' $(SANFLAGS)
# Includes name their folder: "aggregate/agg.h", "bpf/proftrace.h".
INCLUDES := -I$(OUTPUT) -I. -Iuser
LDLIBS := -lbpf -ldw -lelf -lz -lcjson -lm -lcapstone -lstdc++ -lprotobuf-c
LDFLAGS += $(SANFLAGS)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

# user/: one folder per subsystem, in data-flow order (user/README.md).
USER_DIRS := util config attach python sample gpu aggregate report run cli
USER_SRCS := user/main.c $(foreach d,$(USER_DIRS),$(wildcard user/$(d)/*.c))
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
# The program is main.c; every module, run/ included, goes into a library
# the unit tests link against.
BIN_OBJS := $(OUTPUT)/user/main.o
LIB_OBJS := $(filter-out $(BIN_OBJS),$(USER_OBJS))
LIBPT := $(OUTPUT)/libpt.a

# tests/unit mirrors user/ (and shim/): one driver per module, built flat
# into $(OUTPUT)/tests.
UNIT_SRCS := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(patsubst %.c,$(OUTPUT)/tests/%,$(notdir $(UNIT_SRCS)))

# CUPTI shim (shim/): built when CUDA's CUPTI headers and library are there.
CUDA_HOME ?= /usr/local/cuda
CUPTI_H := $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h $(CUDA_HOME)/extras/CUPTI/include/cupti.h))
CUPTI_SO := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/lib/libcupti.so \
	    $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so $(CUDA_HOME)/targets/*/lib/libcupti.so))
ifneq ($(and $(CUPTI_H),$(CUPTI_SO)),)
CUPTI_INCDIR := $(patsubst %/,%,$(dir $(CUPTI_H)))
CUPTI_LIBDIR := $(patsubst %/,%,$(dir $(CUPTI_SO)))
SHIM := $(OUTPUT)/libproftrace_cupti.so
else
SHIM :=
UNIT_BINS := $(filter-out $(OUTPUT)/tests/test_shim,$(UNIT_BINS))
endif

VICTIM_SRCS := $(wildcard tests/victims/*.c)
VICTIMS := $(patsubst tests/victims/%.c,$(OUTPUT)/victims/%,$(filter-out tests/victims/lib%.c,$(VICTIM_SRCS))) \
	   $(OUTPUT)/victims/libvictim_dl.so $(OUTPUT)/victims/libinject_probe.so \
	   $(OUTPUT)/victims/libinject_slow.so $(OUTPUT)/victims/victim_faults_rp
# C++ victims (demangled names): tests/victims/*.cc
VICTIMS += $(patsubst tests/victims/%.cc,$(OUTPUT)/victims/%,$(wildcard tests/victims/*.cc))

FIXTURES := $(OUTPUT)/fixtures/elf_pie $(OUTPUT)/fixtures/elf_nopie \
	    $(OUTPUT)/fixtures/elf_stripped $(OUTPUT)/fixtures/libelf_fixture.so \
	    $(OUTPUT)/fixtures/elf_static $(OUTPUT)/fixtures/unwind_fixture \
	    $(OUTPUT)/fixtures/unwind_fixture_dyn $(OUTPUT)/fixtures/libunwind_fixture.so \
	    $(OUTPUT)/fixtures/libproftrace_unwind_fixture.so

# Helpers the integration tests run (checkers fed by a live interpreter).
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOLS := $(patsubst tests/tools/%.c,$(OUTPUT)/tests-tools/%,$(TOOL_SRCS))

BENCH_SRCS := $(wildcard bench/*.c)
# shim_bench links the shim and libcupti: only when the shim is built.
BENCH_BINS := $(patsubst bench/%.c,$(OUTPUT)/bench/%,$(filter-out bench/shim_bench.c,$(BENCH_SRCS))) \
	      $(if $(SHIM),$(OUTPUT)/bench/shim_bench)

.PHONY: all deps test unit integration asan bench demo clean fuzz gpu-check format install \
	uninstall test-loaded
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BIN)

deps:
	@./scripts/deps.sh

# reformat every C file we wrote (make test checks it: scripts/check-format.sh)
format:
	git ls-files '*.c' '*.h' | grep -v '\.pb-c\.[ch]$$' | xargs clang-format -i

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/tests $(OUTPUT)/victims $(OUTPUT)/fixtures $(OUTPUT)/bench \
$(OUTPUT)/tests-tools:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) \
		$(if $(shell grep -l 'struct bpf_task_work {' $(OUTPUT)/vmlinux.h),-DPT_VMLINUX_TASK_WORK) \
		-I$(OUTPUT) -Ibpf -I/usr/include/x86_64-linux-gnu -c $< -o $@
	$(Q)llvm-strip -g $@ # DWARF is not needed at run time; BTF stays

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# Objects that include a skeleton must wait for it.
$(USER_OBJS): | $(SKELS)

$(OUTPUT)/user/%.o: user/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

$(LIBPT): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN): $(BIN_OBJS) $(LIBPT)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# ---- unit tests (cmocka): one driver per module, linked with libpt.a ----
# (test_shim, test_gpuring, SHIM_RING_TESTS and test_pyagent have rules of
# their own, below)
# Tests whose children make the CUPTI shim's segment with the shim's own
# writer (no CUPTI): --metrics with a GPU stream, a process's GPU stream.
SHIM_RING_TESTS := tests/unit/run/test_metrics.c tests/unit/run/test_gpustream.c
define unit_rule
$(OUTPUT)/tests/$(basename $(notdir $(1))): $(1) $(LIBPT) | $(OUTPUT)/tests
	$$(call msg,TEST-CC,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$(INCLUDES) $$(LDFLAGS) $$< $$(LIBPT) $$(LDLIBS) -lcmocka -o $$@
endef
# Tests of what run/ writes into BPF's maps, without BPF: attach.c's map
# writes named in MAP_WRAPS are wrapped (-Wl,--wrap: the BPF side is the
# I/O here), and the test's __wrap_ functions record them.
MAP_WRAP_TESTS := tests/unit/run/test_pyrec.c
MAP_WRAPS := pt_attach__py_code pt_attach__attr_loc pt_attach__attr_forget
define map_wrap_rule
$(OUTPUT)/tests/$(basename $(notdir $(1))): $(1) $(LIBPT) | $(OUTPUT)/tests
	$$(call msg,TEST-CC,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$(INCLUDES) $$(LDFLAGS) $$(foreach f,$$(MAP_WRAPS),-Wl,--wrap=$$(f)) \
		$$< $$(LIBPT) $$(LDLIBS) -lcmocka -o $$@
endef
$(foreach t,$(filter-out %/test_shim.c %/test_gpuring.c $(SHIM_RING_TESTS) $(MAP_WRAP_TESTS) %/test_pyagent.c tests/unit/agent/%,$(UNIT_SRCS)),$(eval $(call unit_rule,$(t))))
$(foreach t,$(MAP_WRAP_TESTS),$(eval $(call map_wrap_rule,$(t))))

# ---- tools for the integration tests (linked like the unit tests) ----
$(OUTPUT)/tests-tools/%: tests/tools/%.c $(LIBPT) | $(OUTPUT)/tests-tools
	$(call msg,TOOL-CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(LDFLAGS) $< $(LIBPT) $(LDLIBS) -o $@

# ---- fixtures for the ELF resolver tests ----
# -rdynamic: the stripped copy of elf_pie must keep its functions in .dynsym.
# a DT_RUNPATH (new dtags) on the PIE, a DT_RPATH on the other (pt_elf__runpath)
$(OUTPUT)/fixtures/elf_pie: tests/fixtures/elf_fixture.c | $(OUTPUT)/fixtures
	$(Q)$(CC) -O1 -g -fPIE -pie -rdynamic -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../lib:/opt/fx' $< -o $@
$(OUTPUT)/fixtures/elf_nopie: tests/fixtures/elf_fixture.c | $(OUTPUT)/fixtures
	$(Q)$(CC) -O1 -g -fno-pie -no-pie -Wl,--disable-new-dtags,-rpath,/opt/fx-old $< -o $@
$(OUTPUT)/fixtures/elf_stripped: $(OUTPUT)/fixtures/elf_pie
	$(Q)strip -s $< -o $@
# static: it maps no file but itself, so the only folders it loads
# libraries from are its own and the system's (run/prearm.c's search)
$(OUTPUT)/fixtures/elf_static: tests/fixtures/elf_fixture.c | $(OUTPUT)/fixtures
	$(Q)$(CC) -O1 -g -static $< -o $@
# the native unwinder's ground truth: no frame pointers, CFI only, as
# distro builds are
$(OUTPUT)/fixtures/unwind_fixture: tests/fixtures/unwind_fixture.c | $(OUTPUT)/fixtures
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fasynchronous-unwind-tables $< -o $@
# the same with .dynsym only (-rdynamic, stripped), fx_leaf not exported
$(OUTPUT)/fixtures/unwind_fixture_dyn: tests/fixtures/unwind_fixture.c | $(OUTPUT)/fixtures
	$(Q)$(CC) -O2 -fomit-frame-pointer -fasynchronous-unwind-tables -rdynamic -DFX_HIDE_LEAF $< -o $@
	$(Q)strip -s $@
# the same chain in a library the fixture dlopens late (maps read again)
$(OUTPUT)/fixtures/libunwind_fixture.so: tests/fixtures/unwind_fixture.c | $(OUTPUT)/fixtures
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fasynchronous-unwind-tables -fPIC -shared -DFX_LIB $< -o $@
# named as proftrace's own helpers are (PT_UNWIND_OWN)
$(OUTPUT)/fixtures/libproftrace_unwind_fixture.so: $(OUTPUT)/fixtures/libunwind_fixture.so
	$(Q)cp $< $@
# -Ttext-segment: an ET_DYN whose st_value != file offset, so a resolver that
# treats st_value as the offset fails; the version script gives fx_versioned
# two versions.
$(OUTPUT)/fixtures/libelf_fixture.so: tests/fixtures/elf_fixture.c tests/fixtures/elf_fixture.map | $(OUTPUT)/fixtures
	$(Q)$(CC) -O1 -g -fPIC -shared -DFIXTURE_LIB \
		-Wl,--version-script=tests/fixtures/elf_fixture.map -Wl,-Ttext-segment=0x200000 \
		$< -o $@

# ---- victims for integration tests (no sanitizers: they are targets) ----
VICTIM_CFLAGS := -g -O2 -fno-omit-frame-pointer -Wall -pthread
$(OUTPUT)/victims/libvictim_dl.so: tests/victims/libvictim_dl.c tests/victims/victim.h | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -fPIC -shared $< -o $@
# loaded by the injector's tests (ptinject); the slow one's constructor
# outlasts the injector's call timeout
$(OUTPUT)/victims/libinject_probe.so: tests/victims/libinject_probe.c | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -fPIC -shared $< -o $@
$(OUTPUT)/victims/libinject_slow.so: tests/victims/libinject_probe.c | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -DSLOW -fPIC -shared $< -o $@
# victim_faults naming $ORIGIN/rp-lib in its DT_RUNPATH, as pip wheels name
# their libraries' folders (the dlopen race's RUNPATH search)
$(OUTPUT)/victims/victim_faults_rp: tests/victims/victim_faults.c tests/victims/victim.h | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/rp-lib' $< -o $@ -ldl -lm
$(OUTPUT)/victims/victim_static: tests/victims/victim_static.c | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -static $< -o $@
$(OUTPUT)/victims/victim_nopie: tests/victims/victim_nopie.c tests/victims/victim.h | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -fno-pie -no-pie $< -o $@ -ldl -lm
# writes the CUPTI shim's segment itself, with the shim's writer
$(OUTPUT)/victims/victim_gpu_synth: tests/victims/victim_gpu_synth.c tests/victims/victim.h shim/ring.c shim/ring.h shim/ptgpu.h shim/memseg.h | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Ishim $< shim/ring.c -o $@
$(OUTPUT)/victims/%: tests/victims/%.cc tests/victims/victim.h | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CXX) $(VICTIM_CFLAGS) $< -o $@
$(OUTPUT)/victims/%: tests/victims/%.c tests/victims/victim.h | $(OUTPUT)/victims
	$(call msg,VICTIM,$@)
	$(Q)$(CC) $(VICTIM_CFLAGS) $< -o $@ -ldl -lm

# ---- bench ----
# the aggregator's own benches link its library
$(OUTPUT)/bench/agg_bench $(OUTPUT)/bench/gpujoin_bench: $(OUTPUT)/bench/%: bench/%.c $(LIBPT) | $(OUTPUT)/bench
	$(call msg,BENCH-CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(LDFLAGS) $< $(LIBPT) $(LDLIBS) -o $@
# loads the BPF objects with the verifier's statistics
$(OUTPUT)/bench/bpf_load_bench: bench/bpf_load_bench.c $(SKELS) | $(OUTPUT)/bench
	$(call msg,BENCH-CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(LDFLAGS) $< $(LDLIBS) -o $@
$(OUTPUT)/bench/%: bench/%.c | $(OUTPUT)/bench
	$(call msg,BENCH-CC,$@)
	$(Q)$(CC) -g -O2 -Wall $< -o $@

# ---- CUPTI shim: injected into CUDA processes, so no sanitizers and only
# InitializeInjection exported ----
SHIM_SRCS := $(wildcard shim/*.c)
SHIM_OBJS := $(patsubst shim/%.c,$(OUTPUT)/shim/%.o,$(SHIM_SRCS))
SHIM_CFLAGS := -g -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
	       -Wno-missing-field-initializers -fPIC -fvisibility=hidden -pthread -MMD -MP
.PHONY: shim
all: shim
ifneq ($(SHIM),)
shim: $(SHIM)
$(OUTPUT)/shim:
	$(Q)mkdir -p $@
$(OUTPUT)/shim/%.o: shim/%.c | $(OUTPUT)/shim
	$(call msg,SHIM-CC,$@)
	$(Q)$(CC) $(SHIM_CFLAGS) -isystem $(CUPTI_INCDIR) -c $< -o $@
$(SHIM): $(SHIM_OBJS)
	$(call msg,SHIM-LD,$@)
	$(Q)$(CC) -shared -pthread -Wl,-z,defs $^ -L$(CUPTI_LIBDIR) -lcupti \
		-Wl,-rpath,$(CUPTI_LIBDIR) -o $@
# The shim's logic with a fake CUPTI table, linked with the real libcupti
# (cuptiActivityGetNextRecord works without a driver).
$(OUTPUT)/tests/test_shim: tests/unit/shim/test_shim.c $(SHIM_SRCS) $(wildcard shim/*.h) user/gpu/gpuring.c user/gpu/gpuring.h $(LIBPT) | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(CFLAGS) -Ishim -I. -Iuser -isystem $(CUPTI_INCDIR) $(LDFLAGS) $< $(SHIM_SRCS) \
		user/gpu/gpuring.c $(LIBPT) -L$(CUPTI_LIBDIR) -lcupti -Wl,-rpath,$(CUPTI_LIBDIR) -pthread -lcmocka -o $@
# The shim's CPU cost per record: the very objects of $(SHIM), with the
# real libcupti's record iterator.
$(OUTPUT)/bench/shim_bench: bench/shim_bench.c $(SHIM_OBJS) $(wildcard shim/*.h) | $(OUTPUT)/bench
	$(call msg,BENCH-CC,$@)
	$(Q)$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -Ishim -isystem $(CUPTI_INCDIR) $(LDFLAGS) $< \
		$(SHIM_OBJS) -L$(CUPTI_LIBDIR) -lcupti -Wl,-rpath,$(CUPTI_LIBDIR) -pthread -o $@
else
shim:
	@echo "shim: skipped, no CUDA at $(CUDA_HOME) (set CUDA_HOME)"
$(OUTPUT)/bench/shim_bench:
	@echo "shim_bench: skipped, no CUDA at $(CUDA_HOME) (set CUDA_HOME)"
endif
# ---- the Python agent (shim/agent/): loaded into CPython processes, so no
# sanitizers, no libpython (its API is looked up at run time), and only the
# two probe sites exported ----
AGENT_SRCS := $(wildcard shim/agent/*.c)
AGENT_OBJS := $(patsubst shim/agent/%.c,$(OUTPUT)/agent/%.o,$(AGENT_SRCS))
AGENT := $(OUTPUT)/libproftrace_agent.so
AGENT_CFLAGS := -g -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
		-Wno-missing-field-initializers -fPIC -fvisibility=hidden -pthread -MMD -MP -I.
all: $(AGENT)
$(OUTPUT)/agent/%.o: shim/agent/%.c
	$(call msg,AGENT-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(AGENT_CFLAGS) -c $< -o $@
$(AGENT): $(AGENT_OBJS)
	$(call msg,AGENT-LD,$@)
	$(Q)$(CC) -shared -pthread -Wl,-z,defs $^ -ldl -o $@
# tramp.c builds the trampoline maker in (.incbin): not in its .d
$(OUTPUT)/agent/tramp.o: shim/agent/tramp.py
-include $(AGENT_OBJS:.o=.d)
# The agent's pure parts (its code-object filter, module matcher, which
# code a trampoline fits) alone:
# no interpreter in the test (tests/unit/agent/).
$(OUTPUT)/tests/test_agent_filter: tests/unit/agent/test_agent_filter.c shim/agent/codeset.c \
		shim/agent/scan.c shim/agent/tramp.c shim/agent/tramp.py $(wildcard shim/agent/*.h) \
		| $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(CFLAGS) -I. $(LDFLAGS) $< shim/agent/codeset.c shim/agent/scan.c \
		shim/agent/tramp.c -lcmocka -o $@

# The reader against segments made by the shim's own writer (no CUPTI).
$(OUTPUT)/tests/test_gpuring: tests/unit/gpu/test_gpuring.c shim/ring.c shim/ring.h shim/ptgpu.h shim/memseg.h $(LIBPT) | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -Ishim $(LDFLAGS) $< shim/ring.c $(LIBPT) $(LDLIBS) -lcmocka -o $@

# SHIM_RING_TESTS: linked with the shim's ring writer, as test_gpuring.
define shim_ring_rule
$(OUTPUT)/tests/$(basename $(notdir $(1))): $(1) tests/unit/run/runfx.h shim/ring.c shim/ring.h shim/ptgpu.h shim/memseg.h $(LIBPT) | $(OUTPUT)/tests
	$$(call msg,TEST-CC,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$(INCLUDES) -Ishim $$(LDFLAGS) $$< shim/ring.c $$(LIBPT) $$(LDLIBS) -lcmocka -o $$@
endef
$(foreach t,$(SHIM_RING_TESTS),$(eval $(call shim_ring_rule,$(t))))

# A process's Python agent on live children, without BPF: the two calls
# into BPF on its way (the uprobes on the agent's sites, the answer for a
# code object the agent found) are stood in for by the test (--wrap).
$(OUTPUT)/tests/test_pyagent: tests/unit/run/test_pyagent.c tests/unit/run/runfx.h tests/unit/run/pyfx.h $(LIBPT) | $(OUTPUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -Ishim $(LDFLAGS) -Wl,--wrap=pt_attach__agent \
		-Wl,--wrap=pt_attach__py_code $< $(LIBPT) $(LDLIBS) -lcmocka -o $@

# ---- fuzzing (libFuzzer): one harness per reader of target-controlled input ----
# Each harness links only its module, so a finding points at one file.
# Runs over a copy of the seeds, so tests/fuzz/corpus/ only changes by hand;
# failing inputs land in $(OUTPUT)/fuzz/<name>-{crash,leak,timeout,oom}-*.
FUZZ_SECONDS ?= 20
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	       -std=gnu11 -D_GNU_SOURCE -I. -Iuser
# One harness per reader of target-controlled input: the module(s) it links
# (only those, so a finding points at one file) and any extra libraries.
FUZZ_NAMES := maps elf config pycode pyline folded gpuring pyattr agent pyoffsets pysrc regions \
	      gpulive gpujoin escape ustack
FUZZ_SRCS_maps := user/attach/maps.c
FUZZ_SRCS_elf := user/attach/elfsyms.c
FUZZ_LIBS_elf := -lelf
FUZZ_SRCS_config := user/config/config.c user/config/valexpr.c
FUZZ_SRCS_pycode := user/python/pycode.c user/python/pylayout.c
FUZZ_SRCS_pyline := user/python/pyline.c
FUZZ_SRCS_folded := user/aggregate/flame.c
# the segment is written by the profiled process; seeds come from
# `make fuzz-gpuring-seeds` (the real writer, shim/ring.c)
FUZZ_SRCS_gpuring := user/gpu/gpuring.c user/util/segment.c user/util/sigbus.c user/util/users.c \
		     user/util/log.c user/util/escape.c user/util/tasks.c
# builds its own CPython images (no seeds needed): tests/fuzz/fuzz_pyattr.c
FUZZ_SRCS_pyattr := user/python/pyattr.c user/python/pylayout.c user/python/pythreads.c \
		     user/python/pycode.c
# the Python agent's segment (shared memory the target writes); the seed
# is a header as the agent publishes it (tests/fuzz/corpus/agent)
FUZZ_SRCS_agent := user/python/agent.c user/util/segment.c user/util/sigbus.c user/util/users.c \
		   user/util/log.c user/util/escape.c user/util/tasks.c
FUZZ_ARGS_agent := -max_len=4096
# _Py_DebugOffsets read out of a 3.13 target's _PyRuntime
FUZZ_SRCS_pyoffsets := user/python/pylayout.c
# a 3.8-3.10 target's source files, read to name its code objects
FUZZ_SRCS_pysrc := user/python/pysrc.c
# intra-kernel region files (import-regions): readers, then the matcher and
# the trace merge on what they read
FUZZ_SRCS_regions := user/gpu/regionfile.c user/aggregate/regionmatch.c user/report/regions_out.c
FUZZ_LIBS_regions := -lcjson -lm
# GPU record times (from the target's ring) into the live busy/idle sets
FUZZ_SRCS_gpulive := user/aggregate/gpulive.c
# the same records into the end-of-run join, bounded so that it folds
FUZZ_SRCS_gpujoin := user/aggregate/gpu.c user/aggregate/dist.c user/util/demangle.c
FUZZ_LIBS_gpujoin := -lm -lstdc++
# a sample's native registers and stack (the target's bytes) through the
# unwinder (on the fuzzer's own mappings) and the merge with Python frames
FUZZ_SRCS_ustack := user/sample/unwind.c user/sample/mixed.c user/util/demangle.c
FUZZ_LIBS_ustack := -ldw -lelf -lstdc++
FUZZ_ARGS_ustack := -max_len=20000
# what every message escapes (targets files' and targets' bytes) for the terminal
FUZZ_SRCS_escape := user/util/escape.c
# libFuzzer caps inputs near the largest seed (13 KB for ELF); let them
# grow enough for big symbol tables.
FUZZ_ARGS_elf := -max_len=65536
FUZZ_BINS := $(patsubst %,$(OUTPUT)/fuzz/fuzz_%,$(FUZZ_NAMES))

$(OUTPUT)/fuzz:
	$(Q)mkdir -p $@
define fuzz_rule
$(OUTPUT)/fuzz/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(FUZZ_SRCS_$(1)) | $(OUTPUT)/fuzz
	$$(call msg,FUZZ-CC,$$@)
	$$(Q)$$(CLANG) $$(FUZZ_CFLAGS) $$< $(FUZZ_SRCS_$(1)) $(FUZZ_LIBS_$(1)) -o $$@
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_rule,$(n))))
.PHONY: fuzz-gpuring-seeds
fuzz-gpuring-seeds: tests/fuzz/fuzz_gpuring.c shim/ring.c | $(OUTPUT)/fuzz
	$(Q)$(CC) -g -O1 -std=gnu11 -D_GNU_SOURCE -I. -Iuser -Ishim -DPTG_GEN_SEEDS $^ -o $(OUTPUT)/fuzz/gen_gpuring_seeds
	$(Q)$(OUTPUT)/fuzz/gen_gpuring_seeds tests/fuzz/corpus/gpuring

# One line per harness; non-zero exit when any harness crashed, hung,
# leaked or tripped a sanitizer.
fuzz: $(FUZZ_BINS)
	$(Q)fail=0; $(foreach n,$(FUZZ_NAMES),args_$(n)='$(FUZZ_ARGS_$(n))';) \
	for n in $(FUZZ_NAMES); do \
		d=$(OUTPUT)/fuzz/corpus-$$n; log=$(OUTPUT)/fuzz/$$n.log; \
		eval "args=\$$args_$$n"; \
		mkdir -p $$d && { [ ! -d tests/fuzz/corpus/$$n ] || cp tests/fuzz/corpus/$$n/* $$d/; } || exit 1; \
		if $(OUTPUT)/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-print_final_stats=1 -artifact_prefix=$(OUTPUT)/fuzz/$$n- \
			$$args $$d > $$log 2>&1; then res=ok; \
		else res="FAILED (see $$log)"; fail=1; fi; \
		runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
		rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $$log); \
		cov=$$(grep -o 'cov: [0-9]*' $$log | tail -n 1); \
		printf '  %-8s fuzz_%-7s %s runs, %s/s, %s, corpus %s: %s\n' FUZZ $$n \
			"$${runs:-?}" "$${rate:-?}" "$${cov:-cov: ?}" $$d "$$res"; \
	done; exit $$fail

# ---- on a lent GPU machine (docs/gpu.md, "make gpu-check"): tests/gpu/,
# checked against CUDA-event truth; skips with a message without nvidia-smi ----
NVCC ?= $(CUDA_HOME)/bin/nvcc
NVCC_ARCH ?= sm_90
GPU_TOOLS := $(OUTPUT)/gpu/victim_gpu $(OUTPUT)/gpu/gpuring_dump $(OUTPUT)/gpu/launch_bench
.PHONY: gpu-check gpu-tools
gpu-tools: $(GPU_TOOLS)
# -lcuda: the driver-API launches (the stub at link time, the driver's at run time);
# launch_bench reads its own shim with proftrace's reader
$(OUTPUT)/gpu/gpuring.o: user/gpu/gpuring.c user/gpu/gpuring.h shim/ptgpu.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O2 -std=gnu11 -D_GNU_SOURCE -I. -Iuser -Iuser/gpu -c $< -o $@
$(OUTPUT)/gpu/victim_gpu: tests/gpu/victim_gpu.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -lineinfo -arch=$(NVCC_ARCH) $< -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda
$(OUTPUT)/gpu/launch_bench: tests/gpu/launch_bench.cu $(OUTPUT)/gpu/gpuring.o user/gpu/gpuring.h $(LIBPT)
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -O2 -lineinfo -arch=$(NVCC_ARCH) -Iuser $< $(OUTPUT)/gpu/gpuring.o $(LIBPT) -o $@ \
		-L$(CUDA_HOME)/lib64/stubs -lcuda -lpthread
$(OUTPUT)/gpu/gpuring_dump: tests/gpu/gpuring_dump.c user/gpu/gpuring.c user/gpu/gpuring.h shim/ptgpu.h $(LIBPT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -g -O2 -std=gnu11 -D_GNU_SOURCE -I. -Iuser -Iuser/gpu $< user/gpu/gpuring.c $(LIBPT) -o $@
gpu-check:
	$(Q)PT_MAKE="$(MAKE)" PT_OUTPUT=$(OUTPUT) PT_PROFTRACE=$(BIN) PT_SHIM=$(SHIM) \
		$(PYTHON) tests/gpu/gpu_check.py

# the Python agent: tests/unit/run/test_pyhint preloads it into its children
unit: $(UNIT_BINS) $(FIXTURES) $(AGENT)
	$(Q)PT_FIXTURES=$(OUTPUT)/fixtures PT_AGENT=$(AGENT) ./tests/run-unit $(OUTPUT)/tests "$(T)"

integration: $(BIN) $(VICTIMS) $(TOOLS) $(SHIM) $(AGENT)
	$(Q)PT_PROFTRACE=$(BIN) PT_VICTIMS=$(OUTPUT)/victims PT_TOOLS=$(OUTPUT)/tests-tools \
		PT_SHIM=$(SHIM) PT_AGENT=$(AGENT) $(PYTHON) tests/integration/run.py $(T)

# `make test` and `make demo` work on a fresh machine: they install what is
# missing first (quick when everything is there), then build.
test:
	$(Q)./scripts/deps.sh
	$(Q)$(MAKE) -s --no-print-directory $(BIN) $(UNIT_BINS) $(FIXTURES) $(VICTIMS) $(TOOLS) \
		$(SHIM) $(AGENT)
	$(Q)./scripts/check-layers.sh
	$(Q)./scripts/check-format.sh
	$(Q)PT_PROFTRACE=$(BIN) PT_FIXTURES=$(OUTPUT)/fixtures PT_VICTIMS=$(OUTPUT)/victims \
		PT_TOOLS=$(OUTPUT)/tests-tools PT_SHIM=$(SHIM) PT_AGENT=$(AGENT) ./tests/run-all $(OUTPUT)

# make test beside a CPU hog on every core (not in CI)
test-loaded:
	$(Q)./scripts/test-loaded.sh

asan:
	$(Q)$(MAKE) BUILD=asan test

bench: $(BIN) $(BENCH_BINS) $(VICTIMS) $(TOOLS) $(AGENT)
	$(Q)PT_BENCH=$(OUTPUT)/bench PT_VICTIMS=$(OUTPUT)/victims PT_TOOLS=$(OUTPUT)/tests-tools \
		$(PYTHON) bench/run.py

# everything the demo uses: the engine gets the agent (and the shim) from
# `proftrace env`, which points beside proftrace
demo:
	$(Q)./scripts/deps.sh
	$(Q)$(MAKE) -s --no-print-directory proftrace $(AGENT) $(SHIM) $(VICTIMS)
	$(Q)PT_VICTIMS=$(OUTPUT)/victims ./scripts/demo.sh

# ---- install: the binary, its helpers, the bundled targets and the docs ----
# make install [PREFIX=/usr/local] [DESTDIR=/stage]. proftrace finds its
# helpers in ../lib/proftrace and its targets in ../share/proftrace/targets
# of its own folder (util/helpers.c, config/targets_list.c): no path is
# compiled in, and the tree can be moved whole. The helpers are read by the
# servers it profiles, under their own users: readable by all.
PREFIX ?= /usr/local
PT_INST := $(DESTDIR)$(PREFIX)
install: $(BIN) $(AGENT) $(SHIM)
	$(call msg,INSTALL,$(PT_INST))
	$(Q)install -d -m 0755 $(PT_INST)/bin $(PT_INST)/lib/proftrace \
		$(PT_INST)/share/proftrace/targets $(PT_INST)/share/doc/proftrace/docs
	$(Q)install -m 0755 $(BIN) $(PT_INST)/bin/proftrace
	$(Q)install -m 0755 $(AGENT) $(SHIM) $(PT_INST)/lib/proftrace/
	$(Q)install -m 0644 targets/*.conf $(PT_INST)/share/proftrace/targets/
	$(Q)install -m 0644 README.md $(PT_INST)/share/doc/proftrace/
	$(Q)install -m 0644 docs/*.md $(PT_INST)/share/doc/proftrace/docs/

uninstall:
	$(call msg,UNINSTALL,$(PT_INST))
	$(Q)rm -f $(PT_INST)/bin/proftrace
	$(Q)rm -rf $(PT_INST)/lib/proftrace $(PT_INST)/share/proftrace $(PT_INST)/share/doc/proftrace

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf .output .output-asan proftrace

-include $(USER_OBJS:.o=.d) $(patsubst %,%.d,$(UNIT_BINS) $(TOOLS))
-include $(SHIM_OBJS:.o=.d)
