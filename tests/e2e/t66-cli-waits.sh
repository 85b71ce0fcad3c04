#!/usr/bin/env bash
# `gpumod service start` and `gpumod mode switch` wait on the event
# stream (src/cli/evwait.c), not by polling: for a start of a 1.5 s load
# the daemon's debug log shows one GET /events?follow=1&service=ID and a
# handful of reads of the service (a 50 ms poller made 30 or more), for
# a switch one stream of kind=switch.phase and a handful of reads of
# GET /switches/ID.  A start that fails says why and exits 1; --timeout
# ends the wait with exit 4 while the start goes on; a newer start that
# replaced the ticket is named and waited for; a daemon killed during the
# wait ends it with exit 3 at once (the stream's end, not the next poll),
# and so does one restarted meanwhile.  A daemon without the stream (an
# older one, played by tests/fakes/old-daemon.py) is polled every 50 ms.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {health_interval: 1s, stop_timeout: 5s}"
preset slow "$(free_port)" 'env: {FAKELLM_LOAD_MS: "1500"}' 'memory: {gpu_mb: 0, host_mb: 16}'
preset bad "$(free_port)" 'env: {FAKELLM_LOAD_MS: "400", FAKELLM_EXIT_DURING_LOAD: "3"}' \
    'memory: {gpu_mb: 0, host_mb: 16}'
preset long "$(free_port)" 'env: {FAKELLM_LOAD_MS: "60000"}' 'memory: {gpu_mb: 0, host_mb: 16}'

mkdir -p "$C/modes"
printf 'id: M\nservices: [slow]\n' >"$C/modes/M.yaml"
printf 'id: E\nservices: []\n' >"$C/modes/E.yaml"

# the daemon with -v: its log names each request (api.c, log_debug)
t_spawn daemon "$GPUMOD_BIN" -v serve --foreground
DPID=$_t_last_pid
t_wait 10 sock_up || t_fail "the daemon never answered"

t_begin "service start: ready through the event stream, a handful of reads of the service"
: >"$T/daemon.log.mark"
before=$(wc -l <"$T/daemon.log")
t_run 0 gpumod service start slow
t_match out '^ready: slow \(pid [0-9]+, port [0-9]+, state ready\) in [0-9.]+ s$'
tail -n +"$((before + 1))" "$T/daemon.log" >"$T/req.log"
t_has "$T/req.log" 'GET /events?follow=1&service=slow'
reads=$(grep -c 'GET /services/slow?daemon=1' "$T/req.log")
# a tick each second of silence and one read per event (spawn, state,
# footprint): about 5 for a 1.5 s load; 15 leaves room for a slow machine
[ "$reads" -ge 1 ] && [ "$reads" -le 15 ] || t_fail "$reads reads of the service during a 1.5 s load (expected 1 to 15)"
t_end

t_begin "mode switch: the result through the event stream of the switch's phases, a handful of reads of it"
t_run 0 gpumod service stop slow
before=$(wc -l <"$T/daemon.log")
t_run 0 gpumod mode switch M
t_has out "M"
tail -n +"$((before + 1))" "$T/daemon.log" >"$T/req.log"
t_has "$T/req.log" 'GET /events?follow=1&kind=switch.phase'
reads=$(grep -cE 'GET /switches/[0-9]+' "$T/req.log")
# one read per phase event (a handful) and one per second of silence
[ "$reads" -ge 1 ] && [ "$reads" -le 20 ] || t_fail "$reads reads of the switch during a 1.5 s load (expected 1 to 20)"
t_run 0 gpumod mode switch E
t_end

t_begin "service start of an engine that dies while loading: exit 1, the outcome and its reason"
t_run 1 gpumod service start bad
t_match err "service start: 'bad' failed"
t_eq "$(state_of bad)" failed "state of bad"
t_end

t_begin "service start --timeout 1: exit 4 after about a second, the start goes on in the daemon"
t_run 4 gpumod service start long --timeout 1
t_has err "'long' is not ready after 1 s (still starting"
t_eq "$(state_of long)" starting "state of long after the CLI gave up"
t_run 0 gpumod service stop long
t_end

t_begin "a newer start replaced the ticket while the CLI waited: it says so and waits for that one"
t_spawn waiter2 "$GPUMOD_BIN" service start long --timeout 4
W2=$_t_last_pid
starting() { [ "$(state_of long)" = starting ]; }
t_wait 10 starting || t_fail "long never began to start"
kill -STOP "$W2" # the waiter sees nothing of what follows until it runs again
t_run 0 gpumod service stop long
t_run 0 gpumod service start long --no-wait
kill -CONT "$W2"
reap "$W2" 20 || t_fail "the waiter did not end"
t_eq "$rc" 4 "the waiter's exit code (its --timeout: the newer start loads for a minute)"
t_match "$T/waiter2.log" "a newer start of 'long' \\(#[0-9]+ by cli\\) replaced ticket [0-9]+; waiting for it"
t_run 0 gpumod service stop long
t_end

t_begin "a daemon without the event stream (an older one): the CLI reads every 50 ms instead, no spin"
t_spawn olddaemon python3 "$GPUMOD_SRC/tests/fakes/old-daemon.py" "$T/old.sock" "$T/old.log"
old_up() { [ -S "$T/old.sock" ]; }
t_wait 10 old_up || t_fail "the old-daemon fake never listened"
t_run 0 env GPUMOD_SOCKET="$T/old.sock" "$GPUMOD_BIN" service start x
t_match out '^ready: x \(pid 42, port 9, state ready\)'
t_eq "$(grep -c '^GET /services/x?daemon=1' "$T/old.log")" 6 "reads of the service (five pending, then ready)"
streams=$(grep -c '^GET /events?follow=1&service=x' "$T/old.log")
# one stream try per read at most (each ends at once and is followed by a 50 ms pause), not a spin
[ "$streams" -ge 1 ] && [ "$streams" -le 6 ] || t_fail "$streams stream requests for 6 reads (expected 1 to 6)"
kill -TERM "$(cat "$T/olddaemon.pid")" 2>/dev/null
t_end

t_begin "the daemon killed during the wait: the CLI exits 3 at once, saying the daemon is gone"
t_spawn waiter "$GPUMOD_BIN" service start long
WPID=$_t_last_pid
starting() { [ "$(state_of long)" = starting ]; }
t_wait 10 starting || t_fail "long never began to start"
sleep 0.3 # the waiter is on the stream by now (if not, its next read finds no daemon: the same exit)
kill -KILL "$DPID"
reap "$WPID" 10 || t_fail "the CLI still waits 10 s after the daemon was killed"
t_eq "$rc" 3 "the waiting CLI's exit code"
t_has "$T/waiter.log" "service start: the daemon went away while 'long' was starting (start ticket"
t_end

t_begin "the daemon restarted while the CLI waited: exit 3, the ticket is gone"
t_spawn daemon2 "$GPUMOD_BIN" -v serve --foreground
DPID=$_t_last_pid
t_wait 10 sock_up || t_fail "the second daemon never answered"
t_spawn waiter3 "$GPUMOD_BIN" service start long
W3=$_t_last_pid
t_wait 10 starting || t_fail "long never began to start"
kill -STOP "$W3"
kill -KILL "$DPID"
t_spawn daemon3 "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 sock_up || t_fail "the third daemon never answered"
kill -CONT "$W3"
reap "$W3" 10 || t_fail "the waiter did not end"
t_eq "$rc" 3 "the waiter's exit code"
t_has "$T/waiter3.log" "service start: the daemon restarted while 'long' was starting"
kill -TERM "$DPID"
reap "$DPID" 10 || t_fail "the last daemon did not stop"
t_end

t_done
