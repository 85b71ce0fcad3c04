# mk/fuzz.mk - the fuzzers (GGUF parser, HTTP parser, request body
# scanner, bench stream parsing) and the replay of
# their corpora.  Included from the Makefile after its rules (it uses BUILD,
# CC, ALL_CFLAGS, WARN, PKG_LIBS and the `unit` and `deps` targets defined
# there).
#
#   make fuzz            every target in FUZZ_TARGETS (gguf http modelscan sse), one after
#                        the other, FUZZ_SECONDS (600) each
#   make fuzz-gguf       build build-fuzz/fuzz_gguf (clang + libFuzzer + ASan
#                        + UBSan) and run it FUZZ_SECONDS over the seed
#                        corpus; new inputs go to build-fuzz/corpus, crashes
#                        to build-fuzz/artifacts/
#   make fuzz-http       the same for build-fuzz/fuzz_http (corpus in
#                        build-fuzz/corpus-http, crashes in
#                        build-fuzz/artifacts-http/)
#   make fuzz-modelscan  the same for build-fuzz/fuzz_modelscan (corpus in
#                        build-fuzz/corpus-modelscan, crashes in
#                        build-fuzz/artifacts-modelscan/)
#   make fuzz-sse        the same for build-fuzz/fuzz_sse (corpus in
#                        build-fuzz/corpus-sse, crashes in build-fuzz/artifacts-sse/)
#   make fuzz-replay     every corpus file through the parsers, normal compiler
#                        ($(BUILD)/tests/test_fuzz_replay{,_http,_modelscan,_sse}; `make test`
#                        runs them)
#   make fuzz-corpus     regenerate the synthetic seeds and the real-model
#                        header seed (tests/fuzz/gen_corpus.c)
#   make fuzz-http-corpus  the HTTP seeds from tests/fixtures/http (a control
#                        byte, see fuzz_http.c, then the message)
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
FUZZ_MODELS  ?= tests/fixtures/models/aidreams260K-f32.gguf
FUZZ_SRC     := tests/fuzz/fuzz_gguf.c src/model/gguf.c src/model/ggml_type.c src/util/errf.c src/util/clock.c src/util/slurp.c
FUZZ_CFLAGS  := -std=c17 -D_GNU_SOURCE -g -O1 -Isrc \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
                -DGGUF_WINDOW_MIN=16 -DGGUF_WINDOW_MAX=64
# -max_len: the largest seed (a real header) is 14 KB
FUZZ_ARGS    ?= -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -dict=tests/fuzz/gguf.dict

FUZZ_TARGETS ?= gguf http modelscan sse

.PHONY: fuzz fuzz-gguf fuzz-http fuzz-modelscan fuzz-sse fuzz-replay fuzz-corpus fuzz-http-corpus

# buf.c (xmalloc) is not ours to hold to clang's -Wformat=2: built apart
$(FUZZ_BUILD)/buf.o: src/util/buf.c src/util/buf.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -w -c -o $@ $<

$(FUZZ_BUILD)/fuzz_gguf: $(FUZZ_SRC) $(FUZZ_BUILD)/buf.o src/model/gguf.h src/model/ggml_type.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) -Wno-unknown-warning-option -o $@ $(FUZZ_SRC) $(FUZZ_BUILD)/buf.o

fuzz: deps
	@scripts/install-deps --fuzz
	@set -e; for t in $(FUZZ_TARGETS); do $(MAKE) --no-print-directory fuzz-$$t; done

fuzz-gguf:
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/fuzz_gguf
	@mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/artifacts
	$(if $(FUZZ_SYMBOLIZER),ASAN_SYMBOLIZER_PATH=$(FUZZ_SYMBOLIZER)) $(FUZZ_BUILD)/fuzz_gguf $(FUZZ_ARGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/ $(FUZZ_BUILD)/corpus $(FUZZ_CORPUS)

$(BUILD)/tests/test_fuzz_replay: tests/fuzz/replay.c tests/fuzz/fuzz_gguf.c $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)

unit: $(BUILD)/tests/test_fuzz_replay $(BUILD)/tests/test_fuzz_replay_http

fuzz-replay: $(BUILD)/tests/test_fuzz_replay $(BUILD)/tests/test_fuzz_replay_http \
             $(BUILD)/tests/test_fuzz_replay_modelscan $(BUILD)/tests/test_fuzz_replay_sse
	@BUILD=$(BUILD) tests/run unit/test_fuzz_replay

$(BUILD)/gen_corpus: tests/fuzz/gen_corpus.c tests/unit/gguf_synth.h $(BUILD)/libgpumod.a
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)

fuzz-corpus: $(BUILD)/gen_corpus
	$(BUILD)/gen_corpus $(FUZZ_CORPUS) $(FUZZ_MODELS)

# The HTTP parser: fuzz_http.c parses each input in one piece, a byte at a
# time and in random pieces and checks that the three agree.
FUZZ_HTTP_SRC    := tests/fuzz/fuzz_http.c src/net/http.c
FUZZ_HTTP_CORPUS := tests/fuzz/corpus/http
# -max_len: byte-at-a-time feeding copies the unconsumed bytes per call
FUZZ_HTTP_ARGS   ?= -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                    -dict=tests/fuzz/http.dict

$(FUZZ_BUILD)/fuzz_http: $(FUZZ_HTTP_SRC) $(FUZZ_BUILD)/buf.o src/net/http.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) -Wno-unknown-warning-option -o $@ $(FUZZ_HTTP_SRC) $(FUZZ_BUILD)/buf.o

fuzz-http:
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/fuzz_http
	@mkdir -p $(FUZZ_BUILD)/corpus-http $(FUZZ_BUILD)/artifacts-http
	$(if $(FUZZ_SYMBOLIZER),ASAN_SYMBOLIZER_PATH=$(FUZZ_SYMBOLIZER)) $(FUZZ_BUILD)/fuzz_http $(FUZZ_HTTP_ARGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts-http/ $(FUZZ_BUILD)/corpus-http $(FUZZ_HTTP_CORPUS)

$(BUILD)/tests/test_fuzz_replay_http: tests/fuzz/replay_http.c tests/fuzz/fuzz_http.c $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)

# seeds: valid-/invalid- + the fixture's name; the control byte says
# request (0), response (1) or response to HEAD (3)
fuzz-http-corpus:
	@set -e; for d in valid invalid; do for f in tests/fixtures/http/$$d/*.http; do \
	    b=$$(basename $$f .http); \
	    case $$b in res-head-*) fl='\003';; res-*) fl='\001';; *) fl='\000';; esac; \
	    { printf "$$fl"; cat $$f; } >$(FUZZ_HTTP_CORPUS)/$$d-$$b; done; done

# The request body scanner (the router's "model" finder): fuzz_modelscan.c
# scans each input in one piece, a byte at a time and in random pieces and
# checks that the three agree, against cJSON where it accepts the body.
FUZZ_MS_SRC    := tests/fuzz/fuzz_modelscan.c src/router/modelscan.c
FUZZ_MS_CORPUS := tests/fuzz/corpus/modelscan
FUZZ_MS_ARGS   ?= -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                  -dict=tests/fuzz/modelscan.dict

$(FUZZ_BUILD)/fuzz_modelscan: $(FUZZ_MS_SRC) $(FUZZ_BUILD)/buf.o src/router/modelscan.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(shell pkg-config --cflags libcjson) $(WARN) -Wno-unknown-warning-option \
	    -o $@ $(FUZZ_MS_SRC) $(FUZZ_BUILD)/buf.o $(shell pkg-config --libs libcjson)

fuzz-modelscan:
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/fuzz_modelscan
	@mkdir -p $(FUZZ_BUILD)/corpus-modelscan $(FUZZ_BUILD)/artifacts-modelscan
	$(if $(FUZZ_SYMBOLIZER),ASAN_SYMBOLIZER_PATH=$(FUZZ_SYMBOLIZER)) $(FUZZ_BUILD)/fuzz_modelscan $(FUZZ_MS_ARGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts-modelscan/ $(FUZZ_BUILD)/corpus-modelscan $(FUZZ_MS_CORPUS)

unit: $(BUILD)/tests/test_fuzz_replay_modelscan

$(BUILD)/tests/test_fuzz_replay_modelscan: tests/fuzz/replay_modelscan.c tests/fuzz/fuzz_modelscan.c $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)

# The bench client's stream parsing: fuzz_sse.c parses each response body
# whole, a byte at a time and in random pieces, checks that the three agree
# and feeds the events to the request classifier (src/oai/sse.c, breq.c).
FUZZ_SSE_SRC    := tests/fuzz/fuzz_sse.c src/oai/sse.c src/oai/breq.c
FUZZ_SSE_CORPUS := tests/fuzz/corpus/sse
FUZZ_SSE_ARGS   ?= -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                   -dict=tests/fuzz/sse.dict

$(FUZZ_BUILD)/fuzz_sse: $(FUZZ_SSE_SRC) $(FUZZ_BUILD)/buf.o src/oai/sse.h src/oai/breq.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(shell pkg-config --cflags libcjson) $(WARN) -Wno-unknown-warning-option \
	    -o $@ $(FUZZ_SSE_SRC) $(FUZZ_BUILD)/buf.o $(shell pkg-config --libs libcjson) -lm

fuzz-sse:
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/fuzz_sse
	@mkdir -p $(FUZZ_BUILD)/corpus-sse $(FUZZ_BUILD)/artifacts-sse
	$(if $(FUZZ_SYMBOLIZER),ASAN_SYMBOLIZER_PATH=$(FUZZ_SYMBOLIZER)) $(FUZZ_BUILD)/fuzz_sse $(FUZZ_SSE_ARGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts-sse/ $(FUZZ_BUILD)/corpus-sse $(FUZZ_SSE_CORPUS)

unit: $(BUILD)/tests/test_fuzz_replay_sse

$(BUILD)/tests/test_fuzz_replay_sse: tests/fuzz/replay_sse.c tests/fuzz/fuzz_sse.c $(BENCH_LIB) $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BENCH_LIB) $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS)
