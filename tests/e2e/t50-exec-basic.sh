#!/usr/bin/env bash
# gpumod-exec as a program runner: exit codes and signals passed through,
# exec failures reported like a shell (127/126) but never run by one, its
# own errors as 125, the new session, --log, --cwd, --oom-score-adj, no fd
# leaked into the engine, the parent check that closes the prctl race, and
# signals to the helper alone (not forwarded unless --forward-signals).
. "$(dirname "$0")/lib.sh"

EXEC=$BUILD/gpumod-exec
S=$GPUMOD_TEST_TIME_SCALE
umask 022

if [ ! -x "$EXEC" ]; then
    t_begin "gpumod-exec is built"
    t_fail "$EXEC is missing (make: mk/exec.mk)"
    t_end
    t_done
    exit
fi

children() { ps -o pid= --ppid "$1" | tr -d ' '; }
have_child() { [ -n "$(children "$1")" ]; }

t_begin "exit code passes through"
t_run 0 "$EXEC" -- true
t_run 7 "$EXEC" -- sh -c 'exit 7'
t_run 255 "$EXEC" -- sh -c 'exit 255'
t_end

t_begin "death by signal N exits 128+N"
t_run 143 "$EXEC" -- sh -c 'kill -TERM $$'
t_run 137 "$EXEC" -- sh -c 'kill -KILL $$'
t_run 138 "$EXEC" -- sh -c 'kill -USR1 $$'
t_end

t_begin "a program not found: 127 and the shell's message"
t_run 127 "$EXEC" -- gpumod-no-such-program --flag
t_eq "$(cat "$T/err")" "gpumod-exec: cannot run 'gpumod-no-such-program': No such file or directory" "stderr"
t_run 127 "$EXEC" -- "$T/nope/prog"
t_has err "gpumod-exec: cannot run '$T/nope/prog': No such file or directory"
t_run 127 env PATH="$T" "$EXEC" -- ls
t_has err "cannot run 'ls': No such file or directory"
t_end

t_begin "not executable: 126 (EACCES, a directory, no #! line: never a shell)"
printf 'echo ran-by-a-shell\n' >"$T/script"
t_run 126 "$EXEC" -- "$T/script"
t_has err "gpumod-exec: cannot run '$T/script': Permission denied"
chmod +x "$T/script"
t_run 126 "$EXEC" -- "$T/script"
t_has err "gpumod-exec: cannot run '$T/script': Exec format error"
t_lacks out "ran-by-a-shell"
t_run 126 env PATH="$T" "$EXEC" -- script
t_has err "cannot run 'script': Exec format error"
t_run 126 "$EXEC" -- "$T"
t_has err "cannot run '$T': Permission denied"
t_end

t_begin "PATH search: EACCES is reported only if nothing later in PATH runs"
mkdir -p "$T/p1" "$T/p2"
printf '#!/bin/sh\necho p1\n' >"$T/p1/prog"
printf '#!/bin/sh\necho p2\n' >"$T/p2/prog"
chmod +x "$T/p2/prog"
t_run 0 env PATH="$T/p1:$T/p2" "$EXEC" -- prog
t_eq "$(cat "$T/out")" p2 "the program run"
t_run 126 env PATH="$T/p1" "$EXEC" -- prog
t_has err "cannot run 'prog': Permission denied"
t_end

t_begin "arguments are an argv, never a shell string"
t_run 0 "$EXEC" -- printf '%s|' 'a b' '$(touch '"$T"'/pwned)' '*' ';'
t_eq "$(cat "$T/out")" 'a b|$(touch '"$T"'/pwned)|*|;|' "argv"
[ -e "$T/pwned" ] && t_fail "a shell ran the argument"
t_end

t_begin "helper errors exit 125 with a message, and run nothing"
t_run 125 "$EXEC" --bogus -- touch "$T/ran"
t_has err "gpumod-exec: unknown option '--bogus'"
t_run 125 "$EXEC"
t_has err "gpumod-exec: no program given"
t_run 125 "$EXEC" --oom-score-adj 5000 -- touch "$T/ran"
t_has err "gpumod-exec: bad value '5000' for option '--oom-score-adj'"
t_run 125 "$EXEC" --parent-pid x -- touch "$T/ran"
t_has err "bad value 'x' for option '--parent-pid'"
t_run 125 "$EXEC" --cwd "$T/missing" -- touch "$T/ran"
t_has err "gpumod-exec: cannot change directory to '$T/missing': No such file or directory"
t_run 125 "$EXEC" --log "$T/missing/x.log" -- touch "$T/ran"
t_has err "gpumod-exec: cannot open log '$T/missing/x.log': No such file or directory"
[ -e "$T/ran" ] && t_fail "the program ran"
t_run 0 "$EXEC" --help
t_has out "usage: gpumod-exec [options] -- PROGRAM [ARGS...]"
t_end

t_begin "--parent-pid that is not our parent (it died before prctl): exit 125 at once"
start=$(date +%s%N)
t_run 125 "$EXEC" --parent-pid 1 -- touch "$T/ran"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
t_match err "^gpumod-exec: parent 1 is gone \(our parent is [0-9]+\): not running 'touch'$"
[ -e "$T/ran" ] && t_fail "the program ran"
[ "$ms" -lt $((1000 * S)) ] || t_fail "took $ms ms"
t_run 0 "$EXEC" --parent-pid $$ -- touch "$T/ran"
[ -e "$T/ran" ] || t_fail "--parent-pid of the real parent did not run the program"
t_end

t_begin "the program runs in a new session and group led by the helper"
"$EXEC" -- sh -c 'echo "$PPID $(ps -o pgid= -p $$) $(ps -o sid= -p $$)"' >"$T/ids" 2>&1 &
h=$!
wait $h
read -r ppid pgid sid <"$T/ids"
t_eq "$ppid" "$h" "the program's parent"
t_eq "$pgid" "$h" "the program's group"
t_eq "$sid" "$h" "the program's session"
t_end

t_begin "--cwd, and the environment passes through"
t_run 0 env GPUMOD_T50=yes "$EXEC" --cwd "$T" -- sh -c 'echo "$PWD $GPUMOD_T50"'
t_eq "$(cat "$T/out")" "$T yes" "cwd and env"
t_end

t_begin "--log appends stdout and stderr to the file (mode 0640); the helper's own stdout stays empty"
t_run 0 "$EXEC" --log "$T/svc.log" -- sh -c 'echo out1; echo err1 >&2'
t_run 3 "$EXEC" --log "$T/svc.log" -- sh -c 'echo out2; echo err2 >&2; exit 3'
t_eq "$(cat "$T/svc.log" | tr '\n' ' ')" "out1 err1 out2 err2 " "log content"
t_eq "$(stat -c %a "$T/svc.log")" 640 "log mode"
t_eq "$(cat "$T/out")" "" "helper stdout"
t_run 127 "$EXEC" --log "$T/svc.log" -- gpumod-no-such-program
t_has "$T/svc.log" "gpumod-exec: cannot run 'gpumod-no-such-program': No such file or directory"
t_end

t_begin "--oom-score-adj applies to the program"
t_run 0 "$EXEC" --oom-score-adj 500 -- cat /proc/self/oom_score_adj
t_eq "$(cat "$T/out")" 500 "oom_score_adj"
t_end

t_begin "no inherited fd reaches the program (only 0, 1, 2)"
"$EXEC" -- sleep 30 7>"$T/fd7" 9<"$T/fd7" 11>&1 &
h=$!
t_wait 5 have_child "$h" || t_fail "no child"
c=$(children "$h")
t_wait 5 test "$(cat "/proc/$c/comm" 2>/dev/null)" = sleep || t_fail "child never became sleep"
t_eq "$(ls "/proc/$c/fd" | sort -n | tr '\n' ' ')" "0 1 2 " "fds of the program"
kill -KILL "$c"
reap "$h" 5 || t_fail "helper still running"
t_eq "$rc" 137 "helper exit after SIGKILL of the program"
t_end

t_begin "SIGTERM to the helper alone is not forwarded (the daemon signals the group)"
"$EXEC" -- sleep 30 &
h=$!
t_wait 5 have_child "$h" || t_fail "no child"
c=$(children "$h")
kill -TERM "$h"; kill -INT "$h"; kill -HUP "$h"
sleep 0.3
alive "$h" || t_fail "the helper died on SIGTERM"
alive "$c" || t_fail "the program got the signal"
kill -KILL "$c"
reap "$h" 5 || t_fail "helper still running"
t_eq "$rc" 137 "exit status"
t_end

t_begin "--forward-signals: a signal to the helper reaches the program"
"$EXEC" --forward-signals -- sleep 30 &
h=$!
t_wait 5 have_child "$h" || t_fail "no child"
t_wait 5 test "$(cat "/proc/$(children "$h")/comm" 2>/dev/null)" = sleep || t_fail "child never became sleep"
kill -HUP "$h"
reap "$h" 5 || t_fail "helper still running"
t_eq "$rc" 129 "exit status (SIGHUP)"
t_end

t_begin "a SIGTERM that came before the fork reaches the program (a stop right after the start)"
# --log on a FIFO holds the helper in open(2) after it blocked its signals
# and before it forks: the signal reaches the helper alone, then the FIFO
# gets a reader and the program is forked
mkfifo "$T/hold"
"$EXEC" --log "$T/hold" -- sleep 30 &
h=$!
t_wait 5 grep -q 'SigBlk:.*[1-9a-f]' "/proc/$h/status" || t_fail "the helper never blocked its signals"
t_wait 5 test "$(awk '{print $3}' "/proc/$h/stat")" = S || t_fail "the helper never waited on the FIFO"
kill -TERM "$h"
cat "$T/hold" >/dev/null &
reader=$!
reap "$h" $((5 * S)) || { t_fail "the program never got the SIGTERM"; kill -KILL -- "-$h"; }
t_eq "$rc" 143 "exit status (SIGTERM)"
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
t_end

t_done
