#!/usr/bin/env bash
# GET /events?follow=1, the event stream (docs/api.md): the stored events
# after an id, then the live ones, with no gap and no duplicate (the ids
# are compared with what GET /events returns); a reconnect from the last
# id seen loses nothing; the service and kind filters; a reader that
# never reads is cut with a last line naming the id to resume from, and
# the daemon stays healthy; a backlog past the cap reaches a slow reader
# whole; bad parameters are 400s; `gpumod events -f`
# prints live events and exits 0 on SIGINT and SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

# a small per-stream cap, so that the slow reader is cut after a few
# hundred events (docs/api.md: a test-only setting)
export GPUMOD_EVENTS_FOLLOW_MAX=2000
settings "supervisor: {health_interval: 1s, stop_timeout: 5s}"
preset a "$(free_port)" 'memory: {gpu_mb: 0, host_mb: 16}'
preset b "$(free_port)" 'memory: {gpu_mb: 0, host_mb: 16}'
daemon_start

API=http://gpumod
get() { curl -s -S --max-time $((10 * S)) --unix-socket "$GPUMOD_SOCKET" "$API$1"; }
# poll QUERY: the ids GET /events?QUERY returns, one a line
poll_ids() { get "/events?limit=10000&$1" | jq -r '.events[].id'; }
# follow NAME QUERY: a follower (curl) writing the stream to $T/NAME.log
follow() { t_spawn "$1" curl -s -N --unix-socket "$GPUMOD_SOCKET" "$API/events?follow=1&$2"; }
ids_of() { jq -r 'select(.id) | .id' "$T/$1.log"; }
lines_are() { [ "$(ids_of "$1" | wc -l)" -eq "$2" ]; }
# same NAME QUERY: the stream NAME holds exactly the ids the poll returns
same() { [ "$(ids_of "$1")" = "$(poll_ids "$2")" ]; }
increasing() { ids_of "$1" | awk 'NR > 1 && $1 <= prev { exit 1 } { prev = $1 }'; }
newest() { get "/events?limit=1" | jq -r '.events[-1].id // 0'; }

t_begin "follow from an id: the stored events after it, then the live ones, in order and without a gap"
t_run 0 gpumod service start a
t_run 0 gpumod service stop a
FROM=$(poll_ids "since=0" | head -1)
STORED=$(poll_ids "since=$FROM" | wc -l)
[ "$STORED" -ge 2 ] || t_fail "only $STORED stored events after $FROM"
follow f1 "since=$FROM"
t_wait 10 lines_are f1 "$STORED" || t_fail "the stored events did not come ($(ids_of f1 | wc -l) of $STORED)"
LIVE_AFTER=$(newest)
t_run 0 gpumod service start a
t_run 0 gpumod service stop a
t_wait 10 same f1 "since=$FROM" || t_fail "the stream differs from GET /events: $(ids_of f1 | tr '\n' ' ') vs $(poll_ids "since=$FROM" | tr '\n' ' ')"
increasing f1 || t_fail "ids not strictly increasing: $(ids_of f1 | tr '\n' ' ')"
[ "$(jq -r --argjson n "$LIVE_AFTER" 'select(.id > $n and .kind == "state" and .to == "ready") | .service' "$T/f1.log")" = a ] ||
    t_fail "no live state event to ready for 'a' after event $LIVE_AFTER"
[ "$(ids_of f1 | head -1)" -gt "$FROM" ] || t_fail "the stream began at or before since=$FROM"
t_end

t_begin "a reconnect from the last id seen loses nothing that happened in between"
kill -TERM "$(cat "$T/f1.pid")"
reap "$(cat "$T/f1.pid")" 5 || t_fail "the first follower did not exit"
LAST=$(ids_of f1 | tail -1)
t_run 0 gpumod reload
t_run 0 gpumod service start b
t_run 0 gpumod service stop b
MISSED=$(poll_ids "since=$LAST" | wc -l)
[ "$MISSED" -ge 3 ] || t_fail "only $MISSED events while disconnected"
follow f2 "since=$LAST"
t_wait 10 same f2 "since=$LAST" || t_fail "after the reconnect: $(ids_of f2 | tr '\n' ' ') vs $(poll_ids "since=$LAST" | tr '\n' ' ')"
t_end

t_begin "filters: service and kind (one kind or a comma list), stored and live"
follow fs "since=0&service=b&kind=state"
follow fk "since=0&kind=spawn,exit"
t_wait 10 same fs "since=0&service=b&kind=state" || t_fail "service=b&kind=state: $(ids_of fs | tr '\n' ' ')"
t_run 0 gpumod service start b
t_run 0 gpumod service start a
t_run 0 gpumod service stop a
t_run 0 gpumod service stop b
t_wait 10 same fs "since=0&service=b&kind=state" || t_fail "service=b&kind=state, live: $(ids_of fs | tr '\n' ' ')"
t_wait 10 same fk "since=0&kind=spawn,exit" || t_fail "kind=spawn,exit, live: $(ids_of fk | tr '\n' ' ')"
t_eq "$(jq -r '"\(.service) \(.kind)"' "$T/fs.log" | sort -u)" "b state" "service and kind of service=b&kind=state"
t_eq "$(jq -r '.kind' "$T/fk.log" | sort -u | tr '\n' ' ')" "exit spawn " "kinds of kind=spawn,exit"
[ "$(jq -r 'select(.service == "a") | .id' "$T/fk.log" | wc -l)" -ge 2 ] || t_fail "kind=spawn,exit lacks a's events"
t_end

t_begin "a reader that never reads is cut with a last line naming the id to resume from; the daemon stays up"
cat >"$T/stall.py" <<'EOF'
import os, socket, sys, time
sock, ready, go, out = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.sendall(b"GET /events?follow=1 HTTP/1.1\r\nHost: gpumod\r\nConnection: close\r\n\r\n")
open(ready, "w").close()
while not os.path.exists(go):  # never reads until told to
    time.sleep(0.05)
data = b""
s.settimeout(30)
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
open(out, "wb").write(data)
EOF
t_spawn stall python3 "$T/stall.py" "$GPUMOD_SOCKET" "$T/ready" "$T/go" "$T/stall.out"
t_wait 10 test -e "$T/ready" || t_fail "the stalled reader did not connect"
cut() { grep -q "fell more than 2000 bytes behind" "$T/daemon.log"; }
urls=()
for i in $(seq 50); do urls+=("$API/reload"); done
deadline=$(( $(date +%s) + 120 * S ))
while ! cut && [ "$(date +%s)" -lt "$deadline" ]; do
    curl -s -o /dev/null --max-time $((30 * S)) --unix-socket "$GPUMOD_SOCKET" -X POST "${urls[@]}" >/dev/null
done
cut || t_fail "the stalled stream was never cut"
t_run 0 gpumod status
touch "$T/go"
reap "$(cat "$T/stall.pid")" 30 || t_fail "the stalled reader never saw the stream end"
# the body (dechunked by hand: NDJSON lines inside chunks) ends with the cut line
tr -d '\r' <"$T/stall.out" | grep '^{' >"$T/stall.lines"
tail -1 "$T/stall.lines" >"$T/stall.last"
t_jq "$T/stall.last" .end slow_reader
t_has "$T/stall.last" "follow again with since="
LASTSEEN=$(grep '"id"' "$T/stall.lines" | tail -1 | jq -r .id)
t_jq "$T/stall.last" .since "$LASTSEEN"
# from that id on, nothing is lost
follow f3 "since=$LASTSEEN"
t_wait 10 same f3 "since=$LASTSEEN" || t_fail "resuming after the cut: $(ids_of f3 | wc -l) events vs $(poll_ids "since=$LASTSEEN" | wc -l)"
t_end

t_begin "a stored backlog far past the cap reaches a slow reader whole: catching up waits for it"
# 3000 events (~600 KB, past the kernel's buffers and the server's
# high-water mark) read at 300 KB/s: the catch-up pauses and goes on from
# on_drain; a cap of 2000 bytes applies to the live part only
while [ "$(poll_ids "since=0" | wc -l)" -lt 3000 ]; do
    curl -s -o /dev/null --max-time $((30 * S)) --unix-socket "$GPUMOD_SOCKET" -X POST "${urls[@]}" >/dev/null
done
t_spawn f5 curl -s -N --limit-rate 300k --unix-socket "$GPUMOD_SOCKET" "$API/events?follow=1&since=0"
t_wait 30 same f5 "since=0" || t_fail "the backlog: $(ids_of f5 | wc -l) of $(poll_ids "since=0" | wc -l) events"
t_lacks "$T/f5.log" '"end"'
t_end

t_begin "bad parameters are 400s naming the parameter"
bad() {
    http GET "$API/events?$1" 2>/dev/null
    curl -s -o "$T/out" -w '%{http_code}' --unix-socket "$GPUMOD_SOCKET" "$API/events?$1" >"$T/status"
    t_eq "$(cat "$T/status")" 400 "status of ?$1"
    t_has out "$2"
}
bad "follow=2" "events: follow must be 0, 1, false or true, not '2'"
bad "follow=1&since=2026-01-01T00:00:00Z" "with follow=1, since must be an event id"
bad "follow=1&since=x1" "since must be an event id, not 'x1'"
bad "follow=1&since=99999999999999999999" "since '99999999999999999999' is too large"
bad "follow=1&kind=bogus" "kind 'bogus' is not one of state, spawn, exit"
bad "kind=state,,bogus" "kind 'bogus' is not one of"
bad "follow=1&kind=," "kind must name at least one kind"
bad "follow=1&limit=5" "limit does not apply with follow=1"
t_run 2 gpumod events -f --kind bogus
t_has err "kind 'bogus' is not one of"
t_end

t_begin "gpumod events -f prints live events and exits 0 on SIGINT and on SIGTERM"
for sig in INT TERM; do
    t_spawn cli$sig "$GPUMOD_BIN" events -f --service a --kind state
    pid=$(cat "$T/cli$sig.pid")
    t_wait 10 grep -q "a state" "$T/cli$sig.log" || t_fail "the stored events of a were not printed ($sig)"
    before=$(grep -c "down -> starting" "$T/cli$sig.log")
    t_run 0 gpumod service start a
    t_wait 10 test "$(grep -c "down -> starting" "$T/cli$sig.log")" -gt "$before" ||
        t_fail "no live event printed ($sig)"
    t_run 0 gpumod service stop a
    kill -$sig "$pid"
    reap "$pid" 5 || t_fail "events -f still running 5 s after SIG$sig"
    t_eq "$rc" 0 "exit status after SIG$sig"
done
t_end

t_begin "shutdown ends a stream with its last line, and gpumod events -f with exit 3"
follow f4 "since=0&kind=reload"
t_spawn clidown "$GPUMOD_BIN" events -f --kind reload -n 1
t_wait 10 grep -q '"kind":"reload"' "$T/f4.log" || t_fail "the follower never started"
t_wait 10 grep -q "reload" "$T/clidown.log" || t_fail "the CLI follower never started"
daemon_stop
t_wait 5 grep -q '"end":"shutting_down"' "$T/f4.log" || t_fail "no shutting_down line: $(tail -c 300 "$T/f4.log")"
reap "$(cat "$T/clidown.pid")" 5 || t_fail "events -f still running 5 s after the daemon stopped"
t_eq "$rc" 3 "events -f's exit status when the daemon stops"
t_has "$T/clidown.log" "gpumod: events: the daemon is shutting down; follow again with since="
t_end

stop_all_clean
t_done
