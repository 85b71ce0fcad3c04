#!/usr/bin/env bash
# tests/real/canary-real.sh - the canary against a real llama-server
# (opt-in: `make test-real LLAMA_SERVER=/path/to/llama-server`).
#
# llama-2-tiny-random.gguf has random weights: its answers are random
# tokens, so its canary must fail (docs/canary.md): the start ends failed,
# the canary event names the prompt and what came back, nothing restarts
# it, and a mode switch that starts it rolls back to the mode before.
# aidreams260K-f32.gguf (a real 260K-parameter story model) cannot do
# arithmetic either; it is the mode the switch comes from, without a canary.
# Without LLAMA_SERVER it prints how to run it and passes as skipped.
# Output is TAP (tests/e2e/lib.sh).
. "$(dirname "$0")/../e2e/lib.sh"

MODELS=${GPUMOD_MODELS_DIR:-$GPUMOD_SRC/tests/fixtures/models}
RANDOM_MODEL=$MODELS/llama-2-tiny-random.gguf
STORY_MODEL=$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf

if [ -z "${LLAMA_SERVER:-}" ]; then
    echo "# LLAMA_SERVER is not set: nothing to run against."
    echo "# run: make test-real LLAMA_SERVER=/path/to/llama-server   (a llama.cpp build's bin/llama-server)"
    t_skip "the canary against a real llama-server" "skipped: LLAMA_SERVER is not set"
    t_done
    exit
fi
[ -x "$LLAMA_SERVER" ] || { echo "Bail out! $LLAMA_SERVER is not an executable"; exit 1; }
[ -r "$RANDOM_MODEL" ] || { echo "Bail out! model $RANDOM_MODEL not found (GPUMOD_MODELS_DIR names the directory)"; exit 1; }
command -v jq >/dev/null || { echo "Bail out! jq is missing (scripts/install-deps)"; exit 1; }

C=$T/config
mkdir -p "$C/presets" "$C/modes"
export GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=/nonexistent/nvidia-smi
# the binary's own directory holds its shared libraries
export LD_LIBRARY_PATH=$(dirname "$LLAMA_SERVER")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
printf 'drivers:\n  llamacpp: {binary: %s}\nrouter: {enabled: false}\nsupervisor: {startup_timeout: 120s, max_restarts: 3, backoff_initial: 100ms}\n' \
    "$LLAMA_SERVER" >"$C/gpumod.yaml"
preset() { # ID MODEL EXTRA...
    local id=$1 model=$2; shift 2
    { printf 'id: %s\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 512\n' "$id" "$(free_port)" "$model"
      printf 'unit_vars: {n_gpu_layers: 0, threads: 1}\n'
      printf '%s\n' "$@"; } >"$C/presets/$id.yaml"
}
preset random "$RANDOM_MODEL" 'canary: true'
preset story "$STORY_MODEL"
printf 'id: S\nservices: [story]\n' >"$C/modes/S.yaml"
printf 'id: R\nservices: [random]\n' >"$C/modes/R.yaml"

t_spawn daemon "$GPUMOD_BIN" serve --foreground
t_wait 10 gpumod status || t_fail "the daemon never answered"

t_begin "tiny-random's canary fails: the start fails, the canary event says what came back, no restart"
t_run 1 gpumod service start random --timeout 300
t_has err "failed its canary"
t_eq "$(gpumod service show random --json | jq -r .state)" failed "state"
gpumod events --json --service random | jq -c '.events[] | select(.kind == "canary" and .data != null) | .data' >"$T/can"
t_eq "$(jq -r .ok "$T/can")" false "canary verdict"
echo "# canary: $(jq -r .why "$T/can")"
sleep 1
t_eq "$(gpumod events --json --service random | jq '[.events[] | select(.kind == "spawn")] | length')" 1 "spawns"
t_end

t_begin "a switch to a mode with it rolls back to the mode before"
t_run 0 gpumod mode switch S
t_run 1 gpumod mode switch R
t_has err "rolled back: the host is in mode 'S'"
t_eq "$(gpumod service show story --json | jq -r .state)" ready "story"
t_end

gpumod mode switch none >/dev/null 2>&1
kill -TERM "$_t_last_pid" 2>/dev/null
t_done
