# gpumod - plain GNU make + pkg-config.  `make help` lists the targets.
#
# Start-up cost is a feature: bin `gpumod` links only what every command
# needs (libuv, libyaml, cJSON, SQLite).  libcurl and ncurses will live in
# git-style helper executables (HELPERS) that `gpumod bench` / `gpumod tui`
# exec, so no other command pays for them.

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec/gpumod
MANDIR     ?= $(PREFIX)/share/man
DESTDIR    ?=

BUILD    ?= build
CACHE    ?= build/cache
CC       ?= cc
CFLAGS   ?= -O2 -g
LDFLAGS  ?=
SANITIZE ?=
WERROR   ?=
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

PKGS      := libuv yaml-0.1 libcjson sqlite3
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libyaml, SQLite and libuv are linked from Debian's static archives
# (libuv1-dev names its libuv_a.a): every CLI call pays dynamic loading,
# and each library costs some of it per process (docs/startup.md).  A
# security update of any of them needs a rebuild.  cJSON ships no static
# archive; libm cannot be linked statically into a PIE.
STATIC_LIBS := -lyaml -lsqlite3 -luv_a
PKG_LIBS   = -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic \
             $(shell pkg-config --libs libcjson 2>/dev/null) -lpthread -ldl -lrt -lm

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wno-unused-parameter -Wno-missing-field-initializers -Wno-format-truncation \
        -Wmissing-prototypes \
        -Wstrict-prototypes -Wvla
ALL_CFLAGS = -std=c17 -D_GNU_SOURCE $(WARN) $(if $(WERROR),-Werror) -Isrc \
             -DGPUMOD_VERSION='"$(VERSION)"' -DGPUMOD_LIBEXECDIR='"$(LIBEXECDIR)"' \
             $(PKG_CFLAGS) $(CFLAGS) -MMD -MP
# Relative relocations packed (DT_RELR, glibc 2.36, binutils 2.38): the
# loader reads 1.2 KB instead of a 68 KB .rela.dyn at every start (3 page
# faults of ~135 for a preflight; docs/startup.md).  Left out where the
# toolchain does not know it.
RELR := $(shell printf 'int main(void){return 0;}' | $(CC) -x c - -o /dev/null -Wl,-z,pack-relative-relocs \
          -Wl,--fatal-warnings 2>/dev/null && echo -Wl,-z,pack-relative-relocs)
ALL_LDFLAGS = $(LDFLAGS) $(RELR)
ifneq ($(SANITIZE),)
ALL_CFLAGS  += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif

LIB_SRC := $(filter-out src/main.c src/helper.c src/exec/% src/bench/% src/eval/% src/oai/% src/tune/% src/mcp/% src/tui/% src/models/%,$(shell find src -name '*.c' | LC_ALL=C sort))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
GPUMOD  := $(BUILD)/gpumod
# gpumod-bench: the only program that links libcurl (src/bench/); its
# parts other than main.c are an archive the unit tests link too.  eval
# (src/eval/) runs in the same helper, so its parts join that archive.
BENCH_SRC  := $(filter-out src/bench/main.c,$(sort $(wildcard src/bench/*.c src/eval/*.c src/tune/*.c src/oai/*.c src/models/*.c)))
BENCH_OBJ  := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_LIB  := $(BUILD)/libbench.a
CURL_LIBS   = $(shell pkg-config --libs libcurl 2>/dev/null || echo -lcurl)
# gpumod-mcp: the MCP server (src/mcp/), a client of the daemon only; its
# parts other than main.c are an archive the unit tests link too.
MCP_SRC := $(filter-out src/mcp/main.c,$(sort $(wildcard src/mcp/*.c)))
MCP_OBJ := $(MCP_SRC:%.c=$(BUILD)/obj/%.o)
MCP_LIB := $(BUILD)/libmcp.a
# gpumod-tui: the terminal dashboard, the only program that links ncursesw.
TUI_SRC := $(sort $(wildcard src/tui/*.c))
TUI_OBJ := $(TUI_SRC:%.c=$(BUILD)/obj/%.o)
NCURSES_CFLAGS = $(shell pkg-config --cflags ncursesw 2>/dev/null)
NCURSES_LIBS   = $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
HELPERS := $(BUILD)/gpumod-bench $(BUILD)/gpumod-mcp $(BUILD)/gpumod-tui

UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

# Test-only sources and programs are unpacked from Debian packages into
# $(CACHE) (apt-get download + dpkg -x), never installed system-wide.
LLHTTP_DIR := $(CACHE)/node-llhttp/usr/share
LLHTTP_SRC := $(LLHTTP_DIR)/llhttp/llhttp.c $(LLHTTP_DIR)/llhttp/api.c $(LLHTTP_DIR)/llhttp/http.c
# promtool (Debian's prometheus package, only this binary kept) checks the
# router's /metrics; tests/e2e/lib.sh runs it as $PROMTOOL
PROMTOOL   := $(CACHE)/prometheus/usr/bin/promtool
# the official MCP TypeScript SDK (npm ci of tests/mcp/package-lock.json),
# the independent client tests/e2e/t95-mcp-sdk.sh drives gpumod mcp with;
# the marker is rewritten when the lock changes
MCP_SDK    := $(CACHE)/mcp-sdk/.unpacked
FAKE_SRC   := $(sort $(wildcard tests/fakes/fakellm/*.c))
FAKELLM    := $(BUILD)/fakellm

.PHONY: all deps test unit e2e demo asan valgrind install uninstall clean help bench-startup bench-preflight \
        bench-status bench-mcp bench-cycles bench-switch bench-proxy bench-compare bench-streams bench-agree bench-estimate bench-eval bench-tui bench-fit \
        test-real
all: $(GPUMOD) $(FAKELLM) $(HELPERS)

help:
	@echo "make            build gpumod and the test fakes into $(BUILD)/"
	@echo "make demo       install what is missing, build, run gpumod on examples/demo"
	@echo "make test       install what is missing, build, run every unit and e2e test"
	@echo "make asan       the whole suite under ASan+UBSan (build-asan/)"
	@echo "make valgrind   the whole suite under valgrind (no timing assertions)"
	@echo "make install    PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)"
	@echo "make bench-startup  gpumod --version start-up time against /bin/true"
	@echo "make bench-preflight  gpumod preflight process time against /bin/true, with a breakdown"
	@echo "make bench-status  gpumod status round trip against a running daemon with 2 services"
	@echo "make bench-mcp  N (2000) tools/call gpu_status over one gpumod mcp's pipe, beside ping and the daemon's GET /status"
	@echo "make bench-cycles  N (100) start/stop cycles: the daemon's fds, children, memory after 1, 10, N; where a start's time goes beside the engine's own load"
	@echo "make bench-switch  N (50) mode switches between instantly-loading fakes: orchestration overhead; then ROUNDS (5) round trips with sleep/wake against cold"
	@echo "make bench-proxy  fakellm streams direct, through the router and through nginx: added latency, throughput, CPU"
	@echo "make bench-compare  bench-switch and bench-proxy medians of BASE (default: the commit before issue 16) beside this tree's, ROUNDS (3) interleaved"
	@echo "make bench-streams  one gpumod-bench process, 1,000 concurrent streams: its CPU, lags, client_bound verdict"
	@echo "make bench-eval  one gpumod eval process, 64 items in flight against fakellm: items/s, CPU per item, the self-check"
	@echo "make bench-fit  model fit of 20 quantisations behind the fake Hub: bytes fetched, seconds (targets 2 %, 2 s)"
	@echo "make bench-tui  N (200) events while gpumod tui runs in tmux: event-to-screen latency median/p90/max"
	@echo "make bench-agree  gpumod-bench's TTFT, TPOT and throughput against fakellm's own log (within 2 %, 2 ms)"
	@echo "make bench-estimate  the estimator beside llama-server's own bytes, for every recorded run"
	@echo "make test-real  gpumod-bench, the canary, eval, tune and router mode against a real llama-server (LLAMA_SERVER=/path/to/llama-server; else skipped)"
	@echo "make fuzz       the GGUF, HTTP and model-scanner parsers under libFuzzer, FUZZ_SECONDS (600) each"

deps:
	@scripts/install-deps

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/libgpumod.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(GPUMOD): $(BUILD)/obj/src/main.o $(BUILD)/libgpumod.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BENCH_LIB): $(BENCH_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/gpumod-bench: $(BUILD)/obj/src/helper.o $(BUILD)/obj/src/bench/main.o $(BENCH_LIB) $(BUILD)/libgpumod.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(CURL_LIBS) -lpthread

$(MCP_LIB): $(MCP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/gpumod-mcp: $(BUILD)/obj/src/mcp/main.o $(MCP_LIB) $(BUILD)/libgpumod.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

$(TUI_OBJ): ALL_CFLAGS += $(NCURSES_CFLAGS)
$(BUILD)/gpumod-tui: $(TUI_OBJ) $(BUILD)/libgpumod.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(NCURSES_LIBS) -lpthread

$(BUILD)/tests/%: tests/unit/%.c $(BENCH_LIB) $(MCP_LIB) $(BUILD)/libgpumod.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(BENCH_LIB) $(MCP_LIB) $(BUILD)/libgpumod.a $(ALL_LDFLAGS) $(PKG_LIBS) $(CURL_LIBS) -lcmocka -lpthread

$(LLHTTP_SRC) $(LLHTTP_DIR)/include/llhttp/llhttp.h $(PROMTOOL):
	@scripts/install-deps --test-cache $(CACHE)

$(MCP_SDK): tests/mcp/package.json tests/mcp/package-lock.json
	@scripts/install-deps --test-cache $(CACHE)

$(BUILD)/obj/llhttp/%.o: $(LLHTTP_DIR)/llhttp/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -w $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-sanitize-recover=all) \
	    -I$(LLHTTP_DIR)/include/llhttp -c -o $@ $<

LLHTTP_OBJ := $(LLHTTP_SRC:$(LLHTTP_DIR)/llhttp/%.c=$(BUILD)/obj/llhttp/%.o)
FAKE_OBJ   := $(FAKE_SRC:%.c=$(BUILD)/obj/%.o)
$(FAKE_OBJ): ALL_CFLAGS += -I$(LLHTTP_DIR)/include/llhttp
$(FAKE_OBJ): | $(LLHTTP_DIR)/include/llhttp/llhttp.h

$(FAKELLM): $(FAKE_OBJ) $(LLHTTP_OBJ) $(BUILD)/libgpumod.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lm
	ln -sf fakellm $(BUILD)/llama-bench

unit: $(UNIT_BIN)

$(BUILD)/bench-startup: tests/bench/startup.c
	$(CC) -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -o $@ $<

# preflight as a process (ExecStartPre= runs it before every start), with
# the breakdown of where its time goes.
bench-preflight: $(GPUMOD) $(BUILD)/bench-startup
	@BUILD=$(BUILD) N=$${N:-2000} scripts/bench-preflight

# `gpumod status` against a running daemon (started and stopped by the
# script), beside /bin/true and --version in the same run.
bench-status: $(GPUMOD) $(FAKELLM) $(BUILD)/gpumod-exec $(BUILD)/bench-startup
	@BUILD=$(BUILD) N=$${N:-2000} scripts/bench-status

# tools/call gpu_status over one gpumod mcp's stdio pipe, beside ping over
# the pipe and the same daemon's GET /status on its socket, one driver
# (tests/bench/mcp-rtt.py), one run; figures in docs/mcp.md.
bench-mcp: $(GPUMOD) $(FAKELLM) $(HELPERS) $(BUILD)/gpumod-exec
	@BUILD=$(BUILD) N=$${N:-2000} scripts/bench-mcp

# N start/stop cycles of one fakellm service through a daemon (started and
# stopped by the script): fails when the daemon's fds or children after
# cycle N differ from after cycle 1.  VALGRIND=1: the daemon under valgrind.
bench-cycles: $(GPUMOD) $(FAKELLM) $(BUILD)/gpumod-exec
	@BUILD=$(BUILD) N=$${N:-100} scripts/bench-cycles

# then the sleep/wake case (scripts/bench-switch-tiers): ROUNDS (5) round
# trips between two vLLM fakes with sleep_mode l1 against none, the plan's
# choice and the switch time side by side (docs/modes.md "Timing")
bench-switch: $(GPUMOD) $(FAKELLM) $(BUILD)/gpumod-exec $(BUILD)/fakes/libnvidia-ml.so.1 $(BUILD)/fakes/nvidia-smi
	@BUILD=$(BUILD) N=$${N:-50} scripts/bench-switch
	@BUILD=$(BUILD) ROUNDS=$${ROUNDS:-5} scripts/bench-switch-tiers

# `model fit` of 20 quantisations behind the fake Hub: bytes fetched and
# wall time, beside local `model inspect` of the same files; docs/models.md.
bench-fit: $(GPUMOD) $(HELPERS)
	@BUILD=$(BUILD) N=$${N:-5} scripts/bench-fit

bench-tui: $(GPUMOD) $(FAKELLM) $(BUILD)/gpumod-exec $(BUILD)/gpumod-tui
	@BUILD=$(BUILD) N=$${N:-200} scripts/bench-tui

# The same fakellm measured by gpumod-bench directly, through the router
# and through nginx (Debian's binary, unpacked into $(CACHE)); figures in
# docs/proxy-bench.md.
bench-proxy: $(GPUMOD) $(FAKELLM) $(HELPERS) $(BUILD)/gpumod-exec
	@scripts/install-deps --test-cache $(CACHE)
	@BUILD=$(BUILD) NGINX=$(abspath $(CACHE))/nginx/usr/sbin/nginx scripts/bench-proxy

# bench-switch and bench-proxy of a base commit (BASE, default 3680a30^:
# the commit before issue 16) beside this tree's, interleaved in ROUNDS
# (3) in one run: a temp git worktree of BASE built with its own Makefile;
# a table of the medians, ratio and "within 5 %" (docs/proxy-bench.md
# "Against another commit").  N (100) switches and N1 (40) requests a run.
bench-compare: $(GPUMOD) $(FAKELLM) $(HELPERS) $(BUILD)/gpumod-exec
	@BUILD=$(BUILD) CACHE=$(abspath $(CACHE)) scripts/bench-compare

# One gpumod-bench process against 1,000 concurrent fakellm streams: its
# CPU, lags and client_bound verdict (docs/bench.md "Client capacity").
bench-streams: $(FAKELLM) $(HELPERS)
	@BUILD=$(BUILD) N=$${N:-1000} scripts/bench-streams

# One gpumod eval process keeping 64 items in flight against fakellm: items/s
# against the ideal, CPU per item, the self-check, bench's beside it
# (docs/eval.md "Client capacity").
bench-eval: $(FAKELLM) $(HELPERS)
	@BUILD=$(BUILD) N=$${N:-1280} scripts/bench-eval

# The estimator beside the bytes a real llama-server logged for each
# recorded run (CPU runs on this kind of VM, H200 runs on the lent GPU
# machine; docs/estimate.md), a line each; test_estimate pins them.
bench-estimate: $(BUILD)/tests/test_estimate
	@echo "machine: $$(nproc) cores, $$(awk '/MemTotal/{printf "%.0f GiB", $$2/1048576}' /proc/meminfo), $$(uname -sr)"
	@echo "estimate / llama-server bytes (recorded runs, docs/estimate.md 'Measured'); GPU lines: the device's weights + KV + compute"
	@GPUMOD_SRC=$(CURDIR) GPUMOD_ESTIMATE_REPORT=1 CMOCKA_MESSAGE_OUTPUT=TAP $(BUILD)/tests/test_estimate | grep '^# [A-Z]'

# gpumod-bench's TTFT, TPOT and throughput against fakellm's request log at
# concurrency 1 and 64: load-dependent, so judged here, not in make test
# (docs/bench.md; tests/e2e/t80-bench-agree.sh checks causality and counts).
bench-agree: $(FAKELLM) $(HELPERS)
	@BUILD=$(BUILD) TRIES=$${TRIES:-3} scripts/bench-agree

# Opt-in: gpumod-bench against a real llama-server with a model from
# tests/fixtures/models/ (LLAMA_SERVER=/path/to/llama-server; without it the
# script says how and passes as skipped).
test-real: $(GPUMOD) $(HELPERS)
	@BUILD=$(BUILD) LLAMA_SERVER=$(LLAMA_SERVER) tests/real/bench-real.sh
	@BUILD=$(BUILD) LLAMA_SERVER=$(LLAMA_SERVER) tests/real/canary-real.sh
	@BUILD=$(BUILD) LLAMA_SERVER=$(LLAMA_SERVER) tests/real/eval-real.sh
	@BUILD=$(BUILD) LLAMA_SERVER=$(LLAMA_SERVER) tests/real/tune-real.sh
	@BUILD=$(BUILD) LLAMA_SERVER=$(LLAMA_SERVER) tests/real/router-real.sh

# Start-up cost of the CLI against /bin/true, same machine, same run.
bench-startup: $(GPUMOD) $(BUILD)/bench-startup
	@echo "machine: $$(nproc) cores, $$(awk '/MemTotal/{printf "%.0f GiB", $$2/1048576}' /proc/meminfo), $$(uname -sr)"
	@$(BUILD)/bench-startup $${N:-2000} -- /bin/true -- $(GPUMOD) --version

test: deps
	@$(MAKE) --no-print-directory all unit $(PROMTOOL) $(MCP_SDK)
	@PROMTOOL=$(abspath $(PROMTOOL)) MCP_SDK_DIR=$(abspath $(CACHE))/mcp-sdk BUILD=$(BUILD) tests/run

# every target that runs the daemon builds what the daemon runs: the
# exec helper each service starts under (and the fakes the demo serves)
demo: deps
	@$(MAKE) --no-print-directory $(GPUMOD) $(FAKELLM) $(BUILD)/gpumod-exec
	@BUILD=$(BUILD) scripts/demo

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=address,undefined CFLAGS='-O1 -g' all unit $(PROMTOOL) $(MCP_SDK)
	@PROMTOOL=$(abspath $(PROMTOOL)) MCP_SDK_DIR=$(abspath $(CACHE))/mcp-sdk ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 \
	 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	 GPUMOD_TEST_TIME_SCALE=$${GPUMOD_TEST_TIME_SCALE:-3} BUILD=build-asan tests/run

valgrind: deps
	@$(MAKE) --no-print-directory BUILD=build-vg CFLAGS='-O0 -g' all unit $(PROMTOOL) $(MCP_SDK)
	@PROMTOOL=$(abspath $(PROMTOOL)) MCP_SDK_DIR=$(abspath $(CACHE))/mcp-sdk GPUMOD_VALGRIND=1 GPUMOD_TEST_TIME_SCALE=$${GPUMOD_TEST_TIME_SCALE:-20} BUILD=build-vg tests/run

# the daemon's user unit, with the installed binary's path (docs/systemd.md)
SYSTEMD_USER_DIR ?= $(PREFIX)/lib/systemd/user

install: $(GPUMOD) $(HELPERS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(SYSTEMD_USER_DIR)
	sed 's|@BINDIR@|$(BINDIR)|g' share/systemd/gpumod.service.in >$(DESTDIR)$(SYSTEMD_USER_DIR)/gpumod.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_USER_DIR)/gpumod.service
	install -m 0755 $(GPUMOD) $(DESTDIR)$(BINDIR)/gpumod
	$(if $(HELPERS),install -m 0755 $(HELPERS) $(DESTDIR)$(LIBEXECDIR)/)
	install -m 0644 docs/gpumod.1 $(DESTDIR)$(MANDIR)/man1/gpumod.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpumod $(DESTDIR)$(MANDIR)/man1/gpumod.1 $(DESTDIR)$(SYSTEMD_USER_DIR)/gpumod.service
	rm -rf $(DESTDIR)$(LIBEXECDIR)

clean:
	rm -rf build build-asan build-vg build-fuzz

include mk/fakes.mk
include mk/fuzz.mk
include mk/http.mk
include mk/exec.mk
all: $(FAKES)

-include $(shell find $(BUILD)/obj $(BUILD)/tests $(BUILD)/fakes -name '*.d' 2>/dev/null)
