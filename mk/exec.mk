# mk/exec.mk - gpumod-exec, the chain-loaded exec helper every service runs
# under (src/exec/gpumod-exec.c, docs/exec.md).  A separate executable with
# no libraries: it runs between the daemon's fork and the engine's exec, so
# it must start fast and carry nothing the engine could inherit.  It takes
# the sanitizer flags like gpumod (the e2e tests run it from $(BUILD)).
# Include after the variables of the main Makefile (BUILD, CC, ALL_CFLAGS).
#
# The main Makefile must keep it out of libgpumod.a (it has a main()):
#   LIB_SRC := $(filter-out src/main.c src/exec/%,...)

EXEC_HELPER := $(BUILD)/gpumod-exec

.PHONY: exec-helper
exec-helper: $(EXEC_HELPER)

$(EXEC_HELPER): $(BUILD)/obj/src/exec/gpumod-exec.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^

# built by `make` (and so before `make test` runs the e2e tests), and
# installed to $(LIBEXECDIR) by the main Makefile's install recipe, which
# reads $(HELPERS) when it runs
HELPERS += $(EXEC_HELPER)
all: $(EXEC_HELPER)
install: $(EXEC_HELPER)
