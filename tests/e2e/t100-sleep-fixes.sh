#!/usr/bin/env bash
# t100-sleep-fixes (issue 21 review): an l1 sleep holds its host copy as a
# reservation from the gate's pass until the asleep measurement or the
# fallback (GET /status reserved_bytes while an unconfirmed sleep waits);
# an engine that dies while it goes to sleep answers the sleep as failed
# with the exit, not "stopped"; a wake of a changed configuration (a new
# port) falls back to a stop and a cold start on the new port; after a
# wake stopped while its calls run, a sleep answers at once (the wake's
# op is dropped when its start ends; with the fake the killed engine also
# ends the calls at once, so this case guards the behaviour rather than
# reproducing the review's longer window, an engine polled while a cold
# start took its port).
. "$(dirname "$0")/lib.sh"
fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

printf 'drivers:\n  vllm: {binary: fakellm}\nrouter: {enabled: false}\n%s\n' \
    "supervisor: {stop_timeout: 2s, health_interval: 1s}" >"$C/gpumod.yaml"
vpreset() {
    printf 'id: %s\ndriver: vllm\nport: %s\nmodel_id: org/%s-7b\ncontext_size: 128\nsleep_mode: l1\nrestart: {max_restarts: 0}\nmemory: {host_mb: 16, gpu_mb: 2000}\nenv: {FAKELLM_GPU_MB: "2000", FAKELLM_WEIGHTS_MB: "64"%s}\n' \
        "$1" "${3:-$(free_port)}" "$1" "${2:+, $2}" >"$C/presets/$1.yaml"
}
vpreset stuck 'FAKELLM_SLEEP_STUCK: "1"'
vpreset dies 'FAKELLM_SLEEP_STUCK: "1"'
vpreset a
vpreset slow 'FAKELLM_WAKE_MS: "20000"'
reserved() { gpumod status --json | jq '.. | objects | select(has("reserved_bytes")) | .reserved_bytes' | head -1; }
reserved_pos() { [ "$(reserved)" -gt 0 ] 2>/dev/null; }
sleep_asked() { grep -q "sleep level 1 acknowledged" "$T/logs/$1.log" 2>/dev/null || gpumod service logs "$1" 2>/dev/null | grep -q "acknowledged"; }
daemon_start

t_begin "l1: the host copy is reserved from the gate's pass until the sleep ends (here: the fallback)"
t_run 0 gpumod service start stuck
t_eq "$(reserved)" 0 "nothing reserved before"
gpumod service sleep stuck >"$T/sl.out" 2>&1 &
sp=$!
t_wait 10 reserved_pos || t_fail "no reservation while the sleep waits for its confirmation"
wait $sp
t_has "$T/sl.out" "did not confirm the sleep"
t_eq "$(reserved)" 0 "released after the fallback"
t_end

t_begin "an engine that dies while it goes to sleep: the sleep fails with the exit, not 'stopped'"
t_run 0 gpumod service start dies
pid=$(gpumod service show dies --json | jq .pid)
gpumod service sleep dies >"$T/sd.out" 2>&1 &
sp=$!
t_wait 10 reserved_pos || t_fail "the sleep never began"
kill -KILL "$pid"
wait $sp
src=$?
[ "$src" != 0 ] || t_fail "service sleep exited 0: $(cat "$T/sd.out")"
t_has "$T/sd.out" "'dies' died while it went to sleep (killed by signal 9)"
t_end

t_begin "a wake of a changed configuration (a new port) stops the old engine and starts cold on the new port"
t_run 0 gpumod service start a
t_run 0 gpumod service sleep a
t_has out "'a' is asleep (l1"
oldpid=$(gpumod service show a --json | jq .pid)
np=$(free_port)
sed -i "s/^port: .*/port: $np/" "$C/presets/a.yaml"
t_run 0 gpumod reload
t_run 0 gpumod service start a
t_has out "the wake failed: stopped and started cold"
events a
t_jq "$T/ev" 'select(.kind == "wake") | .data.why | test("configuration changed since it went to sleep")' true
gpumod service show a --json >"$T/show"
t_jq "$T/show" .state ready
t_jq "$T/show" .port "$np"
[ "$(jq .pid "$T/show")" != "$oldpid" ] || t_fail "the same process: not a cold start"
kill -0 "$oldpid" 2>/dev/null && t_fail "the old engine still runs"
t_end

t_begin "a wake stopped while its calls run: a sleep asked next answers at once, it does not join the dead wake"
t_run 0 gpumod service stop a
t_run 0 gpumod service start slow
t_run 0 gpumod service sleep slow
t_has out "'slow' is asleep (l1"
t_run 0 gpumod service start slow --no-wait
waking() { gpumod events --json --service slow 2>/dev/null | grep -q "waking: the engine's wake calls"; }
t_wait 10 waking || t_fail "the wake never began"
t_run 0 gpumod service stop slow
# before the fix the sleep joined the wake's op, alive until its 20 s calls ended
t0=$(date +%s)
t_run 0 gpumod service sleep slow --json
t_jq out .slept false
t_has out "is down"
[ $(( $(date +%s) - t0 )) -lt 15 ] || t_fail "the sleep waited for the stopped wake's calls"
t_end

gpumod service stop a >/dev/null 2>&1
gpumod service stop slow >/dev/null 2>&1
gpumod service stop stuck >/dev/null 2>&1
gpumod service stop dies >/dev/null 2>&1
daemon_stop
t_done
