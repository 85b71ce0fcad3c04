# mk/http.mk - the differential test of the HTTP parser against llhttp
# (test-only; llhttp's C sources are unpacked into $(CACHE) by
# scripts/install-deps --test-cache, see LLHTTP_OBJ in the Makefile).
# Include after the Makefile's rules and variables.
#
# An explicit rule: the Makefile's pattern rule for tests/unit/test_*.c
# would link this test without llhttp.

$(BUILD)/obj/tests/unit/test_http_diff.o: ALL_CFLAGS += -I$(LLHTTP_DIR)/include/llhttp
$(BUILD)/obj/tests/unit/test_http_diff.o: | $(LLHTTP_DIR)/include/llhttp/llhttp.h

$(BUILD)/tests/test_http_diff: $(BUILD)/obj/tests/unit/test_http_diff.o $(LLHTTP_OBJ) $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

.PHONY: http-diff
http-diff: $(BUILD)/tests/test_http_diff
	@BUILD=$(BUILD) tests/run unit/test_http_diff
