#!/usr/bin/env bash
# t84-bench-streams: one gpumod-bench process drives 1,000 concurrent
# streams against fakellm (--parallel 1000, 10 tokens/s each: 10,000
# tokens/s in all): every request completes, the peak in flight is 1,000
# and the self-check is in the document.  Whether the client was the
# bottleneck (client_bound) depends on the machine's load, so it is never
# asserted here: `make bench-streams` prints it with the figures that
# docs/bench.md "Client capacity" records.  Skipped under valgrind.
. "$(dirname "$0")/lib.sh"

BENCH=$BUILD/gpumod-bench
MODEL=$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE
N=1000

if [ -n "${GPUMOD_VALGRIND:-}" ]; then
    t_skip "gpumod-bench drives $N concurrent streams" "a capacity test: not under valgrind"
    t_done
    exit
fi

PF=$(free_port)
t_begin "fakellm with $N slots answers"
fakellm_spawn fk FAKELLM_TTFT_MS=100 FAKELLM_TPS=10 -- -m "$MODEL" --port "$PF" -np "$N" -c $((N * 256))
wait_healthy "$PF" || t_fail "fakellm never came up on $PF"
t_end

t_begin "one gpumod-bench process drives $N concurrent streams to the end, with its self-check"
t_run 0 timeout $((120 * S)) "$BENCH" "http://127.0.0.1:$PF" --model m --concurrency "$N" --requests $((2 * N)) \
    --warmup 0 --iterations 1 --gen-tokens 20 --prompt-tokens 32 --no-store -q --json "$T/r.json"
it='.points[0].iterations[0]'
t_jq "$T/r.json" "$it.completed" $((2 * N))
t_jq "$T/r.json" "$it.failed" 0
t_jq "$T/r.json" "$it.tokens_out" $((2 * N * 20))
t_jq "$T/r.json" "$it.self_check.max_in_flight" "$N"
t_jq "$T/r.json" "$it.concurrency_peak" "$N"
t_jq "$T/r.json" "$it.self_check.client_bound | type" boolean
jq -r "$it"' | "# \(.completed) requests, \(.tokens_out) tokens in \(.window_s) s: \(.out_tput) tok/s, \(.req_tput) req/s, concurrency avg \(.concurrency_avg) peak \(.concurrency_peak)",
    "# client: cpu \(.self_check.cpu_pct) % of one core (user \(.self_check.user_s) s, sys \(.self_check.sys_s) s, wall \(.self_check.wall_s) s), \(.self_check.bytes_per_s) B/s",
    "# loop lag ms: p50 \(.self_check.loop_lag_ms.p50) p99 \(.self_check.loop_lag_ms.p99) max \(.self_check.loop_lag_ms.max); sched lag ms: p50 \(.self_check.sched_lag_ms.p50) p99 \(.self_check.sched_lag_ms.p99) max \(.self_check.sched_lag_ms.max)",
    "# ttft ms p50 \(.metrics.ttft_ms.p50) p99 \(.metrics.ttft_ms.p99); itl_chunk ms p50 \(.metrics.itl_chunk_ms.p50) p99 \(.metrics.itl_chunk_ms.p99); warnings \(.self_check.warnings)"' \
    "$T/r.json" 2>&1
t_end

t_begin "fakellm stops cleanly"
stop_all_clean
t_end

t_done
