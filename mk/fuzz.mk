# mk/fuzz.mk - the GGUF parser's fuzzer and the replay of its corpus.
# Included from the Makefile after its rules (it uses BUILD, CC, ALL_CFLAGS,
# WARN, PKG_LIBS and the `unit` and `deps` targets defined there).
#
#   make fuzz            build build-fuzz/fuzz_gguf (clang + libFuzzer + ASan
#                        + UBSan) and run it FUZZ_SECONDS (600) over the seed
#                        corpus; new inputs go to build-fuzz/corpus, crashes
#                        to build-fuzz/artifacts/
#   make fuzz-replay     every corpus file through the parser, normal compiler
#                        ($(BUILD)/tests/test_fuzz_replay; `make test` runs it)
#   make fuzz-corpus     regenerate the synthetic seeds and the real-model
#                        header seed (tests/fuzz/gen_corpus.c)
#
# The fuzz build links the parser's sources directly: libgpumod.a is built
# without libFuzzer's coverage instrumentation.

# Debian 12: clang-14 and libclang-rt-14-dev (libFuzzer's runtime, only
# "recommended" by clang-14); llvm-14 for symbolized stack traces
FUZZ_CC      ?= $(or $(shell command -v clang-14 2>/dev/null),clang)
FUZZ_SYMBOLIZER := $(wildcard /usr/lib/llvm-14/bin/llvm-symbolizer)
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_CORPUS  := tests/fuzz/corpus/gguf
FUZZ_MODELS  ?= ../shared/models/aidreams260K-f32.gguf
FUZZ_SRC     := tests/fuzz/fuzz_gguf.c src/model/gguf.c src/model/ggml_type.c
FUZZ_CFLAGS  := -std=c17 -D_GNU_SOURCE -g -O1 -Isrc \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
                -DGGUF_WINDOW_MIN=16 -DGGUF_WINDOW_MAX=64
# -max_len: the largest seed (a real header) is 14 KB
FUZZ_ARGS    ?= -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -dict=tests/fuzz/gguf.dict

.PHONY: fuzz fuzz-replay fuzz-corpus

# buf.c (xmalloc) is not ours to hold to clang's -Wformat=2: built apart
$(FUZZ_BUILD)/buf.o: src/util/buf.c src/util/buf.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -w -c -o $@ $<

$(FUZZ_BUILD)/fuzz_gguf: $(FUZZ_SRC) $(FUZZ_BUILD)/buf.o src/model/gguf.h src/model/ggml_type.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) -Wno-unknown-warning-option -o $@ $(FUZZ_SRC) $(FUZZ_BUILD)/buf.o

fuzz: deps
	@scripts/install-deps --fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/fuzz_gguf
	@mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/artifacts
	$(if $(FUZZ_SYMBOLIZER),ASAN_SYMBOLIZER_PATH=$(FUZZ_SYMBOLIZER)) $(FUZZ_BUILD)/fuzz_gguf $(FUZZ_ARGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/ $(FUZZ_BUILD)/corpus $(FUZZ_CORPUS)

$(BUILD)/tests/test_fuzz_replay: tests/fuzz/replay.c tests/fuzz/fuzz_gguf.c $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)

unit: $(BUILD)/tests/test_fuzz_replay

fuzz-replay: $(BUILD)/tests/test_fuzz_replay
	@BUILD=$(BUILD) tests/run unit/test_fuzz_replay

$(BUILD)/gen_corpus: tests/fuzz/gen_corpus.c tests/unit/gguf_synth.h $(BUILD)/libgpumod.a
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)

fuzz-corpus: $(BUILD)/gen_corpus
	$(BUILD)/gen_corpus $(FUZZ_CORPUS) $(FUZZ_MODELS)
