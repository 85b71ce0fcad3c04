#!/usr/bin/env bash
# tests/real/router-real.sh - llama.cpp router mode through gpumod against
# a real llama-server (opt-in: `make test-real LLAMA_SERVER=/path/to/llama-server`).
#
# One router-mode service (unit_vars.models_dir holding the two tiny
# models, models_max 1, sleep_mode router): gpumod loads and unloads each
# model (`gpumod service load|unload`), a request through gpumod's router
# reaches each model (the one not loaded is loaded through the gate
# first), and `gpumod service sleep` unloads every model while the router
# process stays; the next request wakes it.  Without LLAMA_SERVER it
# prints how to run it and passes as skipped.  Output is TAP.
. "$(dirname "$0")/../e2e/lib.sh"

MODELS=${GPUMOD_MODELS_DIR:-$GPUMOD_SRC/tests/fixtures/models}

if [ -z "${LLAMA_SERVER:-}" ]; then
    echo "# LLAMA_SERVER is not set: nothing to run against."
    echo "# run: make test-real LLAMA_SERVER=/path/to/llama-server   (a llama.cpp build's bin/llama-server)"
    t_skip "router mode against a real llama-server" "skipped: LLAMA_SERVER is not set"
    t_done
    exit
fi
[ -x "$LLAMA_SERVER" ] || { echo "Bail out! $LLAMA_SERVER is not an executable"; exit 1; }
for m in aidreams260K-f32 llama-2-tiny-random; do
    [ -r "$MODELS/$m.gguf" ] || { echo "Bail out! model $MODELS/$m.gguf not found (GPUMOD_MODELS_DIR names the directory)"; exit 1; }
done
command -v jq >/dev/null || { echo "Bail out! jq is missing (scripts/install-deps)"; exit 1; }
"$LLAMA_SERVER" --help 2>&1 | grep -q -- --models-dir ||
    { echo "Bail out! $LLAMA_SERVER has no router mode (--models-dir): llama.cpp from late 2025 or newer"; exit 1; }

C=$T/config
mkdir -p "$C/presets" "$T/models"
cp "$MODELS/aidreams260K-f32.gguf" "$MODELS/llama-2-tiny-random.gguf" "$T/models/"
export GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=/nonexistent/nvidia-smi
export LD_LIBRARY_PATH=$(dirname "$LLAMA_SERVER")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
RPORT=$(free_port)
printf 'drivers:\n  llamacpp: {binary: %s}\nrouter: {listen: "127.0.0.1:%s", activation: start}\nsupervisor: {startup_timeout: 120s}\n' \
    "$LLAMA_SERVER" "$RPORT" >"$C/gpumod.yaml"
EPORT=$(free_port)
printf 'id: rm\ndriver: llamacpp\nport: %s\nsleep_mode: router\nunit_vars: {models_dir: %s, models_max: 1, n_gpu_layers: 0, threads: 1}\n' \
    "$EPORT" "$T/models" >"$C/presets/rm.yaml"
mstate() { gpumod service show rm --json 2>/dev/null | jq -r --arg m "$1" '.models[]? | select(.id == $m) | .state'; }
mstate_is() { [ "$(mstate "$1")" = "$2" ]; }
ask() { # MODEL -> the HTTP status; the body in $T/a
    curl -s -o "$T/a" -w '%{http_code}' --max-time 120 "http://127.0.0.1:$RPORT/v1/chat/completions" \
        -H 'content-type: application/json' \
        -d "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":8}"
}

t_spawn daemon "$GPUMOD_BIN" serve --foreground
t_wait 10 gpumod status || t_fail "the daemon never answered"

t_begin "the router-mode service starts and lists both models, unloaded"
t_run 0 gpumod service start rm --timeout 120
t_wait 10 mstate_is aidreams260K-f32 unloaded || t_fail "models: $(gpumod service show rm --json | jq -c .models)"
t_eq "$(mstate llama-2-tiny-random)" unloaded "tiny-random"
t_end

t_begin "service load and unload through gpumod"
t_run 0 gpumod service load rm aidreams260K-f32
t_eq "$(mstate aidreams260K-f32)" loaded "aidreams after load"
t_run 0 gpumod service unload rm aidreams260K-f32
t_eq "$(mstate aidreams260K-f32)" unloaded "aidreams after unload"
t_end

t_begin "a request to each model through the router (each loaded on demand, models_max 1)"
t_eq "$(ask aidreams260K-f32)" 200 "aidreams: $(head -c 300 "$T/a")"
t_eq "$(jq -r '.choices[0].message.content | length > 0' "$T/a")" true "aidreams answered"
t_eq "$(ask llama-2-tiny-random)" 200 "tiny-random: $(head -c 300 "$T/a")"
t_wait 20 mstate_is aidreams260K-f32 unloaded || t_fail "aidreams is still $(mstate aidreams260K-f32) past models_max 1"
t_eq "$(mstate llama-2-tiny-random)" loaded "tiny-random"
t_end

t_begin "service sleep unloads every model; the next request wakes it"
t_run 0 gpumod service sleep rm
t_eq "$(gpumod service show rm --json | jq -r .state)" sleeping "state"
# the engine itself: no model loaded or loading, the router process still up
curl -s --max-time 10 "http://127.0.0.1:$EPORT/models" >"$T/em"
t_eq "$(jq '[.data[] | select(.status.value != "unloaded")] | length' "$T/em")" 0 "models the engine holds asleep"
t_eq "$(ask aidreams260K-f32)" 200 "after the sleep: $(head -c 300 "$T/a")"
t_eq "$(gpumod service show rm --json | jq -r .state)" ready "state after the request"
t_end

gpumod service stop rm >/dev/null 2>&1
kill -TERM "$_t_last_pid" 2>/dev/null
t_done
