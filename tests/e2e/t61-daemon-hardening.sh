#!/usr/bin/env bash
# The control API and CLI at their edges: strict query numbers and times
# (400 / exit 2, never a silent clamp), /logs redacted in the JSON answer
# and in the follow stream, a follow stream whose reader stalls is ended
# with a resume offset (the daemon's memory stays bounded), a follow asked
# for while the daemon shuts down is answered 503 (and does not hold the
# exit), a second SIGTERM hurries the shutdown, reload lists every
# setting that needs a restart, preflight via the daemon tells a stale
# daemon configuration from an unknown preset.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

SOCK=$GPUMOD_SOCKET
api() { curl -s -S --max-time $((10 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' "$@" "http://gpumod${URLPATH}" >"$T/status" 2>"$T/err"; }
P1=$(free_port); P2=$(free_port)
# an engine that prints a secret on its output, then a flood on demand
cat >"$T/chatty" <<EOF
#!/bin/sh
echo "starting with --api-key sekrit-in-the-log and HF_TOKEN=hunter2-in-the-log"
# the flood waits for the test's go (the follower connected), at most 60 s
if [ -e "$T/flood" ]; then ( i=0; while [ ! -e "$T/go" ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done
    yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -c 8000000 ) & fi
exec "$BUILD/fakellm" "\$@"
EOF
chmod +x "$T/chatty"
conf() {
    printf 'drivers:\n  llamacpp: {binary: %s}\nrouter: {enabled: false}\nsupervisor: {health_interval: 1s, stop_timeout: 60s}\n' \
        "$T/chatty" >"$C/gpumod.yaml"
    printf '%s\n' "$@" >>"$C/gpumod.yaml"
}
conf
preset chat "$P1" 'memory: {gpu_mb: 0, host_mb: 16}'
preset stubborn "$P2" 'env:' '  FAKELLM_IGNORE_SIGTERM: "1"' 'memory: {gpu_mb: 0, host_mb: 16}'
daemon_start

t_begin "query numbers and times are strict: 400 with the reason, never clamped"
for q in "limit=0" "limit=+5" "limit=%205" "limit=10001" "since=99999999999999999999" \
    "since=2025-01-02T00:00:00%2B0a:00" "since=2025-1-02T00:00:00Z"; do
    URLPATH="/events?$q" api
    t_eq "$(cat "$T/status")" 400 "GET /events?$q"
    t_jq out .error.code bad_request
done
URLPATH="/events?since=99999999999999999999" api
t_has out "too large for an event id"
URLPATH="/events?limit=0" api
t_has out "from 1 to 10000"
URLPATH="/services/chat/logs?n=%2B3" api
t_eq "$(cat "$T/status")" 400 "logs n=+3"
URLPATH="/events?limit=5&since=2025-01-02T00:00:00%2B01:00" api
t_eq "$(cat "$T/status")" 200 "a well-formed offset time"
for since in 1e400m nanm infm 0x10m -5m 99999999999999999999; do
    t_run 2 gpumod events --since "$since"
    t_has err "events: --since '$since'"
done
t_end

t_begin "/logs is redacted, in the JSON answer and on the follow stream"
t_run 0 gpumod service start chat
t_run 0 gpumod service logs chat --json -n 50
t_lacks out sekrit-in-the-log
t_lacks out hunter2-in-the-log
t_has out "--api-key <redacted>"
curl -s -N --max-time $((5 * S)) --unix-socket "$SOCK" "http://gpumod/services/chat/logs?follow=1&n=50" >"$T/follow.out" 2>/dev/null
t_has "$T/follow.out" "HF_TOKEN=<redacted>"
t_lacks "$T/follow.out" hunter2-in-the-log
t_end

t_begin "logs n=0 is zero lines, next at the end; a wait or follow that is not a boolean is 400"
URLPATH="/services/chat/logs?n=1" api
end=$(jq -r .next "$T/out")
URLPATH="/services/chat/logs?n=0" api
t_eq "$(cat "$T/status")" 200 "logs n=0"
t_jq out .data ""
t_jq out .next "$end"
URLPATH="/services/chat/logs?after=0&n=0" api
t_jq out .data ""
t_jq out .next 0
for q in "start?wait=2" "start?wait=yes" "start?wait=" "stop?wait=2" "restart?wait=maybe"; do
    URLPATH="/services/chat/$q" api -X POST
    t_eq "$(cat "$T/status")" 400 "POST $q"
    t_jq out .error.code bad_request
    t_has out "wait must be 0, 1, false or true"
done
URLPATH="/services/chat/logs?follow=2" api
t_eq "$(cat "$T/status")" 400 "logs follow=2"
t_has out "follow must be 0, 1, false or true"
t_eq "$(state_of chat)" ready "state after the refused requests"
t_end

t_begin "events: a full page says there may be more"
t_run 0 gpumod events --since 0 -n 1
t_eq "$(wc -l <"$T/out")" 1 "lines"
t_has err "there may be more: use --since"
t_end

t_begin "a follow stream whose reader stalls ends with where to resume; the daemon is fine"
t_run 0 gpumod service stop chat
rm -f "$T/go"
touch "$T/flood"
t_run 0 gpumod service start chat
# a reader at 100 KiB/s: the 8 MB flood outruns it by far.  The flood
# starts once the follower has its first line (a flood that the daemon had
# swallowed before the follow began would leave nothing to follow).
curl -s -N --limit-rate 100k --max-time $((60 * S)) --unix-socket "$SOCK" \
    "http://gpumod/services/chat/logs?follow=1&n=1" >"$T/slow.out" 2>/dev/null &
cpid=$!
t_wait 10 test -s "$T/slow.out" || t_fail "the follow stream sent nothing"
touch "$T/go"
reap "$cpid" 70 || t_fail "the slow follower did not end"
t_has "$T/slow.out" "follow again with after="
t_match "$T/slow.out" "this stream ends at offset [0-9]+"
t_has "$T/daemon.log" "fell more than 1048576 bytes behind"
t_run 0 gpumod status
rm -f "$T/flood"
t_end

t_begin "reload names every setting that needs a restart"
conf 'memory: {nvml_timeout: 3s}' "log_dir: $T/otherlogs"
t_run 0 gpumod reload --json
t_jq out '[.notes[] | select(test("memory.nvml_timeout changed"))] | length' 1
t_jq out '[.notes[] | select(test("log_dir changed"))] | length' 1
t_end

t_begin "preflight via the daemon: a preset the daemon has not loaded, another config dir"
preset fresh "$(free_port)" 'memory: {gpu_mb: 0, host_mb: 16}'
t_run 2 gpumod preflight --for fresh
t_has err "the daemon's configuration has no preset 'fresh' (run gpumod reload)"
cp -r "$C" "$T/config2"
t_run 0 gpumod --config-dir "$T/config2" preflight --for fresh --json
t_jq out .via standalone
t_run 0 gpumod preflight --for chat --json
t_jq out .via daemon
t_end

t_begin "a follow asked for while the daemon shuts down is refused (503), and the daemon exits"
if ! command -v python3 >/dev/null; then
    t_skip "follow during shutdown" "no python3 to hold a half-sent request"
else
    t_run 0 gpumod service start stubborn
    # the head is sent in two parts; SIGTERM lands between them
    # a first request on the connection proves the daemon has accepted it
    # (an unaccepted one would just be closed at shutdown); then half a
    # head, SIGTERM, and the rest once the daemon's log says it shuts down
    python3 - "$SOCK" "$DPID" "$T/late.out" "$T/daemon.log" <<'PY' &
import os, signal, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.settimeout(30)
s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
first = b""
while b"\r\n\r\n" not in first:
    first += s.recv(65536)
head, _, body = first.partition(b"\r\n\r\n")
n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
while len(body) < n:
    body += s.recv(65536)
s.sendall(b"GET /services/stubborn/logs?follow=1 HTTP/1.1\r\nHost: x\r\n")
time.sleep(0.3)
os.kill(int(sys.argv[2]), signal.SIGTERM)
end = time.monotonic() + 30
while time.monotonic() < end and b"shutting down" not in open(sys.argv[4], "rb").read():
    time.sleep(0.02)
s.sendall(b"\r\n")
s.settimeout(30)
out = b""
while True:
    try:
        d = s.recv(65536)
    except socket.timeout:
        break
    if not d:
        break
    out += d
open(sys.argv[3], "wb").write(out)
PY
    PYPID=$!
    wait "$PYPID"
    t_match "$T/late.out" "^HTTP/1.1 503"
    t_has "$T/late.out" "shutting_down"
    alive "$DPID" || t_fail "the daemon did not wait for 'stubborn' (it ignores SIGTERM; stop_timeout 60 s)"
    t_end
    t_begin "a second SIGTERM hurries the shutdown: SIGKILL now, exit 0 long before stop_timeout"
    kill -TERM "$DPID"
    reap "$DPID" 20 || t_fail "the daemon still runs 20 s after the second SIGTERM"
    t_eq "$rc" 0 "daemon exit code"
    t_has "$T/daemon.log" "SIGTERM again: hurrying the shutdown"
fi
t_end

t_done
