#!/usr/bin/env bash
# gpumod-exec as the guard of a service's process group: kill -9 of the
# daemon (here a small parent we control) leaves no pid of the group within
# 2 s, forked workers included; a thread of the parent exiting is not the
# parent's death; SIGTERM to the group does not end the helper before the
# engine; a stopped engine's leftovers (in the group, or escaped with
# setsid) are killed unless --no-kill-group-on-exit; orphans are reaped.
. "$(dirname "$0")/lib.sh"

EXEC=$BUILD/gpumod-exec
MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE

if [ ! -x "$EXEC" ]; then
    t_begin "gpumod-exec is built"
    t_fail "$EXEC is missing (make: mk/exec.mk)"
    t_end
    t_begin "no sanitizer report from any helper"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log 2>/dev/null; then
    t_fail "a sanitizer report:"
    grep -hE -A12 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log | head -40 | sed 's/^/#   /'
fi
t_end

t_done
    exit
fi

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
children() { ps -o pid= --ppid "$1" | tr -d ' '; }
# the live (not zombie) pids of process group $1
group_live() { ps -e -o pgid=,stat=,pid= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { print $3 }'; }
group_gone() { [ -z "$(group_live "$1")" ]; }
gone() { ! alive "$1"; }
pid_file() { [ -s "$1" ]; }

t_begin "kill -9 of the parent: within 2 s no pid of the group remains, the forked worker included"
P=$(free_port)
t_spawn par bash -c 'FAKELLM_FORK_WORKER=1 FAKELLM_RAM_MB=32 "$0" --parent-pid $$ -- "$1" -m "$2" --port "$3" &
                     echo $! >"$4"; wait' "$EXEC" "$FAKELLM_BIN" "$MODEL" "$P" "$T/h1.pid"
par=$_t_last_pid
t_wait 5 pid_file "$T/h1.pid" || t_fail "no helper pid"
h=$(cat "$T/h1.pid")
wait_healthy "$P" || t_fail "never healthy"
e=$(children "$h"); w=$(children "$e")
t_eq "$(wc -w <<<"$e $w")" 2 "engine and worker"
t_eq "$(group_live "$h" | sort -n | tr '\n' ' ')" "$(printf '%s\n' "$h" "$e" "$w" | sort -n | tr '\n' ' ')" "group members"
t_eq "$(ps -o sid= -p "$w" | tr -d ' ')" "$h" "the worker's session"
start=$(now_ms)
kill -KILL "$par"
t_wait 10 group_gone "$h" || t_fail "left after 10 s: $(group_live "$h" | tr '\n' ' ')"
t_diag "group gone $(( $(now_ms) - start )) ms after kill -9 of the parent"
t_has "$T/par.log" "gpumod-exec: parent $par died: killing process group $h"
curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$P/health"
t_eq "$?" 7 "curl after (7 = refused)"
t_end

t_begin "kill -9 of the parent while the engine ignores SIGTERM and a worker is in a new session"
t_spawn par2 bash -c '"$0" --parent-pid $$ -- sh -c "trap \"\" TERM; setsid sleep 60 & echo \$! >\"$2\"; exec sleep 60" &
                      echo $! >"$1"; wait' "$EXEC" "$T/h2.pid" "$T/esc2.pid"
par=$_t_last_pid
t_wait 5 pid_file "$T/h2.pid" || t_fail "no helper pid"
t_wait 5 pid_file "$T/esc2.pid" || t_fail "no escaped pid"
h=$(cat "$T/h2.pid"); esc=$(cat "$T/esc2.pid")
t_eq "$(ps -o sid= -p "$esc" | tr -d ' ')" "$esc" "the escaped worker leads its own session"
kill -KILL "$par"
t_wait 10 group_gone "$h" || t_fail "group left after 10 s: $(group_live "$h" | tr '\n' ' ')"
t_wait 10 gone "$esc" || t_fail "the escaped descendant survived"
t_end

if ! command -v python3 >/dev/null; then
    t_skip "a thread of the parent exiting is not the parent's death" "no python3 for a threaded parent"
else
t_begin "a thread of the parent exiting is not the parent's death (PDEATHSIG is per thread)"
t_spawn thr python3 -c '
import os, subprocess, sys, threading, time
def spawn():
    p = subprocess.Popen([sys.argv[1], "--parent-pid", str(os.getpid()), "--", "sleep", "60"])
    # live on until the helper has forked, so past its prctl: the signal
    # sent when this thread exits must reach it
    kids = "/proc/%d/task/%d/children" % (p.pid, p.pid)
    for _ in range(1000):
        with open(kids) as f:
            if f.read().strip():
                break
        time.sleep(0.01)
    with open(sys.argv[2], "w") as f:
        f.write(str(p.pid))
t = threading.Thread(target=spawn)
t.start()
t.join()
time.sleep(60)
' "$EXEC" "$T/h3.pid"
py=$_t_last_pid
t_wait 5 pid_file "$T/h3.pid" || t_fail "no helper pid"
h=$(cat "$T/h3.pid")
sleep 0.5
alive "$h" || t_fail "the helper died when the spawning thread exited"
t_eq "$(group_live "$h" | wc -l)" 2 "helper and sleep still running"
t_lacks "$T/thr.log" "died: killing"
kill -KILL "$py"
t_wait 10 group_gone "$h" || t_fail "group left after the process died: $(group_live "$h" | tr '\n' ' ')"
t_end
fi

t_begin "SIGTERM to the group, engine ignores it: all survive until SIGKILL to the group, then nothing remains"
P=$(free_port)
t_spawn ign env FAKELLM_IGNORE_SIGTERM=1 "$EXEC" -- "$FAKELLM_BIN" -m "$MODEL" --port "$P"
h=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
e=$(children "$h")
kill -TERM -- "-$h"
sleep 0.5
alive "$h" || t_fail "the helper died on SIGTERM"
alive "$e" || t_fail "the engine died on SIGTERM"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/health")" 200 "health after SIGTERM"
kill -KILL -- "-$h"
t_wait 10 group_gone "$h" || t_fail "left after SIGKILL: $(group_live "$h" | tr '\n' ' ')"
reap "$h" 10 || t_fail "helper not reaped"
t_eq "$rc" 137 "helper exit status"
t_end

t_begin "SIGTERM to the group: the engine and its worker exit, the helper reports 0 after them"
P=$(free_port)
t_spawn clean env FAKELLM_FORK_WORKER=1 "$EXEC" -- "$FAKELLM_BIN" -m "$MODEL" --port "$P"
h=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
e=$(children "$h"); w=$(children "$e")
kill -TERM -- "-$h"
reap "$h" 5 || t_fail "helper still running"
t_eq "$rc" 0 "helper exit status (the engine's)"
group_gone "$h" || t_fail "left after the helper exited: $(group_live "$h" | tr '\n' ' ')"
gone "$w" || t_fail "the worker survived"
t_end

t_begin "the engine exits with leftovers: the group and escaped descendants are killed (default)"
start=$(now_ms)
t_run 3 "$EXEC" -- sh -c 'sleep 60 & echo $! >"$0"; setsid sleep 60 & echo $! >"$1"; exit 3' "$T/left.pid" "$T/esc.pid"
ms=$(( $(now_ms) - start ))
[ "$ms" -lt $((2000 * S)) ] || t_fail "took $ms ms"
gone "$(cat "$T/left.pid")" || t_fail "the leftover in the group survived"
gone "$(cat "$T/esc.pid")" || t_fail "the leftover that left the group survived"
t_end

t_begin "--no-kill-group-on-exit: the helper waits for the leftovers, then exits with the engine's code"
start=$(now_ms)
t_run 4 "$EXEC" --no-kill-group-on-exit -- sh -c 'sleep 1 & exit 4'
ms=$(( $(now_ms) - start ))
[ "$ms" -ge 900 ] || t_fail "returned after $ms ms, before the leftover finished"
t_end

t_begin "the helper is the subreaper: an orphaned grandchild is reparented to it and reaped"
"$EXEC" --no-kill-group-on-exit -- sh -c 'sh -c "sleep 1 & echo \$! >$0"; exit 0' "$T/orph.pid" &
h=$!
t_wait 5 pid_file "$T/orph.pid" || t_fail "no orphan pid"
o=$(cat "$T/orph.pid")
t_wait 10 test "$(ps -o ppid= -p "$o" | tr -d ' ')" = "$h" || t_fail "the orphan's parent is $(ps -o ppid= -p "$o")"
reap "$h" 5 || t_fail "helper still running"
t_eq "$rc" 0 "exit status"
[ -e "/proc/$o" ] && t_fail "the orphan was not reaped"
t_end

t_begin "a worker that forks again after the engine died is still killed (repeated scans)"
t_run 0 "$EXEC" -- sh -c '(trap "" TERM; while :; do sleep 0.01 & wait; done) & echo $! >"$0"; exit 0' "$T/loop.pid"
gone "$(cat "$T/loop.pid")" || t_fail "the forking worker survived"
t_end

t_begin "no sanitizer report from any helper"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log 2>/dev/null; then
    t_fail "a sanitizer report:"
    grep -hE -A12 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log | head -40 | sed 's/^/#   /'
fi
t_end

t_done
