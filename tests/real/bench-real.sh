#!/usr/bin/env bash
# tests/real/bench-real.sh - gpumod-bench against a real llama-server
# (opt-in: `make test-real LLAMA_SERVER=/path/to/llama-server`).
#
# Starts LLAMA_SERVER on a free port with a tiny real model from
# tests/fixtures/models/ (or GPUMOD_MODELS_DIR; llama-2-tiny-random.gguf: n_ctx_train 4096, so the
# context sweep fits; random weights: nothing asserts on wording), then:
#   - a concurrency sweep 1,2 with 6 requests of 16 tokens per point:
#     every request completes, every iteration's tokens_out is 6 x 16, and
#     the server-side delta (llamacpp:tokens_predicted_total scraped before
#     and after, server.predicted_tokens) equals the client's tokens_out;
#   - a context sweep 64:256:64 (64 tokens per depth: a 16-token decode of
#     this model lasts ~0.3 ms, and one scheduler hiccup on a shared machine
#     then reads as a "degraded" server): a point per depth, each "ok", each
#     with the 64 tokens the server counted, and the server's predicted
#     tokens equal the client's where the document carries a server delta.
# Without LLAMA_SERVER it prints how to run it and passes as skipped.
# Output is TAP (tests/e2e/lib.sh).
. "$(dirname "$0")/../e2e/lib.sh"

BENCH=$BUILD/gpumod-bench
MODELS=${GPUMOD_MODELS_DIR:-$GPUMOD_SRC/tests/fixtures/models}
MODEL=$MODELS/llama-2-tiny-random.gguf
S=$GPUMOD_TEST_TIME_SCALE

if [ -z "${LLAMA_SERVER:-}" ]; then
    echo "# LLAMA_SERVER is not set: nothing to run against."
    echo "# run: make test-real LLAMA_SERVER=/path/to/llama-server   (a llama.cpp build's bin/llama-server)"
    t_skip "gpumod-bench against a real llama-server" "skipped: LLAMA_SERVER is not set"
    t_done
    exit
fi
for f in "$LLAMA_SERVER" "$BENCH"; do
    [ -x "$f" ] || { echo "Bail out! $f is not an executable (LLAMA_SERVER, or make BUILD=... all)"; exit 1; }
done
[ -r "$MODEL" ] || { echo "Bail out! model $MODEL not found (GPUMOD_MODELS_DIR names the directory)"; exit 1; }
command -v jq >/dev/null || { echo "Bail out! jq is missing (scripts/install-deps)"; exit 1; }

P=$(free_port)
URL=http://127.0.0.1:$P

t_begin "llama-server starts with $(basename "$MODEL") and answers /health"
t_spawn llama "$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$P" -c 4096 -np 2 --metrics -t 1 --no-webui
t_wait 60 curl -sf -o /dev/null "$URL/health" ||
    { t_fail "llama-server did not answer $URL/health within 60 s"; tail -n 20 "$T/llama.log" | sed 's/^/#   llama: /'; }
t_end

# bench ARGS...: gpumod-bench against the server, within 5 minutes (scaled)
bench() {
    timeout $((300 * S)) "$BENCH" "$URL" --model "$(basename "$MODEL")" --no-store -q "$@"
}

t_begin "a concurrency sweep 1,2 completes and the server's token count agrees with the client's"
t_run 0 bench --concurrency 1,2 --requests 6 --gen-tokens 16 --iterations 1 --json "$T/sweep.json"
t_jq "$T/sweep.json" '[.points[].x] | map(tostring) | join(",")' "1,2"
t_jq "$T/sweep.json" '[.points[].iterations[] | .completed] | map(tostring) | join(",")' "6,6"
t_jq "$T/sweep.json" '[.points[].iterations[] | .failed] | map(tostring) | join(",")' "0,0"
t_jq "$T/sweep.json" '[.points[].iterations[] | .tokens_out] | map(tostring) | join(",")' "96,96"
t_jq "$T/sweep.json" '[.points[].iterations[] | .server.predicted_tokens] | map(tostring) | join(",")' "96,96"
t_jq "$T/sweep.json" '[.points[].iterations[] | select(.server.predicted_tokens != .tokens_out)] | length' "0"
t_jq "$T/sweep.json" '[.points[].iterations[] | .out_tput > 0] | all' "true"
t_jq "$T/sweep.json" '.target.flavor' "llamacpp"
jq -r '.points[] | "# concurrency \(.x): out_tput \(.iterations[0].out_tput) tok/s, ttft p50 \(.iterations[0].metrics.ttft_ms.p50) ms, tpot p50 \(.iterations[0].metrics.tpot_ms.p50) ms, server predicted \(.iterations[0].server.predicted_tokens), client \(.iterations[0].tokens_out)"' \
    "$T/sweep.json" 2>/dev/null
t_end

t_begin "a context sweep 64:256:64 completes with a point per depth"
t_run 0 bench --ctx-sweep 64:256:64 --gen-tokens 64 --json "$T/ctx.json"
t_jq "$T/ctx.json" '.kind' "ctx_sweep"
t_jq "$T/ctx.json" '[.points[] | .x] | map(tostring) | join(",")' "64,128,192,256"
t_jq "$T/ctx.json" '[.points[].iterations[] | .status] | unique | join(",")' "ok"
t_jq "$T/ctx.json" '[.points[].iterations[] | .n_out] | unique | map(tostring) | join(",")' "64"
# where the document carries the server's delta, it equals the client's count
t_jq "$T/ctx.json" '[.points[].iterations[] | select(.server != null and .server.predicted_tokens != null)
                     | select(.server.predicted_tokens != .tokens_out)] | length' "0"
jq -r '.points[] | "# depth \(.x): \(.iterations[0] | del(.requests, .memory, .self_check) | tostring | .[0:300])"' \
    "$T/ctx.json" 2>/dev/null
t_end

t_begin "llama-server stops on SIGTERM"
kill -TERM "$(cat "$T/llama.pid")"
reap "$(cat "$T/llama.pid")" 20 || t_fail "llama-server still runs 20 s after SIGTERM"
t_end

t_done
