#!/usr/bin/env bash
# Mode switching, the cases a review found wrong: a service waiting for
# its restart is stopped by a switch away from it (its restart cancelled)
# and the commit checks that nothing outside the mode holds memory; a
# kept target still starting is joined, not failed; a rollback brings the
# previous mode back in its start order (start_first first) whatever
# order the stops ended in; a refused plan is journaled `refused`; a
# switch asked with wait=0 answers 202 with its id and the daemon's bound,
# GET /switches/ID carries the result, and the CLI polls it with a
# configuration of its own; a timeout under 1 ms is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port) P6=$(free_port) P7=$(free_port)
preset a1 "$P1"
preset a2 "$P2" 'restart: {max_restarts: 5, restart_window: 10m, backoff_initial: 3s, backoff_max: 3s}'
preset b1 "$P3"
preset slow "$P4" 'env: {FAKELLM_LOAD_MS: "1500"}'
# the previous mode of a rollback: p2 starts first; p1 ignores SIGTERM, so its stop ends last
preset p1 "$P5" 'env: {FAKELLM_IGNORE_SIGTERM: "1"}'
preset p2 "$P6" 'start_first: true'
preset stuck "$P7" 'startup_timeout: 1s' 'env: {FAKELLM_LOAD_MS: "600000"}'
mkdir -p "$C/modes"
printf 'id: A\nservices: [a1, a2]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [b1]\n' >"$C/modes/B.yaml"
printf 'id: S\nservices: [a1, slow]\n' >"$C/modes/S.yaml"
printf 'id: P\nservices: [p1, p2]\n' >"$C/modes/P.yaml"
printf 'id: F\nservices: [stuck]\n' >"$C/modes/F.yaml"
daemon_start
api() { curl -s --unix-socket "$GPUMOD_SOCKET" "$@"; }
mode_is() { [ "$(gpumod mode current --json | jq -r .mode)" = "$1" ]; }
restart_pending() { [ "$(state_of a2)" = down ] && [ "$(field a2 .restarts.next_at)" != null ]; }

if runner_is systemd; then
    sd_skip "a service waiting for its restart is stopped by the switch; its restart never fires" \
        "systemd restarts a crash (Restart=on-failure), the daemon has no restart of its own waiting"
else
    t_begin "a service waiting for its restart is stopped by the switch; its restart never fires"
    t_run 0 gpumod mode switch A
    kill -KILL "$(field a2 .pid)"
    t_wait 5 restart_pending || t_fail "a2 never waited for a restart: $(gpumod service show a2 --json)"
    t_run 0 gpumod mode switch B --json
    t_jq out .outcome committed
    t_jq out '[.phases[] | select(.phase == "stop") | .service] | sort | join(",")' "a1,a2"
    sleep 4 # past a2's restart delay (3 s)
    t_eq "$(state_of a2)" down "a2 after its restart delay"
    t_run 0 gpumod mode current --json
    t_jq out .mode B
    t_jq out '.running | join(",")' b1
    t_end
fi

t_begin "a kept target still starting is joined: the switch waits for it and commits"
t_run 0 gpumod mode switch A
t_run 0 api -X POST "http://gpumod/services/slow/start?wait=0"
t_jq out .service.state starting
t_run 0 gpumod mode switch S --json
t_jq out .outcome committed
t_jq out '[.phases[] | .phase + ":" + (.service // "-")] | join(" ")' \
    "plan:- drain:- stop:a2 wait-ready:slow verify-healthy:- commit:-"
t_eq "$(state_of slow)" ready "slow"
t_wait 5 mode_is S || t_fail "not in S: $(gpumod mode current --json)"
t_end

t_begin "a rollback brings the previous mode back in its start order (start_first first)"
t_run 0 gpumod mode switch P
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '[.switches[0].phases[] | select(.phase == "start") | .service] | join(",")' "p2,p1"
t_run 1 gpumod mode switch F --json
t_jq out .error.detail.outcome rolled_back
t_jq out '[.error.detail.switch.phases[] | select(.phase == "rollback-start") | .service] | join(",")' "p2,p1"
t_eq "$(state_of p1),$(state_of p2)" "ready,ready" "P's services"
t_end

t_begin "a refused plan is journaled refused; a timeout under 1 ms is refused"
t_run 0 api -X POST -d '{"mode": "A", "timeout": 0.0001}' "http://gpumod/modes/switch"
t_jq out .error.code bad_request
t_has out "from 0.001 (1 ms)"
t_run 0 api -X POST -d '{"mode": "nosuch"}' "http://gpumod/modes/switch"
t_jq out .error.code not_found
t_end

t_begin "wait=0: 202 with the switch id and the daemon's bound; GET /switches/ID carries the result"
t_run 0 api -X POST -d '{"mode": "B"}' "http://gpumod/modes/switch?wait=0"
t_jq out '.switch_id > 0' true
t_jq out '.wait_ms > 60000' true
id=$(jq -r .switch_id "$T/out")
t_jq out .poll "/switches/$id"
ended() { [ "$(api "http://gpumod/switches/$id" | jq -r .result.status)" = 200 ]; }
t_wait 20 ended || t_fail "switch $id never ended: $(api "http://gpumod/switches/$id")"
t_run 0 api "http://gpumod/switches/$id"
t_jq out .outcome committed
t_jq out .result.body.outcome committed
t_jq out .result.body.to B
t_run 0 api -X POST -d '{"mode": "A", "wait": false}' "http://gpumod/modes/switch"
t_jq out '.switch_id > 0' true
id=$(jq -r .switch_id "$T/out")
t_run 0 api "http://gpumod/switches/999999"
t_jq out .error.code not_found
t_run 0 api "http://gpumod/switches/x1"
t_jq out .error.code bad_request
# A's services can all be ready before the switch has committed: wait for
# the switch itself to end, then for the mode (the next case switches again)
t_wait 20 ended || t_fail "switch $id never ended: $(api "http://gpumod/switches/$id")"
t_wait 20 mode_is A || t_fail "never in A"
t_end

t_begin "the CLI polls with a configuration of its own (none here): the daemon's bound decides"
mkdir -p "$T/other"
t_run 0 env GPUMOD_CONFIG_DIR="$T/other" gpumod mode switch S
t_has out "switched 'A' -> 'S'"
t_has out "commit"
t_run 1 env GPUMOD_CONFIG_DIR="$T/other" gpumod mode switch F
t_has err "failed at 'stuck'"
t_has err "rolled back: the host is in mode 'S'"
t_has err "log tail:"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
