# mk/fakes.mk - the fake NVML library and the fake nvidia-smi (tests only).
#
#   $(BUILD)/fakes/libnvidia-ml.so.1      versioned + unversioned symbols
#   $(BUILD)/fakes/old/libnvidia-ml.so.1  unversioned symbols only (fallbacks)
#   $(BUILD)/fakes/nvidia-smi             an NVML client of the first one
#
# Never sanitized, even under SANITIZE= (make asan): a shared library
# built with ASan needs the ASan runtime loaded first, which an
# unsanitized program that dlopens it (nvidia-smi, a daemon under test in
# a plain build) does not have.  A sanitized gpumod loading an unsanitized
# library is fine.  So these take $(CFLAGS) but not the -fsanitize flags.
# Include after the variables of the main Makefile (BUILD, CC, WARN, ...).

FAKE_NVML_DIR := tests/fakes/nvml
FAKE_NVML_LIB := $(BUILD)/fakes/libnvidia-ml.so.1
FAKE_NVML_OLD := $(BUILD)/fakes/old/libnvidia-ml.so.1
FAKE_SMI      := $(BUILD)/fakes/nvidia-smi
FAKE_NOTIFY   := $(BUILD)/fakes/notify-recv
FAKES         := $(FAKE_NVML_LIB) $(FAKE_NVML_OLD) $(FAKE_SMI) $(FAKE_NOTIFY)

FAKE_NVML_CFLAGS = -std=c17 -D_GNU_SOURCE $(WARN) $(if $(WERROR),-Werror) \
                   $(shell pkg-config --cflags libcjson 2>/dev/null) $(CFLAGS) -MMD -MP
FAKE_NVML_LIBS   = $(shell pkg-config --libs libcjson 2>/dev/null)
FAKE_SO_FLAGS    = -fPIC -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 -Wl,--no-undefined

.PHONY: fakes
fakes: $(FAKES)

$(FAKE_NVML_LIB): $(FAKE_NVML_DIR)/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -MF $@.d $(FAKE_SO_FLAGS) $(LDFLAGS) -o $@ $< $(FAKE_NVML_LIBS)

$(FAKE_NVML_OLD): $(FAKE_NVML_DIR)/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -MF $@.d -DFAKE_NVML_OLD $(FAKE_SO_FLAGS) $(LDFLAGS) -o $@ $< $(FAKE_NVML_LIBS)

# it dlopens the library beside it, so it needs that one, not a link to it
$(FAKE_SMI): $(FAKE_NVML_DIR)/fake_nvidia_smi.c | $(FAKE_NVML_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -MF $@.d $(LDFLAGS) -o $@ $<

# receives sd_notify datagrams (the daemon's READY=1 / STOPPING=1)
$(FAKE_NOTIFY): tests/fakes/notify-recv.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_NVML_CFLAGS) -MF $@.d $(LDFLAGS) -o $@ $<

# the tests that run them: built after them, so `make unit` is enough
$(BUILD)/tests/test_nvml $(BUILD)/tests/test_smi: | $(FAKES)
$(BUILD)/tests/test_snapshot: | $(FAKES) $(FAKELLM)

-include $(wildcard $(BUILD)/fakes/*.d $(BUILD)/fakes/old/*.d)
