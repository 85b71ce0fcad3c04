#!/usr/bin/env bash
# Mode switching through the daemon, the ordinary path: A -> B with one
# shared service (kept: the same pid before and after), one stopped and
# one started; every phase with its timing in the answer, the journal
# (GET /switches) and `gpumod events`; --dry-run prints the plan and
# changes nothing; `mode current` with a running set that is no mode is
# null with the last committed mode; two concurrent switch requests: one
# runs, the other gets 409 naming it; so does a start or a restart of a
# service asked while a switch runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
PS=$(free_port) PA=$(free_port) PB=$(free_port) PC=$(free_port)
preset shared "$PS"
preset a2 "$PA"
preset b2 "$PB"
preset slow "$PC" 'env: {FAKELLM_LOAD_MS: "1500"}'
mkdir -p "$C/modes"
printf 'id: A\nservices: [shared, a2]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [shared, b2]\n' >"$C/modes/B.yaml"
printf 'id: S\nservices: [slow]\n' >"$C/modes/S.yaml"
# ready only once the test says so: a switch to G runs until then
PG=$(free_port)
printf 'id: gated\ndriver: command\nport: %s\nmemory: {host_mb: 16}\ncommand: [sh, -c, "while [ ! -e %s ]; do sleep 0.05; done; exec %s -m %s --port %s"]\n' \
    "$PG" "$T/go" "$FAKELLM_BIN" "$MODEL" "$PG" >"$C/presets/gated.yaml"
printf 'id: G\nservices: [gated]\n' >"$C/modes/G.yaml"

t_begin "mode list and show work without a daemon, from the configuration"
t_run 0 gpumod mode list
t_has out "A                    shared, a2"
t_has out "no daemon is running"
t_run 0 gpumod mode show B --json
t_jq out '.services | join(",")' "shared,b2"
t_run 2 gpumod mode show Q
t_has err "no mode 'Q' is configured"
t_run 3 gpumod mode current
t_has err "no daemon is running"
t_end

daemon_start

t_begin "a fresh daemon: mode none, nothing ever committed"
t_run 0 gpumod mode current --json
t_jq out .mode none
t_jq out .base_mode null
t_end

t_begin "switch to A from none: both start, committed"
t_run 0 gpumod mode switch A
t_has out "switched 'none' -> 'A'"
t_has out "start shared"
t_has out "commit"
t_eq "$(state_of shared),$(state_of a2)" "ready,ready" "states"
t_run 0 gpumod mode current --json
t_jq out .mode A
t_jq out .base_mode A
t_run 0 gpumod mode list
t_has out "* A"
t_end

t_begin "--dry-run prints the plan and changes nothing"
pid_shared=$(field shared .pid); pid_a2=$(field a2 .pid)
t_run 0 gpumod mode switch B --dry-run
t_has out "plan: 'A' -> 'B': fits"
t_match out "stop +a2 +-"
t_match out "start +b2 +ok"
t_has out "kept (untouched): shared"
t_has out "nothing was changed"
t_run 0 gpumod mode switch B --dry-run --json
t_jq out '.stops | join(",")' a2
t_jq out '.keeps | join(",")' shared
t_jq out '.starts | join(",")' b2
t_jq out '.steps[1].verdict.ok' true
t_jq out '.steps[1].after.host_available_bytes > 0' true
t_eq "$(field a2 .pid)" "$pid_a2" "a2 untouched"
t_eq "$(state_of b2)" down "b2 still down"
t_run 0 gpumod mode current --json
t_jq out .mode A
t_end

t_begin "A -> B: shared kept (same pid), a2 stopped, b2 started; phases with timings"
t_run 0 gpumod mode switch B --json
t_jq out .outcome committed
t_jq out .from A
t_jq out .to B
t_jq out '[.phases[].phase] | unique | sort | join(",")' "commit,drain,plan,start,stop,verify-freed,verify-healthy"
t_jq out '[.phases[] | select(.phase == "stop") | .service] | join(",")' a2
t_jq out '[.phases[] | select(.phase == "start") | .service] | join(",")' b2
t_jq out '[.phases[] | select(.duration_ms == null)] | length' 0
t_jq out '[.phases[] | select(.ok != true)] | length' 0
t_jq out '.phases[] | select(.phase == "start") | .detail.load_ms >= 0' true
t_jq out '.plan.keeps | join(",")' shared
sid=$(jq -r .id "$T/out")
t_eq "$(field shared .pid)" "$pid_shared" "shared's pid"
t_eq "$(state_of a2)" down "a2"
t_eq "$(state_of b2)" ready "b2"
alive "$pid_a2" && t_fail "a2's engine (pid $pid_a2) still alive"
t_run 0 gpumod mode current --json
t_jq out .mode B
t_jq out .base_mode B
t_end

t_begin "the journal and the events show every phase with its duration"
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=5'"
t_jq out '.switches[0].id' "$sid"
t_jq out '.switches[0].outcome' committed
t_jq out '.switches[1].to' A
t_jq out '[.switches[0].phases[] | .duration_ms | type] | unique | join(",")' number
events
t_eq "$(jq -s '[.[] | select(.kind == "switch.phase" and .data.switch_id == '"$sid"')] | length' "$T/ev")" 7 \
    "switch.phase events of switch $sid"
t_eq "$(jq -rs '[.[] | select(.kind == "switch.phase" and .data.phase == "stop")][-1].service' "$T/ev")" a2 \
    "the stop event's service"
t_eq "$(jq -s '[.[] | select(.kind == "switch.phase") | .data.duration_ms | type == "number"] | all' "$T/ev")" \
    true "every switch.phase event has duration_ms"
t_run 0 gpumod events
t_match out "switch.phase A -> B: switch $sid to 'B': stop 'a2' done in [0-9]+ ms"
t_end

t_begin "mode current with a running set that is no mode: null, with base_mode"
t_run 0 gpumod service start a2
t_run 0 gpumod mode current --json
t_jq out .mode null
t_jq out '.running | sort | join(",")' "a2,b2,shared"
t_jq out .base_mode B
t_run 0 gpumod mode current
t_has out "no mode: running"
t_has out "(last committed mode: B)"
t_run 0 gpumod mode switch B
t_eq "$(state_of a2)" down "a2 stopped by the switch back to B"
t_end

t_begin "two concurrent switches: one runs, the other gets 409 naming it"
t_spawn sw1 "$GPUMOD_BIN" mode switch S
swpid=$_t_last_pid
switching() { gpumod mode current --json | jq -e '.switching != null'; }
t_wait 10 switching || t_fail "the first switch never showed up"
t_run 1 gpumod mode switch A
t_has err "a switch is in progress: switch"
t_has err "to 'S', requested by cli"
t_run 1 gpumod mode switch A --json
t_jq out .error.code switch_in_progress
t_jq out .error.detail.mode S
reap "$swpid" 20 || t_fail "the first switch did not end"
t_eq "$rc" 0 "the first switch's exit code"
t_run 0 gpumod mode current --json
t_jq out .mode S
t_end

t_begin "a start during a switch is refused with 409 naming the switch; the switch commits"
t_run 0 gpumod mode switch none
t_spawn sw2 "$GPUMOD_BIN" mode switch G
swpid=$_t_last_pid
t_wait 10 switching || t_fail "the switch never showed up"
t_run 1 gpumod service start b2
t_has err "a switch is in progress: switch"
t_has err "to 'G'"
for q in "b2/start?wait=0" "b2/start" "a2/restart"; do
    t_run 0 sh -c "curl -s -w ' %{http_code}' -X POST --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/services/$q'"
    t_match out ' 409$'
    sed -i 's/ 409$//' "$T/out"
    t_jq out .error.code switch_in_progress
    t_jq out .error.detail.mode G
done
touch "$T/go"
reap "$swpid" 20 || t_fail "the switch did not end"
t_eq "$rc" 0 "the switch's exit code"
t_eq "$(state_of b2),$(state_of a2)" "down,down" "the refused services"
t_run 0 gpumod mode current --json
t_jq out .mode G
t_end

t_begin "unknown mode: 404, exit 2; mode none stops everything"
t_run 2 gpumod mode switch nosuch
t_has err "no mode 'nosuch'"
t_run 0 sh -c "curl -s -X POST --data-binary '{\"mode\": 3}' --unix-socket '$GPUMOD_SOCKET' http://gpumod/modes/switch"
t_jq out .error.code bad_request
t_has out 'must be a mode id'
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=0'"
t_jq out .error.code bad_request
t_run 0 gpumod mode switch none
t_run 0 gpumod mode current --json
t_jq out .mode none
t_jq out .base_mode none
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
