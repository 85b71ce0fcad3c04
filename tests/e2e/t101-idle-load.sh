#!/usr/bin/env bash
# t101-idle-load: idle unload does not cut a router-mode model load.  A
# llama.cpp router-mode fake (fakellm --models-dir) with idle_timeout 2s
# takes longer than that to load a model (FAKELLM_LOAD_MS); a request for
# that model waits for the gated load, and the service counts as busy
# while it waits (docs/router.md "Idle unload"): it is not stopped under
# the load, the request is answered, and the service is unloaded only
# after another idle timeout once the request ended.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

P1=$(free_port)
mkdir -p "$T/models"
for m in alpha beta; do ln -s "$MODEL" "$T/models/$m.gguf"; done
rsettings "queue_timeout: $((60 * S))s" "memory: {watchdog: {mem_available_floor_mb: 0}}"
cat >"$C/presets/rm.yaml" <<Y
id: rm
driver: llamacpp
port: $P1
context_size: 128
idle_timeout: $((2 * S))s
unit_vars: {models_dir: $T/models, models_max: 2}
env: {FAKELLM_LOAD_MS: "$((6000 * S))"}
Y
mstate() { gpumod service show rm --json 2>/dev/null | jq -r --arg m "$1" '.models[] | select(.id == $m) | .state'; }
mstate_is() { [ "$(mstate "$1")" = "$2" ]; }

daemon_start
t_run 0 gpumod service start rm
t_wait 10 mstate_is alpha unloaded || t_fail "alpha never showed as unloaded"

t_begin "a request waiting for a model load longer than the idle timeout keeps the service loaded"
rcurl "$T/o" "$RURL/v1/chat/completions" -d "$(chat alpha)" >"$T/st" &
cpid=$!
t_wait 10 mstate_is alpha loading || t_fail "alpha is $(mstate alpha), never loading"
wait "$cpid"
t_eq "$(cat "$T/st")" 200 "chat to alpha"
t_jq "$T/o" .object chat.completion
t_lacks "$T/daemon.log" "router: 'rm' had no request for"
t_eq "$(state_of rm)" ready "rm after the request"
t_end

t_begin "once the request ended, the idle timeout unloads it"
t_wait $((30 * S)) is_state rm down || t_fail "rm is $(state_of rm), never down"
t_match "$T/daemon.log" "router: 'rm' was stopped \(idle"
t_end

daemon_stop
stop_all_clean
t_done
