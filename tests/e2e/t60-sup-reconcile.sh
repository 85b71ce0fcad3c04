#!/usr/bin/env bash
# Reconcile's port pass: at start-up, after the run files' groups, each
# configured service's port is checked.  An orphan of a previous gpumod
# (parent pid 1, running the service's configured binary) holding it is
# reported and killed, and the service then starts; any other holder (not
# an orphan, or not the service's binary) is reported with its pid and
# command line, left alone, and a start of that service is refused naming
# it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 1s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port)
preset orphaned "$P1"
preset squatted "$P2"
preset foreign "$P3"

# orphan PORT ARGV0 CMD...: CMD in a new session whose shell exits at once,
# so CMD's parent becomes pid 1 (or the nearest subreaper); its pid in $op
orphan() {
    local port=$1 argv0=$2; shift 2
    setsid bash -c 'exec -a "$0" "$@" >/dev/null 2>&1 </dev/null & echo $!' "$argv0" "$@" >"$T/orphan.pid" </dev/null
    op=$(cat "$T/orphan.pid")
    _t_pids+=("$op")
    wait_healthy "$port" || t_fail "the orphan on port $port never listened"
}
ppid_of() { awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$1/stat"; }

# an orphan running fakellm (the configured binary) on orphaned's port
orphan "$P1" "$FAKELLM_BIN" "$FAKELLM_BIN" -m "$MODEL" --port "$P1"
o1=$op
# a child of this script running fakellm on squatted's port: not an orphan
fakellm_spawn squatter -- -m "$MODEL" --port "$P2"
sq=$_t_last_pid
wait_healthy "$P2" || t_fail "the squatter never listened"
# an orphan running another program (argv[0] and exe not fakellm) on foreign's port
o3=""
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) # the interpreter itself, not a shim
if [ -x "$py" ]; then
    orphan "$P3" other-server "$py" -c '
import socket, time, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
while True:
    c, _ = s.accept(); c.recv(1024)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); c.close()
' "$P3"
    o3=$op
fi
subreaper=""
[ "$(ppid_of "$o1")" = 1 ] || subreaper=$(ppid_of "$o1")
daemon_start

t_begin "an orphan of a previous gpumod on a service's port: reported and killed, the service then starts"
if [ -n "$subreaper" ]; then
    t_skip "$_t_name" "orphans are reparented to subreaper pid $subreaper here, not pid 1"
else
    t_wait 5 gone "$o1" || t_fail "orphan pid $o1 on port $P1 survived the daemon's start"
    events orphaned
    t_has "$T/ev" "port $P1 was held by pid $o1 ("
    t_has "$T/ev" "left by a previous gpumod: killed after"
    t_eq "$(jq -rs '[.[] | select(.kind == "exit")][0].data | .pid, .port, .reconciled' "$T/ev" | tr '\n' ' ')" \
        "$o1 $P1 true " "the exit event's data"
    t_match "$T/daemon.log" "orphaned.*orphan of a previous gpumod: SIGTERM to"
    t_run 0 gpumod service start orphaned
    t_eq "$(state_of orphaned)" ready "state"
    t_run 0 gpumod service stop orphaned
    t_end
fi

t_begin "a holder that is not an orphan: reported, left alone, the start refused naming it"
alive "$sq" || t_fail "the squatter (pid $sq, a child of the test) was killed"
events squatted
t_eq "$(jq -rs '[.[] | select(.kind == "gate")][0].data | .pid, .port, .action' "$T/ev" | tr '\n' ' ')" \
    "$sq $P2 reported " "the report's data"
t_has "$T/ev" "port $P2 is held by pid $sq ("
t_has "$T/ev" "not left by gpumod: left alone"
t_eq "$(count exit squatted)" 0 "exit events"
t_run 1 gpumod service start squatted
t_match err "port $P2 is held by pid $sq \(.*fakellm -m .* --port $P2"
t_eq "$(field squatted .last_start.code)" port_held "last_start.code"
t_eq "$(count spawn squatted)" 0 "spawns"
t_end

t_begin "an orphan running another program: reported, left alone, the start refused naming it"
if [ -z "$o3" ]; then
    t_skip "$_t_name" "no python3 to play the other program"
else
    alive "$o3" || t_fail "the other program (pid $o3) was killed"
    events foreign
    t_eq "$(jq -rs '[.[] | select(.kind == "gate")][0].data | .pid, .action' "$T/ev" | tr '\n' ' ')" \
        "$o3 reported " "the report's data"
    t_has "$T/ev" "other-server -c"
    t_run 1 gpumod service start foreign
    t_match err "port $P3 is held by pid $o3 \(other-server"
    t_end
fi

t_begin "the daemon stops cleanly; the foreign holders still run"
daemon_stop
alive "$sq" || t_fail "the squatter died with the daemon"
[ -z "$o3" ] || alive "$o3" || t_fail "the other program died with the daemon"
kill -TERM "$sq"; reap "$sq" 5
[ -z "$o3" ] || kill -TERM "$o3"
t_end
t_done
