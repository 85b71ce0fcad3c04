#!/usr/bin/env bash
# The supervisor through the daemon and the CLI, against fakellm: a start
# goes to ready showing load progress; a load past startup_timeout fails
# with the log tail; an exit during load fails with the exit code.  Each
# asserts what a user sees: exit code, message, state, events.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 300ms}"
P1=$(free_port) P2=$(free_port) P3=$(free_port)
preset load "$P1" 'env: {FAKELLM_LOAD_MS: "1500"}'
preset slow "$P2" 'startup_timeout: 1s' 'env: {FAKELLM_LOAD_MS: "60000"}'
preset crashy "$P3" 'env: {FAKELLM_LOAD_MS: "400", FAKELLM_EXIT_DURING_LOAD: "3"}'
daemon_start

progress_seen() { field load .progress_pct | grep -qE '^[0-9]+$'; }

t_begin "start to ready: progress while loading, then ready, state events in order, a footprint"
t_run 0 gpumod service start load --no-wait
t_wait 10 progress_seen || t_fail "no progress_pct seen while loading (state $(state_of load))"
pct=$(field load .progress_pct)
t_diag "progress seen: $pct %"
t_run 0 gpumod service start load # joins the start in progress, returns when ready
t_has out "ready: load"
t_eq "$(state_of load)" ready "state"
t_eq "$(field load .last_start.outcome)" ready "last_start.outcome"
t_eq "$(field load '.footprint.host_bytes > 0')" true "footprint measured"
# no GPU on this host: the detail says so (it once read past the end of an empty string)
t_eq "$(field load '.footprint.detail')" "no GPU" "footprint detail without a GPU"
t_eq "$(field load '.pgid == null')" false "pgid shown"
events load
t_eq "$(jq -r 'select(.kind == "state") | .from + ">" + .to' "$T/ev" | tr '\n' ' ')" "down>starting starting>ready " "state events"
t_eq "$(jq -s '[.[] | select(.kind == "spawn")] | length' "$T/ev")" 1 "spawns"
t_eq "$(jq -s '[.[] | select(.kind == "footprint")] | length' "$T/ev")" 1 "footprint events"
t_has "$T/ev" '"argv":['
t_end

t_begin "stop: down, exit 0, no pid of the group remains"
pg=$(field load .pgid)
t_run 0 gpumod service stop load
t_eq "$(state_of load)" down "state"
t_wait 2 group_gone "$pg" || t_fail "group $pg still has: $(group_live "$pg" | tr '\n' ' ')"
t_end

t_begin "startup_timeout exceeded: exit 1, failed, the log tail in the message, the group killed"
t_run 1 gpumod service start slow
t_has err "startup_timeout 1000 ms"
t_has err "log tail:"
t_has err "load_tensors" # a line of fakellm's own load output
t_eq "$(state_of slow)" failed "state"
t_eq "$(field slow .last_start.outcome)" failed "outcome"
t_eq "$(field slow .last_start.code)" start_failed "code"
events slow
t_has "$T/ev" '"reason":"start_timeout: not ready after 1000 ms"'
if runner_is systemd; then # a unit's main pid is not known at its spawn event: the unit ends with nothing in it
    t_wait 2 sd_unit_empty gpumod-slow.service || t_fail "gpumod-slow.service: $(sd_state gpumod-slow.service), MainPID $(sd_prop gpumod-slow.service MainPID)"
else
    pg=$(jq -rs '[.[] | select(.kind == "spawn")][0].data.pgid' "$T/ev")
    t_wait 2 group_gone "$pg" || t_fail "group $pg still has: $(group_live "$pg" | tr '\n' ' ')"
fi
t_end

t_begin "exit during load: exit 1, failed, the exit code in the message and in last_exit"
t_run 1 gpumod service start crashy
if runner_is systemd; then # systemd restarts the crash (Restart=on-failure) until StartLimitBurst
    t_has err "exited with code 3: systemd gave up on gpumod-crashy.service: start limit hit"
    t_eq "$(sd_prop gpumod-crashy.service Result)" start-limit-hit "unit Result"
    t_eq "$(sd_prop gpumod-crashy.service NRestarts)" \
        "$(sed -n 's/^StartLimitBurst=//p' "$GPUMOD_UNIT_DIR/gpumod-crashy.service")" "NRestarts (runs = StartLimitBurst)"
else
    t_has err "exited with code 3 during load"
fi
t_eq "$(state_of crashy)" failed "state"
t_eq "$(field crashy .last_exit.code)" 3 "last_exit.code"
events crashy
t_eq "$(jq -rs '[.[] | select(.kind == "exit")][0].data.code' "$T/ev")" 3 "exit event code"
t_eq "$(jq -r 'select(.kind == "state") | .to' "$T/ev" | tail -1)" failed "last state event"
t_end

t_begin "failed is sticky: no restart happens by itself; a person's start resets it"
t_eq "$(count spawn crashy)" 1 "spawns of crashy"
t_run 1 gpumod service start crashy
t_eq "$(count spawn crashy)" 2 "spawns after a person asked again"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
