#!/usr/bin/env bash
# tests/real/eval-real.sh - gpumod eval against a real llama-server
# (opt-in: `make test-real LLAMA_SERVER=/path/to/llama-server`).
#
# llama-2-tiny-random.gguf has random weights, so the shipped smoke suite
# (examples/eval/smoke.yaml, 12 items, every scorer but the judge) must
# score it near 0, with a Wilson interval that says so: over 3
# repetitions at most 10 % passed and the interval's upper end under
# 35 %.  Every item is answered (no errors): what fails is the model, not
# the transport.  Without LLAMA_SERVER it prints how to run it and passes
# as skipped.  Output is TAP (tests/e2e/lib.sh).
. "$(dirname "$0")/../e2e/lib.sh"

MODELS=${GPUMOD_MODELS_DIR:-$GPUMOD_SRC/tests/fixtures/models}
MODEL=$MODELS/llama-2-tiny-random.gguf
if [ -z "${LLAMA_SERVER:-}" ]; then
    echo "# LLAMA_SERVER is not set: nothing to run against."
    echo "# run: make test-real LLAMA_SERVER=/path/to/llama-server   (a llama.cpp build's bin/llama-server)"
    t_skip "gpumod eval against a real llama-server" "skipped: LLAMA_SERVER is not set"
    t_done
    exit
fi
[ -x "$LLAMA_SERVER" ] || { echo "Bail out! $LLAMA_SERVER is not an executable"; exit 1; }
[ -r "$MODEL" ] || { echo "Bail out! model $MODEL not found (GPUMOD_MODELS_DIR names the directory)"; exit 1; }
command -v jq >/dev/null || { echo "Bail out! jq is missing (scripts/install-deps)"; exit 1; }

P=$(free_port)
URL=http://127.0.0.1:$P
t_begin "llama-server starts with $(basename "$MODEL") and answers /health"
t_spawn llama "$LLAMA_SERVER" -m "$MODEL" --host 127.0.0.1 --port "$P" -c 4096 -np 4 -t 1 --no-webui
t_wait 60 curl -sf -o /dev/null "$URL/health" ||
    { t_fail "llama-server did not answer $URL/health within 60 s"; tail -n 20 "$T/llama.log" | sed 's/^/#   llama: /'; }
t_end

t_begin "the smoke suite scores the random model near 0, and the interval says so"
t_run 0 gpumod eval "$URL" --suite "$GPUMOD_SRC/examples/eval/smoke.yaml" -k 3 --max-tokens 64 \
    --json "$T/ev.json" --no-store -q
echo "# $(grep -m1 'passed' <<<"$(cat "$T/out" 2>/dev/null)")"
t_jq "$T/ev.json" '.summary.errors // ([.items[] | select(.state == "error")] | length)' 0
t_jq "$T/ev.json" '.summary.accuracy.est <= 0.10' true
t_jq "$T/ev.json" '.summary.accuracy.hi < 0.35' true
t_end

kill -TERM "$_t_last_pid" 2>/dev/null
t_done
