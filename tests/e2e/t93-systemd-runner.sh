#!/usr/bin/env bash
# The systemd runner (supervisor.runner: systemd) against the fake
# org.freedesktop.systemd1 on a private session bus: a start goes through
# StartUnit and the unit's ExecStartPre gate (which excludes the daemon's
# own reservation for that start), a stop through StopUnit, a crash is
# restarted by systemd (observed, not restarted by the daemon too), a
# start limit ends failed, a gate refusal in ExecStartPre fails the start
# with the gate's reason (another ExecStartPre failure is not called a
# refusal), a missing unit is named with the fix, a preset binary reached
# through a symlink is not stale, a crash while other processes of the
# unit linger is an exit and systemd's restart, the output file may be
# truncated or renamed, a daemon restarted after kill -9 adopts the unit
# still running (as an older configuration when its preset changed), the
# bus going leaves the units running and the daemon reconnects, and a
# StartUnit answer later than its deadline fails nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/systemd-lib.sh"

if ! systemd_usable; then
    t_skip "systemd runner" "$SYSTEMD_WHY"
    t_done
    exit 0
fi

# health: 10 failed probes 100 ms apart before unhealthy, so a crash is
# systemd's to restart (the exit is seen well before)
settings "supervisor: {runner: systemd, stop_timeout: 2s, health_interval: 100ms, health_failures: 10}" \
    "log_dir: $T/logs"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port)
# 14000 MiB of host memory fits once in the fixture's MemAvailable, not
# twice: ExecStartPre's preflight passes only without the daemon's own
# reservation for this start
# cmd_preset ID PORT HOST_MB [ARG...]: fakellm as a command preset that
# declares its host memory (no estimate overrides a command's declaration)
cmd_preset() {
    local id=$1 port=$2 mb=$3; shift 3
    local extra=""
    for a in "$@"; do extra+=", $a"; done
    printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"%s]\nmemory: {host_mb: %s}\n' \
        "$id" "$port" "$FAKELLM_BIN" "$MODEL" "$extra" "$mb" >"$C/presets/$id.yaml"
}
cmd_preset svc "$P1" 14000
preset crash "$P2" 'env: {FAKELLM_CRASH_AFTER: "1"}' \
    'restart: {max_restarts: 1, restart_window: 10m, backoff_initial: 200ms, backoff_max: 1s}'
cmd_preset gated "$P3" 8000
preset absent "$P4"
mkdir -p "$T/logs"
# when the bus goes, the fake leaves the units running (as systemd does)
export FAKE_SYSTEMD_KEEP_UNITS=1
bus_start
# without the bus's guid, as a session's address is: the bus restarted
# later on the same socket has another
export DBUS_SESSION_BUS_ADDRESS=unix:path=$T/bus
systemd_fake_start
for s in svc crash gated; do
    gpumod template install "$s" --user --yes >"$T/install.out" 2>&1 || t_fail "template install $s: $(cat "$T/install.out")"
done
# gated's gate sees a host with 2 GB available (no daemon for its preflight: standalone)
sed -i "s|^Type=exec|Type=exec\nEnvironment=\"GPUMOD_SOCKET=$T/none.sock\" \"GPUMOD_PROC_ROOT=$FIXTURES/proc/short\"|" \
    "$GPUMOD_UNIT_DIR/gpumod-gated.service"
daemon_start

ask() { curl -s -o /dev/null --max-time $((5 * S)) -H 'Content-Type: application/json' \
        -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}' "http://127.0.0.1:$1/v1/chat/completions"; }
calls() { grep -c "^$1 $2" "$FAKE_SYSTEMD_LOG"; }

t_begin "start: StartUnit, the gate in ExecStartPre passes via the daemon, ready on health"
t_run 0 gpumod service start svc
t_eq "$(state_of svc)" ready "state"
t_eq "$(sd_state gpumod-svc.service)" active/running "unit state"
MAIN=$(sd_prop gpumod-svc.service MainPID)
t_eq "$(field svc .pid)" "$MAIN" "the service's pid is the unit's MainPID"
t_eq "$(calls StartUnit gpumod-svc.service)" 1 "StartUnit calls"
t_has "$T/logs/svc.unit.log" "via: daemon"
t_has "$T/logs/svc.log" "via: daemon"
events svc
t_match "$T/ev" '"kind":"footprint"'
t_end

t_begin "stop: StopUnit, the unit inactive, its processes gone"
t_run 0 gpumod service stop svc
t_eq "$(state_of svc)" down "state"
t_eq "$(sd_state gpumod-svc.service)" inactive/dead "unit state"
alive "$MAIN" && t_fail "main pid $MAIN still alive after the stop"
t_eq "$(calls StopUnit gpumod-svc.service)" 1 "StopUnit calls"
t_end

t_begin "a crash: systemd restarts it (NRestarts), the daemon observes and does not restart it too"
t_run 0 gpumod service start crash
M1=$(sd_prop gpumod-crash.service MainPID)
ask "$P2"
restarted() { [ "$(sd_prop gpumod-crash.service NRestarts)" = 1 ] && is_state crash ready; }
t_wait 10 restarted || t_fail "not restarted and ready (NRestarts $(sd_prop gpumod-crash.service NRestarts), state $(state_of crash))"
M2=$(sd_prop gpumod-crash.service MainPID)
[ "$M1" != "$M2" ] || t_fail "the main pid did not change ($M1)"
t_eq "$(field crash .pid)" "$M2" "the service's pid follows the new MainPID"
t_eq "$(calls StartUnit gpumod-crash.service)" 1 "StartUnit calls (systemd restarted, not the daemon)"
events crash
t_eq "$(jq -s '[.[] | select(.kind == "restart" and .data.by == "systemd")] | length' "$T/ev")" 1 "restart events by systemd"
t_eq "$(jq -r 'select(.kind == "state") | .from + ">" + .to' "$T/ev" | tr '\n' ' ')" \
    "down>starting starting>ready ready>starting starting>ready " "state events"
t_end

t_begin "start limit: systemd gives up, the service is failed"
ask "$P2"
t_wait 10 is_state crash failed || t_fail "not failed (state $(state_of crash), unit $(sd_state gpumod-crash.service))"
t_eq "$(sd_prop gpumod-crash.service Result)" start-limit-hit "unit Result"
events crash
t_has "$T/ev" "start limit hit"
t_eq "$(calls StartUnit gpumod-crash.service)" 1 "StartUnit calls"
t_end

t_begin "the gate refuses inside ExecStartPre: the start fails with the gate's reason"
t_run 1 gpumod service start gated
t_has err "preflight gate in ExecStartPre refused"
t_has err "refused: 'gated'"
t_eq "$(state_of gated)" failed "state"
t_eq "$(sd_prop gpumod-gated.service MainPID)" 0 "no main process ran"
t_end

t_begin "a unit that is not installed: the start fails with the fix"
t_run 1 gpumod service start absent
t_has err "unit gpumod-absent.service is not installed"
t_has err "gpumod template install absent --yes"
t_end

t_begin "a stale unit (ExecStart differs from the preset): the start fails with the fix"
cmd_preset svc "$P1" 14000 --parallel 2
t_run 0 gpumod reload
t_run 1 gpumod service start svc
t_has err "unit gpumod-svc.service is stale"
t_has err "gpumod template install svc --yes"
cmd_preset svc "$P1" 14000
t_run 0 gpumod reload
t_end

t_begin "a preset binary reached through a symlink: not stale, the unit names it as the preset does"
mkdir -p "$T/bin"
ln -sf "$FAKELLM_BIN" "$T/bin/llama-link"
P5=$(free_port)
printf 'id: link\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\nmemory: {host_mb: 100}\n' \
    "$P5" "$T/bin/llama-link" "$MODEL" >"$C/presets/link.yaml"
gpumod template install link --user --yes >"$T/install.out" 2>&1 || t_fail "template install link: $(cat "$T/install.out")"
t_run 0 gpumod reload
t_run 0 gpumod service start link
t_eq "$(state_of link)" ready "state"
t_run 0 gpumod service stop link
t_end

t_begin "ExecStartPre fails without the gate's verdict: 'ExecStartPre failed', not a refusal"
P6=$(free_port)
cmd_preset prefail "$P6" 100
gpumod template install prefail --user --yes >"$T/install.out" 2>&1 || t_fail "template install prefail: $(cat "$T/install.out")"
sed -i "s|^ExecStartPre=[^ ]*|ExecStartPre=$T/no/such/gpumod|" "$GPUMOD_UNIT_DIR/gpumod-prefail.service"
sd_call Reload || t_fail "Reload: $(cat "$T/err")"
t_run 0 gpumod reload
t_run 1 gpumod service start prefail
t_lacks err "refused the start"
t_has err "ExecStartPre failed"
t_has err "journalctl --user -u gpumod-prefail.service"
t_lacks err "exited with code 1"
t_end

t_begin "the main process crashes while another process of the unit lingers: an exit, then systemd's restart"
P7=$(free_port)
printf '#!/bin/sh\ntrap "" TERM\nsleep %s &\ntrap - TERM\nFAKELLM_CRASH_AFTER=1 exec %s -m %s --port %s\n' \
    "$((4 * S))" "$FAKELLM_BIN" "$MODEL" "$P7" >"$T/wrap.sh"
chmod +x "$T/wrap.sh"
printf 'id: linger\ndriver: command\nport: %s\ncommand: [%s]\nmemory: {host_mb: 100}\n%s\n' "$P7" "$T/wrap.sh" \
    'restart: {max_restarts: 3, restart_window: 10m, backoff_initial: 200ms, backoff_max: 1s}' >"$C/presets/linger.yaml"
gpumod template install linger --user --yes >"$T/install.out" 2>&1 || t_fail "template install linger: $(cat "$T/install.out")"
t_run 0 gpumod reload
t_run 0 gpumod service start linger
ask "$P7"
relinger() { [ "$(sd_prop gpumod-linger.service NRestarts)" = 1 ] && is_state linger ready; }
t_wait 20 relinger || t_fail "not restarted and ready (NRestarts $(sd_prop gpumod-linger.service NRestarts), state $(state_of linger))"
events linger
t_eq "$(jq -s '[.[] | select(.kind == "exit")] | length' "$T/ev")" 1 "exit events"
t_eq "$(jq -s '[.[] | select(.kind == "restart" and .data.by == "systemd")] | length' "$T/ev")" 1 "restart events by systemd"
t_eq "$(calls StartUnit gpumod-linger.service)" 1 "StartUnit calls (systemd restarted, not the daemon)"
t_eq "$(calls StopUnit gpumod-linger.service)" 0 "StopUnit calls"
t_run 0 gpumod service stop linger
t_end

t_begin "the output file truncated (copytruncate) or renamed: the reader follows"
P8=$(free_port)
preset logs "$P8" 'env: {FAKELLM_LOG_REQUESTS: "1"}'
gpumod template install logs --user --yes >"$T/install.out" 2>&1 || t_fail "template install logs: $(cat "$T/install.out")"
t_run 0 gpumod reload
t_run 0 gpumod service start logs
: >"$T/logs/logs.unit.log"
ask "$P8"
ask "$P8"
ask "$P8"
after_trunc() { [ "$(grep -c "log_request" "$T/logs/logs.log")" -ge 3 ]; }
t_wait 5 after_trunc || t_fail "requests after the truncation not in logs.log ($(grep -c done "$T/logs/logs.log") done lines; unit.log: $(grep -c done "$T/logs/logs.unit.log"))"
mv "$T/logs/logs.unit.log" "$T/logs/logs.unit.log.1"
echo "marker-after-rename" >>"$T/logs/logs.unit.log"
renamed() { grep -q marker-after-rename "$T/logs/logs.log"; }
t_wait 5 renamed || t_fail "the new file after a rename is not read"
t_run 0 gpumod service stop logs
t_end

t_begin "kill -9 of the daemon: the unit runs on; the next daemon adopts it (an older configuration: its preset changed)"
t_run 0 gpumod service start svc
MAIN=$(sd_prop gpumod-svc.service MainPID)
kill -KILL "$DPID"
reap "$DPID" 10
t_eq "$(sd_state gpumod-svc.service)" active/running "unit state with the daemon gone"
cmd_preset svc "$P1" 14000 --parallel 2
daemon_start
t_wait 10 is_state svc ready || t_fail "not adopted (state $(state_of svc))"
t_eq "$(field svc .pid)" "$MAIN" "the adopted pid"
t_eq "$(field svc .config_changed)" true "config_changed (the unit runs the older command)"
t_has "$T/daemon.log" "older configuration"
t_eq "$(calls StartUnit gpumod-svc.service)" 2 "StartUnit calls (none for the adoption)"
alive "$MAIN" || t_fail "the adopted main pid $MAIN is gone"
cmd_preset svc "$P1" 14000
t_run 0 gpumod reload
t_end

t_begin "the bus goes: the units run on, the services say why; the daemon reconnects"
kill -TERM "$BUS_PID"
reap_any() { ! alive "$1"; }
t_wait 5 reap_any "$SYSTEMD_PID" || t_fail "the fake did not exit when the bus went"
t_wait 5 is_state svc failed || t_fail "not failed after the bus loss (state $(state_of svc))"
events svc
t_has "$T/ev" "bus connection was lost"
sleep $((2 * S))
alive "$MAIN" || t_fail "the unit's main pid $MAIN was killed after the bus loss"
# the next fake answers StartUnit 11 s late (after the runner's 10 s deadline)
export FAKE_DELAY_STARTUNIT_MS=11000
rm -f "$T/bus"
bus_start
export DBUS_SESSION_BUS_ADDRESS=unix:path=$T/bus
systemd_fake_start
reconnected() { grep -q "reconnected to the user bus" "$T/daemon.log"; }
# backoff 1 s doubling: the tries after 1, 3, 7 and 15 s
t_wait 20 reconnected || t_fail "no reconnect: $(grep 'systemd runner' "$T/daemon.log" | tail -3)"
kill -TERM "$MAIN"
t_wait 5 gone "$MAIN" || t_fail "$MAIN did not end on SIGTERM"
t_end

t_begin "StartUnit's answer later than its deadline: the start stands"
t_run 0 gpumod service start svc
t_eq "$(state_of svc)" ready "state"
sleep $((12 * S))
t_eq "$(state_of svc)" ready "state after StartUnit's deadline passed"
t_has "$T/daemon.log" "reading gpumod-svc.service's state to decide"
t_eq "$(sd_state gpumod-svc.service)" active/running "unit state"
unset FAKE_DELAY_STARTUNIT_MS FAKE_SYSTEMD_KEEP_UNITS
t_end

t_begin "the daemon stops cleanly (and stops its units)"
daemon_stop
t_eq "$(sd_state gpumod-svc.service)" inactive/dead "unit state"
t_end
t_done
