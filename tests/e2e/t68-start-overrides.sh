#!/usr/bin/env bash
# A start with overrides (POST /services/ID/start {"overrides":
# {"context_size": N}}, `gpumod service start ID --ctx N`): the engine gets
# -c N, the gate judges the need at N tokens (a size that cannot fit is
# refused and nothing spawns), the run is known by its own config hash
# (config_changed), a restart of the policy keeps the override and a
# later plain start runs the preset again; a start that asks another size
# of a service loading or running is a conflict that says what runs; a
# body the daemon cannot take is a 400 that names what is wrong.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

SOCK=$GPUMOD_SOCKET
# post PATH BODY: the status in $T/status, the answer in $T/out
post() {
    curl -s -S --max-time $((10 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' --data-binary "$2" "http://gpumod$1" >"$T/status" 2>"$T/err"
}
status() { cat "$T/status"; }
# spawn_argv SERVICE N: the argv of the service's Nth spawn (1-based), one line
spawn_argv() { events "$1"; jq -rs --argjson n "$2" '[.[] | select(.kind == "spawn")][$n - 1].data.argv | join(" ")' "$T/ev"; }
# gate_ctx SERVICE: the n_ctx of the estimate its last gate event judged
gate_ctx() { events "$1"; jq -rs '[.[] | select(.kind == "gate")] | last | .data.need.estimate.n_ctx' "$T/ev"; }

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port)
preset chat "$P1"
preset slow "$P2" 'env: {FAKELLM_LOAD_MS: "1500"}'
preset crash "$P3" 'env: {FAKELLM_CRASH_AFTER: "1"}' \
    'restart: {max_restarts: 2, restart_window: 10m, backoff_initial: 200ms, backoff_max: 10s}'
printf 'id: cmd\ndriver: command\nport: %s\ncommand: [fakellm, -m, %s, --port, "{port}"]\nmemory: {host_mb: 16}\n' \
    "$P4" "$MODEL" >"$C/presets/cmd.yaml"
mkdir -p "$C/modes"
printf 'id: solo\nservices: [chat]\n' >"$C/modes/solo.yaml"
daemon_start

if runner_is systemd; then
    t_begin "the systemd runner starts the installed unit as written: a start with overrides is a 400, nothing runs"
    t_run 2 gpumod service start chat --ctx 512
    t_has err "cannot start 'chat' with overrides: the systemd runner starts its installed unit gpumod-chat.service as written (overrides need supervisor.runner: spawn)"
    t_eq "$(state_of chat)" down "state"
    t_eq "$(count spawn chat)" 0 "spawns"
    t_run 0 gpumod service start chat
    t_run 2 gpumod service restart chat --ctx 512
    t_eq "$(state_of chat)" ready "state after a refused restart (nothing stopped)"
    t_run 0 gpumod service stop chat
    t_end
    sd_skip "the rest of t68" "a unit runs its installed command, not a start's overrides"
    t_begin "the daemon stops cleanly"
    daemon_stop
    t_end
    t_done
    exit
fi

t_begin "start --ctx 512: the engine gets -c 512, the gate judged 512 tokens, the run has its own hash"
t_run 0 gpumod service start chat --ctx 512
t_eq "$(state_of chat)" ready "state"
t_match <(spawn_argv chat 1) ' -c 512 '
t_eq "$(gate_ctx chat)" 512 "the gate's need.estimate.n_ctx"
t_eq "$(curl -s --max-time $((5 * S)) "http://127.0.0.1:$P1/props" | jq -r .default_generation_settings.n_ctx)" 512 \
    "the engine's n_ctx"
gpumod service show chat --json >"$T/svc.json"
t_jq "$T/svc.json" .overrides.context_size 512
t_jq "$T/svc.json" .config_changed true
t_jq "$T/svc.json" '.running_hash != .config_hash and (.running_hash | length) == 64' true
# the footprint is the override's, stored under the hash the run is known by
events chat
t_eq "$(jq -rs '[.[] | select(.kind == "footprint")] | last | .data.config_hash' "$T/ev")" \
    "$(jq -r .running_hash "$T/svc.json")" "the footprint's config hash"
t_run 0 gpumod service show chat
t_has out "started with context_size 512 (an override)"
t_run 0 gpumod service list
t_match out "^chat .*  context_size 512 \(override\)"
t_lacks out "config changed"
t_end

t_begin "the same overrides again: 200, nothing new; another size: 409 conflict saying what runs"
t_run 0 gpumod service start chat --ctx 512
post /services/chat/start '{"overrides": {"context_size": 512}}'
t_eq "$(status)" 200 "same overrides"
t_jq out .overrides.context_size 512
post /services/chat/start '{"overrides": {"context_size": 1024}}'
t_eq "$(status)" 409 "other overrides"
t_jq out .error.code conflict
t_jq out .error.message "'chat' is ready with context_size 512; stop it first to start it with context_size 1024"
t_run 1 gpumod service start chat --ctx 1024
t_has err "'chat' is ready with context_size 512; stop it first to start it with context_size 1024"
# a start without overrides takes what runs
t_run 0 gpumod service start chat
t_eq "$(count spawn chat)" 1 "spawns"
t_eq "$(field chat .overrides.context_size)" 512 "overrides still"
t_end

t_begin "a reload that changes nothing does not list the overridden service as changed"
t_run 0 gpumod reload
t_lacks out "changed while running"
t_end

t_begin "a later start without overrides runs the preset as configured"
t_run 0 gpumod service stop chat
t_eq "$(field chat .overrides)" null "overrides when down"
t_run 0 gpumod service start chat
t_match <(spawn_argv chat 2) ' -c 128 '
t_eq "$(gate_ctx chat)" 256 "the gate's n_ctx (128 padded to 256, as llama.cpp pads it)"
t_eq "$(field chat .overrides)" null "overrides"
t_eq "$(field chat .config_changed)" false "config_changed"
# asking the preset's own size of it is asking what runs
t_run 0 gpumod service start chat --ctx 128
post /services/chat/start '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 409 "another size of a plain run"
t_jq out .error.message "'chat' is ready with context_size 128; stop it first to start it with context_size 256"
t_run 0 gpumod service stop chat
t_end

t_begin "restart --ctx: stopped, then started with the override"
t_run 0 gpumod service start chat
t_run 0 gpumod service restart chat --ctx 384
t_match <(spawn_argv chat 4) ' -c 384 '
t_eq "$(field chat .overrides.context_size)" 384 "overrides"
t_run 0 gpumod service stop chat
t_end

t_begin "a start in flight: joined with the same overrides, 409 with others"
post "/services/slow/start?wait=0" '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 202 "the first start"
seq=$(jq -r .start_seq "$T/out")
t_jq out .service.overrides.context_size 256
post "/services/slow/start?wait=0" '{"overrides": {"context_size": 512}}'
t_eq "$(status)" 409 "other overrides"
t_jq out .error.message "'slow' is starting with context_size 256; stop it first to start it with context_size 512"
post "/services/slow/start?wait=0" '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 202 "same overrides"
t_jq out .start_seq "$seq"
post "/services/slow/start?wait=0" ''
t_eq "$(status)" 202 "no overrides: joined"
t_jq out .start_seq "$seq"
t_wait 20 is_state slow ready || t_fail "slow never ready (state $(state_of slow))"
t_match <(spawn_argv slow 1) ' -c 256 '
t_eq "$(count spawn slow)" 1 "spawns"
t_run 0 gpumod service stop slow
t_end

t_begin "a switch to a mode that has the service runs its preset: the overridden run is not kept"
t_run 0 gpumod service start chat --ctx 512
n=$(count spawn chat)
t_run 0 gpumod mode switch solo
t_eq "$(count spawn chat)" $((n + 1)) "spawns"
t_match <(spawn_argv chat $((n + 1))) ' -c 128 '
t_eq "$(field chat .overrides)" null "overrides"
t_eq "$(field chat .config_changed)" false "config_changed"
t_run 0 gpumod mode switch none
t_eq "$(state_of chat)" down "state"
t_end

t_begin "a size that cannot fit: 409 gate_refused at the override's n_ctx, nothing spawned"
n=$(count spawn chat)
t_run 1 gpumod service start chat --ctx 16777216
t_match err "gate_refused|MemAvailable [0-9]+ MiB < required [0-9]+ MiB"
t_eq "$(state_of chat)" down "state"
t_eq "$(count spawn chat)" "$n" "spawns"
t_eq "$(field chat .last_start.code)" gate_refused "last_start.code"
t_eq "$(gate_ctx chat)" 16777216 "the gate's n_ctx"
t_end

t_begin "a crash restarted by the policy keeps the override of the run it restarts"
t_run 0 gpumod service start crash --ctx 256
curl -s -o /dev/null --max-time $((5 * S)) -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}' "http://127.0.0.1:$P3/v1/chat/completions"
spawns2() { [ "$(count spawn crash)" = 2 ]; }
t_wait 10 spawns2 || t_fail "no restart (spawns $(count spawn crash))"
t_wait 10 is_state crash ready || t_fail "not ready again (state $(state_of crash))"
t_match <(spawn_argv crash 2) ' -c 256 '
events crash
t_eq "$(jq -rs '[.[] | select(.kind == "spawn")][1].data.origin' "$T/ev")" restart "the second spawn's origin"
t_eq "$(field crash .overrides.context_size)" 256 "overrides"
t_run 0 gpumod service stop crash
t_end

t_begin "bad bodies and options: 400 or exit 2 naming what is wrong, nothing started"
post /services/chat/start '[1]'
t_eq "$(status)" 400 "an array"
t_jq out .error.message 'start: the body must be a JSON object {"overrides": {...}}: found another JSON value'
post /services/chat/start '{"overrides": {"ctx": 512}}'
t_eq "$(status)" 400 "unknown override"
t_jq out .error.code bad_request
t_jq out .error.message "start: overrides: unknown key 'ctx' (allowed: context_size)"
post /services/chat/start '{"override": {}}'
t_eq "$(status)" 400 "unknown key"
t_jq out .error.message "start: unknown key 'override' in the body (allowed: overrides)"
post /services/chat/start '{"overrides": 512}'
t_eq "$(status)" 400 "overrides not an object"
t_jq out .error.message 'start: "overrides" must be an object (keys: context_size) or null'
for bad in 0 -1 512.5 '"512"' true 16777217 1e300; do
    post /services/chat/start "{\"overrides\": {\"context_size\": $bad}}"
    t_eq "$(status)" 400 "context_size $bad"
    t_jq out .error.message "start: overrides.context_size must be an integer from 1 to 16777216, or null for the preset's"
done
post /services/chat/start '{"overrides": {"context_size": 512, "context_size": 256}}'
t_eq "$(status)" 400 "a key twice"
t_has out "key 'context_size' appears twice in the object at \$.overrides"
post /services/chat/restart '{"overrides": {"ctx": 1}}'
t_eq "$(status)" 400 "restart"
t_jq out .error.message "restart: overrides: unknown key 'ctx' (allowed: context_size)"
post /services/cmd/start '{"overrides": {"context_size": 512}}'
t_eq "$(status)" 400 "a driver that takes no context size"
t_jq out .error.message "cannot start 'cmd' with overrides: preset 'cmd': driver command takes no context size from gpumod (only llamacpp's -c and vllm's --max-model-len do)"
t_run 2 gpumod service start cmd --ctx 512
t_has err "driver command takes no context size"
t_run 2 gpumod service start chat --ctx 0
t_has err "--ctx"
t_run 2 gpumod service start chat --context-size lots
t_run 2 gpumod service stop chat --ctx 512
t_has err "unknown option '--ctx'"
t_eq "$(state_of chat)/$(state_of cmd)" down/down "states"
# null and {} mean none
post "/services/chat/start" '{"overrides": null}'
t_eq "$(status)" 200 "overrides null"
t_jq out .overrides null
t_run 0 gpumod service stop chat
post "/services/chat/start" '{"overrides": {"context_size": null}}'
t_eq "$(status)" 200 "context_size null"
t_jq out .overrides null
t_run 0 gpumod service stop chat
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
