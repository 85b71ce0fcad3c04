#!/usr/bin/env bash
# Stops through the daemon: an engine that ignores SIGTERM gets SIGKILL
# after stop_timeout; a forked worker dies with its parent; after a stop no
# pid of the group remains.  kill -9 of the daemon: within 2 s no pid of
# any service's group remains, forked workers included, and a restarted
# daemon reports a clean state.  A group left by a previous daemon (a run
# file whose group still lives) is killed at start-up and reported.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 1s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port)
preset stubborn "$P1" 'env: {FAKELLM_IGNORE_SIGTERM: "1"}'
preset forker "$P2" 'env: {FAKELLM_FORK_WORKER: "1", FAKELLM_RAM_MB: "16"}'
preset plain "$P3"
P4=$(free_port)
preset quick "$P4"
daemon_start
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

t_begin "ignore SIGTERM: SIGKILL after stop_timeout, then down with nothing left"
t_run 0 gpumod service start stubborn
pg=$(field stubborn .pgid); eng=$(field stubborn .pid)
t_eq "$(alive "$eng" && echo yes)" yes "engine alive"
t0=$(now_ms)
t_run 0 gpumod service stop stubborn
t_diag "stop took $(( $(now_ms) - t0 )) ms with stop_timeout 1 s"
t_eq "$(state_of stubborn)" down "state"
t_eq "$(group_live "$pg" | wc -l)" 0 "members of group $pg"
events stubborn
t_eq "$(jq -rs '[.[] | select(.kind == "exit")][-1].data.signal' "$T/ev")" 9 "the exit event's signal (SIGKILL)"
t_end

t_begin "a forked worker dies with its parent: after stop no pid of the group remains"
t_run 0 gpumod service start forker
pg=$(field forker .pgid)
# the spawn runner's group: the exec helper, the engine, its worker; a unit's: the engine and its worker
want=3; runner_is systemd && want=2
t_wait 5 test "$(group_live "$pg" | wc -l)" -ge $want || t_fail "expected $want processes (helper (spawn runner), engine and worker) in group $pg"
members=$(group_live "$pg" | tr '\n' ' ')
t_diag "group $pg: $members"
t_run 0 gpumod service stop forker
for p in $members; do alive "$p" && t_fail "pid $p of group $pg still alive after stop"; done
t_eq "$(state_of forker)" down "state"
t_end

t_begin "a stop 0-5 ms after a start reaches the engine: 20 times, never SIGKILL"
# start?wait=0, then stop after a gap that lands anywhere in the spawn: in
# admission, before the exec helper made its group, before it forked the
# engine, during the engine's start-up.  Each stop must end the run by
# SIGTERM (fakellm exits 0 on it, or dies of it before its handler is up)
# and never wait stop_timeout for SIGKILL.
python3 - "$GPUMOD_SOCKET" quick 20 >"$T/race.log" 2>&1 <<'PY'
import socket, sys, time
path, svc, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def post(url):
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(30)
    c.connect(path)
    c.sendall(("POST %s HTTP/1.1\r\nHost: gpumod\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % url).encode())
    data = b""
    while True:
        b = c.recv(65536)
        if not b: break
        data += b
    c.close()
    return data.split(b" ", 2)[1].decode()
for i in range(n):
    a = post("/services/%s/start?wait=0" % svc)
    time.sleep((i % 6) / 1000.0)
    b = post("/services/%s/stop" % svc)
    print(i, a, b, flush=True)
PY
t_eq "$?" 0 "the race client"
t_eq "$(awk '$3 == 200' "$T/race.log" | wc -l)" 20 "stops answered 200"
events quick
# every run that spawned ended: by SIGTERM (signal 15, or fakellm's exit 0)
jq -c 'select(.kind == "exit") | .data' "$T/ev" >"$T/exits"
t_diag "$(grep -c . "$T/exits") of 20 starts spawned before their stop; exits: $(sort "$T/exits" | sed 's/"pid":[0-9]*//' | uniq -c | tr '\n' ' ')"
t_eq "$(jq -s '[.[] | select(.signal == 9 or .code == 137)] | length' "$T/exits")" 0 "exits by SIGKILL"
# a unit's exit comes from systemd without the engine's status
runner_is spawn && t_eq "$(jq -s '[.[] | select(.signal != 15 and .code != 0)] | length' "$T/exits")" 0 \
    "exits not by SIGTERM"
t_lacks "$T/ev" "SIGKILL"
t_lacks "$T/daemon.log" "'quick': still running"
t_eq "$(state_of quick)" down "state"
t_end

if runner_is systemd; then
    sd_skip "kill -9 of the daemon: within 2 s no pid of any group remains, workers included" \
        "units outlive the daemon by design (a restarted daemon adopts them; t93)"
    sd_skip "a restarted daemon reports a clean state" "units outlive the daemon by design (adopted, not killed)"
else
    t_begin "kill -9 of the daemon: within 2 s no pid of any group remains, workers included"
    t_run 0 gpumod service start forker
    t_run 0 gpumod service start plain
    all=""
    for s in forker plain; do
        pg=$(field $s .pgid)
        t_wait 5 test "$(group_live "$pg" | wc -l)" -ge 2 || t_fail "$s: group $pg not complete"
        all="$all $(group_live "$pg" | tr '\n' ' ')"
    done
    [ "$(echo $all | wc -w)" -ge 5 ] || t_fail "expected at least 5 processes, got: $all"
    t0=$(now_ms)
    kill -KILL "$DPID"
    all_gone() { for p in $all; do alive "$p" && return 1; done; return 0; }
    t_wait 10 all_gone || t_fail "left 10 s after kill -9: $(for p in $all; do alive $p && echo $p; done | tr '\n' ' ')"
    t_diag "every service process gone $(( $(now_ms) - t0 )) ms after kill -9 of the daemon"
    reap "$DPID" 10
    t_end

    t_begin "a restarted daemon reports a clean state"
    daemon_start
    t_run 0 gpumod status --json
    t_jq out '[.services[] | .state] | unique | join(",")' down
    t_jq out '[.services[] | select(.pid != null)] | length' 0
    t_eq "$(ls "$GPUMOD_STATE_DIR/run" | grep -c '\.pid$')" 0 "run files left"
    t_end
fi

t_begin "reconcile: a group a previous daemon left is killed at start-up and reported"
daemon_stop
t_spawn leftover sleep 300
lp=$_t_last_pid
t_wait 10 test -e "/proc/$lp/stat" || t_fail "no leftover process"
st=$(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$lp/stat")
mkdir -p "$GPUMOD_STATE_DIR/run"
echo "$lp $st" >"$GPUMOD_STATE_DIR/run/plain.pid"
daemon_start
t_wait 5 gone "$lp" || t_fail "leftover pid $lp survived the daemon's start"
events plain
t_has "$T/ev" "left running by a previous daemon: process group $lp"
t_eq "$(ls "$GPUMOD_STATE_DIR/run" | grep -c '\.pid$')" 0 "run files left"
t_end

t_begin "a run file whose pid was reused is left alone"
t_spawn other sleep 300
op=$_t_last_pid
daemon_stop
echo "$op 1" >"$GPUMOD_STATE_DIR/run/plain.pid" # start time 1: not this process
daemon_start
sleep 0.3
alive "$op" || t_fail "pid $op (not ours: another start time) was killed"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
