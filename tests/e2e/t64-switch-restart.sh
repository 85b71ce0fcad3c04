#!/usr/bin/env bash
# Mode switching across daemon restarts: a daemon restarted after a
# committed switch brings that mode back (switch.startup_mode: last); a
# daemon killed with -9 in the middle of a switch leaves an open journal
# entry: the next daemon reports the switch as interrupted (an event and
# the journal) and brings the host to a consistent mode, the last
# committed one; startup_mode none leaves the host empty.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port)
preset a1 "$P1"
preset b1 "$P2"
preset slow "$P3" 'env: {FAKELLM_LOAD_MS: "600000"}'
P4=$(free_port)
preset stubborn "$P4" 'env: {FAKELLM_IGNORE_SIGTERM: "1"}'
mkdir -p "$C/modes"
printf 'id: A\nservices: [a1]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [b1]\n' >"$C/modes/B.yaml"
printf 'id: S\nservices: [a1, slow]\n' >"$C/modes/S.yaml"
printf 'id: T\nservices: [stubborn]\n' >"$C/modes/T.yaml"
daemon_start
mode_is() { [ "$(gpumod mode current --json | jq -r .mode)" = "$1" ]; }

t_begin "a restart after a committed switch brings that mode back"
t_run 0 gpumod mode switch B
daemon_stop
daemon_start
t_wait 10 mode_is B || t_fail "mode B never came back: $(gpumod mode current --json)"
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].origin' startup
t_jq out '.switches[0].outcome' committed
t_jq out '.switches[0].from' none
t_jq out '.switches[0].to' B
t_end

if runner_is systemd; then
    sd_skip "kill -9 mid-switch: the next daemon reports the interrupted switch and brings back the last committed mode" \
        "units outlive the daemon by design (a restarted daemon adopts them)"
    sd_skip "kill -9 mid-stop (a service that ignores SIGTERM): reported, the last committed mode comes back" \
        "units outlive the daemon by design (a restarted daemon adopts them)"
    gpumod mode switch A >/dev/null 2>&1 || t_diag "mode switch A (for what follows) failed"
else
    t_begin "kill -9 mid-switch: the next daemon reports the interrupted switch and brings back the last committed mode"
    t_run 0 gpumod mode switch A
    t_spawn sw "$GPUMOD_BIN" mode switch S
    swpid=$_t_last_pid
    t_wait 10 is_state slow starting || t_fail "slow never started"
    kill -KILL "$DPID"
    reap "$DPID" 5
    reap "$swpid" 5
    t_eq "$rc" 3 "the client's exit code when the daemon died under it"
    t_has "$T/sw.log" "the daemon went away during switch"
    daemon_start
    t_wait 10 mode_is A || t_fail "mode A never came back: $(gpumod mode current --json)"
    events
    t_eq "$(jq -rs '[.[] | select(.kind == "switch.phase" and .data.phase == "recover")][-1].reason' "$T/ev" |
        grep -c "was interrupted: the daemon stopped during this switch")" 1 "the recover event"
    t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=3'"
    t_jq out '.switches[0].origin' startup
    t_jq out '.switches[0].to' A
    t_jq out '.switches[0].outcome' committed
    t_jq out '.switches[1].to' S
    t_jq out '.switches[1].outcome' interrupted
    t_jq out '.switches[1].error | test("brought to mode .A.")' true
    t_eq "$(state_of slow)" down "slow"
    t_run 0 gpumod mode current --json
    t_jq out .base_mode A
    t_end

    t_begin "kill -9 mid-stop (a service that ignores SIGTERM): reported, the last committed mode comes back"
    settings "supervisor: {stop_timeout: 30s, health_interval: 1s}"
    daemon_stop
    daemon_start
    t_wait 10 mode_is A || t_fail "mode A never came back"
    t_run 0 gpumod mode switch T
    t_spawn sw3 "$GPUMOD_BIN" mode switch A
    swpid=$_t_last_pid
    t_wait 10 is_state stubborn stopping || t_fail "stubborn never stopping"
    kill -KILL "$DPID"
    reap "$DPID" 5
    reap "$swpid" 5
    t_eq "$rc" 3 "the client's exit code when the daemon died under it"
    daemon_start
    t_wait 20 mode_is T || t_fail "mode T never came back: $(gpumod mode current --json)"
    t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=2'"
    t_jq out '.switches[0].origin' startup
    t_jq out '.switches[0].outcome' committed
    t_jq out '.switches[1].to' A
    t_jq out '.switches[1].outcome' interrupted
    t_jq out '.switches[1].error | test("at phase .stop stubborn.")' true
    t_run 0 gpumod mode switch A
    settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
    daemon_stop
    daemon_start
    t_wait 10 mode_is A || t_fail "mode A never came back"
    t_end
fi

t_begin "SIGTERM during a switch: the switch is marked interrupted, the daemon exits 0"
t_spawn sw2 "$GPUMOD_BIN" mode switch S
swpid=$_t_last_pid
t_wait 10 is_state slow starting || t_fail "slow never started"
daemon_stop
reap "$swpid" 5
t_eq "$rc" 3 "the client's exit code (503 shutting_down)"
t_end

t_begin "startup_mode none: the host stays empty"
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}" "switch: {startup_mode: none}"
daemon_start
sleep 0.5
t_run 0 gpumod mode current --json
t_jq out .mode none
t_jq out .base_mode A
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].outcome' interrupted
t_jq out '.switches[0].to' S
t_jq out '.switches[0].error | test("daemon shut down during the switch")' true
daemon_stop
t_end
t_done
