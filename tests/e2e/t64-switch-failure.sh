#!/usr/bin/env bash
# A mode switch that fails is rolled back: a start that times out ->
# what the switch started is stopped, what it stopped is started again
# (every service of A ready), exit 1 with the service, reason and log
# tail; a rollback that fails too -> everything stopped, the host in
# `none`, reported; the switch's own --timeout -> exit 4, rolled back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port)
preset a1 "$P1"
preset a2 "$P2"
# never ready within its startup_timeout
preset stuck "$P3" 'startup_timeout: 1s' 'env: {FAKELLM_LOAD_MS: "600000"}'
preset slowb "$P4" 'startup_timeout: 60s' 'env: {FAKELLM_LOAD_MS: "600000"}'
mkdir -p "$C/modes"
printf 'id: A\nservices: [a1, a2]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [a1, stuck]\n' >"$C/modes/B.yaml"
printf 'id: L\nservices: [slowb]\n' >"$C/modes/L.yaml"
preset ported "$P5"
printf 'id: P\nservices: [ported]\n' >"$C/modes/P.yaml"
daemon_start

t_begin "a start that times out: rolled back to A, every A service ready, exit 1 with the reason"
t_run 0 gpumod mode switch A
pid_a1=$(field a1 .pid)
t_run 1 gpumod mode switch B
t_has err "failed at 'stuck': 'stuck' was not ready after startup_timeout 1000 ms"
t_has err "rolled back: the host is in mode 'A'"
t_has err "log tail:"
t_has err "rollback-start a2"
t_eq "$(state_of a1),$(state_of a2)" "ready,ready" "A's services"
t_eq "$(field a1 .pid)" "$pid_a1" "a1 (kept) was never touched"
t_eq "$(state_of stuck)" failed "stuck"
t_run 0 gpumod mode current --json
t_jq out .mode A
t_jq out .base_mode A
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].outcome' rolled_back
t_jq out '[.switches[0].phases[] | .phase + ":" + (.service // "-") + ":" + (.ok | tostring)] | join(" ")' \
    "plan:-:true drain:-:true stop:a2:true verify-freed:stuck:true start:stuck:false rollback-stop:stuck:true verify-freed:a2:true rollback-start:a2:true"
t_end

t_begin "the same with --json: 422 start_failed with service, reason, log tail and where the host is"
t_run 1 gpumod mode switch B --json
t_jq out .error.code start_failed
t_jq out .error.detail.service stuck
t_jq out .error.detail.outcome rolled_back
t_jq out .error.detail.now A
t_jq out '.error.detail.log_tail | length > 0' true
t_jq out '.error.detail.reason | startswith("'"'"'stuck'"'"' was not ready")' true
t_end

t_begin "the switch's own --timeout: exit 4, rolled back"
t_run 4 gpumod mode switch L --timeout 1
t_has err "the switch timed out"
t_eq "$(state_of a1),$(state_of a2),$(state_of slowb)" "ready,ready,down" "states"
t_run 0 gpumod mode current --json
t_jq out .mode A
t_end

t_begin "a rollback that fails too: everything stopped, the host in none, reported"
# a2 changes while it runs (it keeps running as started); brought back by
# the rollback with its new configuration, it exits during load
preset a2 "$P2" 'env: {FAKELLM_EXIT_DURING_LOAD: "1"}'
t_run 0 gpumod reload
t_run 1 gpumod mode switch B
t_has err "failed at 'stuck'"
t_has err "rollback failed too"
t_has err "the host is in mode 'none'"
t_eq "$(state_of a1),$(state_of stuck)" "down,failed" "states"
st=$(state_of a2); case $st in failed | down) ;; *) t_fail "a2 is $st, expected failed or down" ;; esac
t_run 0 gpumod mode current --json
t_jq out .mode none
t_jq out .base_mode none
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].outcome' failed
t_jq out '[.switches[0].phases[] | select(.phase == "settle-stop") | .service] | length > 0' true
t_end

t_begin "a start refused on its port attaches no log tail of an earlier run"
t_run 0 gpumod service start ported
t_run 0 gpumod service stop ported
t_run 0 gpumod service logs ported -n 5
t_has out "listening on"
fakellm_spawn squatter -- --port "$P5" -m "$MODEL"
sq=$_t_last_pid
wait_healthy "$P5" || t_fail "the squatter never listened on $P5"
t_run 1 gpumod mode switch P --json
t_jq out .error.detail.service ported
t_jq out '.error.detail.reason | test("port '"$P5"' is held by pid '"$sq"'")' true
t_jq out '.error.detail.log_tail // ""' ""
t_jq out '.error.message | contains("log tail")' false
kill "$sq"
reap "$sq" 5
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
