#!/usr/bin/env bash
# t102-router-models: llama.cpp router mode as a first-class service
# (issue 21).  fakellm plays llama-server --models-dir with three tiny
# models (--models-max 2): the daemon polls each model's state (service
# JSON "models", status, the router's /v1/models "model_state"); `gpumod
# service load|unload ID MODEL` loads and unloads through the gate; a load
# the gate refuses (the host's memory falls short) leaves the model
# unloaded; at models_max the engine unloads its least recently used one;
# a request through the router for an unloaded model loads it through the
# gate before it is forwarded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

# a /proc root of our own: healthy now, short of memory later
mkdir -p "$T/proc"
cp -r "$FIXTURES/proc/healthy/." "$T/proc/"
export GPUMOD_PROC_ROOT=$T/proc
P1=$(free_port)
mkdir -p "$T/models"
for m in alpha beta gamma; do ln -s "$MODEL" "$T/models/$m.gguf"; done
# the watchdog would stop the service when the host falls short: off
rsettings "" "memory: {watchdog: {mem_available_floor_mb: 0}}"
printf 'id: rm\ndriver: llamacpp\nport: %s\ncontext_size: 128\nunit_vars: {models_dir: %s, models_max: 2}\n' \
    "$P1" "$T/models" >"$C/presets/rm.yaml"
mstate() { gpumod service show rm --json 2>/dev/null | jq -r --arg m "$1" '.models[] | select(.id == $m) | .state'; }
mstate_is() { [ "$(mstate "$1")" = "$2" ]; }
ask() { rcurl "$T/o" "$RURL/v1/chat/completions" -d "$(chat "$1")"; }

daemon_start
t_run 0 gpumod service start rm

t_begin "the service JSON lists every model of the router-mode service with its state"
t_wait 10 mstate_is alpha unloaded || t_fail "alpha never showed as unloaded: $(gpumod service show rm --json | jq -c .models)"
t_eq "$(gpumod service show rm --json | jq -r '[.models[].id] | sort | join(",")')" alpha,beta,gamma "models"
t_end

t_begin "service load loads a model through the gate; status and /v1/models show it"
t_run 0 gpumod service load rm alpha
t_has out "loaded: rm loaded 'alpha'"
t_eq "$(mstate alpha)" loaded "alpha state"
t_run 0 gpumod status
t_has out "model alpha: loaded"
t_has out "model beta: unloaded"
rcurl "$T/v" "$RURL/v1/models" >/dev/null
t_eq "$(jq -r '.data[] | select(.id == "alpha") | .model_state' "$T/v")" loaded "/v1/models alpha"
t_eq "$(jq -r '.data[] | select(.id == "beta") | .model_state' "$T/v")" unloaded "/v1/models beta"
t_run 0 gpumod service load rm alpha --json
t_jq out .state loaded
t_end

t_begin "service unload unloads it"
t_run 0 gpumod service unload rm alpha
t_has out "unloaded: rm unloaded 'alpha'"
t_eq "$(mstate alpha)" unloaded "alpha state"
t_end

t_begin "errors: an unknown model (exit 2), a service not in router mode, no model given"
t_run 2 gpumod service load rm nosuch
t_has err "router-mode service 'rm' has no model 'nosuch'"
preset plain "$(free_port)"
t_run 0 gpumod reload
t_run 2 gpumod service load plain alpha
t_has err "service 'plain' is not a llama.cpp router-mode service"
t_run 2 gpumod service load rm
t_end

t_begin "a request for an unloaded model loads it through the gate first"
t_eq "$(ask beta)" 200 "chat to beta"
t_eq "$(mstate beta)" loaded "beta loaded"
t_has "$T/daemon.log" "model 'beta' admitted"
t_end

t_begin "models_max 2: a third load unloads the least recently used, and the gate counts it as freed"
t_run 0 gpumod service load rm alpha
t_run 0 gpumod service load rm gamma
t_has "$T/daemon.log" "models_max 2 reached: 'beta' is unloaded first"
t_wait 10 mstate_is beta unloaded || t_fail "beta still $(mstate beta)"
t_eq "$(mstate gamma)" loaded "gamma"
t_end

t_begin "a load the gate refuses leaves the model unloaded, and a request for it gets the refusal"
t_run 0 gpumod service unload rm gamma
# 1 MiB available: the model's estimate cannot pass (no eviction: one of 2 loaded)
cp -r "$FIXTURES/proc/short/." "$T/proc/"
sed -i 's/^MemAvailable:.*/MemAvailable:       1024 kB/' "$T/proc/meminfo"
t_run 1 gpumod service load rm beta
t_has err "refused: model 'beta' of 'rm'"
t_eq "$(mstate beta)" unloaded "beta"
t_eq "$(ask beta)" 409 "chat to beta"
t_jq "$T/o" .error.code gate_refused
cp -r "$FIXTURES/proc/healthy/." "$T/proc/"
t_end

t_begin "a load refused at once (its file removed after the engine listed it) answers the request; the daemon lives on"
rm "$T/models/beta.gguf"
t_eq "$(mstate beta)" unloaded "beta still listed"
t_eq "$(ask beta)" 404 "chat to beta"
t_has "$T/o" "beta"
t_eq "$(ask beta)" 404 "chat to beta again"
t_run 0 gpumod status
t_lacks "$T/daemon.log" "AddressSanitizer"
ln -s "$MODEL" "$T/models/beta.gguf"
t_end

daemon_stop
t_done
