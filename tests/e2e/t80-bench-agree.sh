#!/usr/bin/env bash
# t80-bench-agree: gpumod-bench's timestamps are consistent with what the
# server did.  fakellm with a scripted first-token delay (FAKELLM_TTFT_MS=50)
# and token rate (FAKELLM_TPS=50) logs, for each request, its X-Request-Id
# and the CLOCK_MONOTONIC times it received it, wrote its first token,
# wrote its last token and ended the answer (FAKELLM_LOG_REQUESTS=1).
# gpumod-bench runs at concurrency 1 and then 64 (one wave) with --raw;
# scripts/bench-agree-join.py joins each measured request with fakellm's
# line for it (bench sends X-Request-Id PREFIX-I for the I-th measured
# request, PREFIX-wK for warmup; PREFIX holds bench's pid, so it selects
# this run's lines) on one clock (CLOCK_MONOTONIC: the document's
# w_start_mono_ms), waiting for fakellm's lines (written once each answer
# is out), and asserts what no load can change:
#   - fakellm logged exactly the run's measured requests, GEN tokens each;
#   - causality, exactly: t_send <= fakellm's receive, and fakellm's
#     first-token and last-token writes <= bench's t_first and t_last.
# The TTFT, TPOT and throughput agreement (within max(2 %, 2 ms)) depends
# on the machine's load: printed here, judged by make bench-agree
# (scripts/bench-agree, docs/bench.md).
. "$(dirname "$0")/lib.sh"

BENCH=$BUILD/gpumod-bench
MODEL=$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE
GEN=16

command -v python3 >/dev/null || { t_skip "bench agrees with fakellm's log" "python3 is missing"; t_done; exit; }

# bench ARGS...: gpumod-bench (valgrind-wrapped when asked), 2 minutes at most
# (scaled); its pid (the shell's, which execs it: valgrind keeps the pid)
# in $T/bench.pid: its X-Request-Ids begin gpumod-bench-PID-
bench() {
    local vg=()
    [ -n "${GPUMOD_VALGRIND:-}" ] &&
        vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
    timeout $((120 * S)) sh -c 'echo $$ >"$0"; exec "$@"' "$T/bench.pid" "${vg[@]}" "$BENCH" "$@"
}

PF=$(free_port)
t_begin "fakellm with a scripted TTFT and token rate answers"
fakellm_spawn fk FAKELLM_TTFT_MS=50 FAKELLM_TPS=50 FAKELLM_LOG_REQUESTS=1 -- -m "$MODEL" --port "$PF" -np 64 -c $((64 * 512))
wait_healthy "$PF" || t_fail "fakellm never came up on $PF"
t_end

JOIN=$GPUMOD_SRC/scripts/bench-agree-join.py

# concurrency 1: 12 requests after one warmup; concurrency 64: one wave of 64
for c in 1 64; do
    if [ "$c" = 1 ]; then r=12 w=1; else r=64 w=0; fi
    t_begin "concurrency $c: every request joins fakellm's log, causality holds (send before receive, tokens after writes)"
    t_run 0 bench "http://127.0.0.1:$PF" --model m --concurrency "$c" --requests "$r" --warmup "$w" \
        --gen-tokens "$GEN" --iterations 1 --no-store -q --raw --json "$T/c$c.json"
    t_jq "$T/c$c.json" '.points[0].iterations[0].completed' "$r"
    t_jq "$T/c$c.json" '.points[0].iterations[0].tokens_out' $((r * GEN))
    t_jq "$T/c$c.json" '.points[0].iterations[0].requests | length' "$r"
    python3 "$JOIN" --wait $((5 * S)) --prefix "gpumod-bench-$(cat "$T/bench.pid")-0-0-" "$T/fk.log" "$T/c$c.json" "$c" "$GEN" >"$T/join.out" 2>&1 ||
        t_fail "bench's requests do not join fakellm's log at concurrency $c"
    cat "$T/join.out"
    t_end
done

t_begin "fakellm stops cleanly"
stop_all_clean
t_end

t_done
