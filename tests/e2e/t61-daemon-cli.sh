#!/usr/bin/env bash
# The daemon and its CLI as a user meets them: no daemon -> exit 3 with a
# hint; serve; one daemon per state dir; status/service/events/logs with
# and without --json; the API's own errors (404, 405, 400);
# sd_notify READY/STOPPING; SIGTERM stops every child and exits 0.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
C=$T/config
P1=$(free_port); P2=$(free_port)
mkdir -p "$C/presets" "$C/modes"
cat >"$C/gpumod.yaml" <<EOF
drivers:
  llamacpp: {binary: $FAKELLM_BIN}
supervisor:
  health_interval: 200ms
  stop_timeout: 2s
router:
  enabled: false
EOF
cat >"$C/presets/chat.yaml" <<EOF
id: chat
driver: llamacpp
port: $P1
model_path: $MODEL
context_size: 128
env:
  FAKELLM_LOAD_MS: "300"
  FAKELLM_FORK_WORKER: "1"
  FAKELLM_LOG_REQUESTS: "1"
  HF_TOKEN: "hunter2-secret"
memory: {gpu_mb: 0, host_mb: 16}
EOF
cat >"$C/presets/emb.yaml" <<EOF
id: emb
driver: llamacpp
port: $P2
model_path: $MODEL
context_size: 128
env:
  FAKELLM_LOAD_MS: "100"
memory: {gpu_mb: 0, host_mb: 16}
EOF
printf 'id: both\nservices: [chat, emb]\n' >"$C/modes/both.yaml"
SOCK=$GPUMOD_SOCKET
api() { curl -s -S --max-time $((10 * GPUMOD_TEST_TIME_SCALE)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' "$@" http://gpumod"${URLPATH}" >"$T/status" 2>"$T/err"; }

t_begin "no daemon: every client command exits 3 with a one-line hint"
for cmd in "status" "service list" "service show chat" "events" "reload" "service start chat"; do
    t_run 3 gpumod $cmd
    t_has err "gpumod: no daemon is running (socket $SOCK); start one with 'gpumod serve'"
    t_eq "$(wc -l <"$T/err")" 1 "lines on stderr of '$cmd'"
done
t_run 3 gpumod status --json
t_end

t_begin "serve --foreground: ready, READY=1 sent, status answers"
"$BUILD/fakes/notify-recv" "$T/notify.sock" 120 >"$T/notify.out" 2>&1 &
NPID=$!; _t_pids+=("$NPID")
t_wait 5 test -S "$T/notify.sock" || t_fail "notify-recv did not bind"
NOTIFY_SOCKET=$T/notify.sock t_spawn daemon "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod status || t_fail "the daemon never answered"
t_wait 5 grep -qx READY=1 "$T/notify.out" || t_fail "no READY=1 datagram: $(cat "$T/notify.out")"
t_eq "$(stat -c %a "$SOCK")" 600 "socket mode"
t_run 0 gpumod status --json
t_jq out .daemon.pid "$DPID"
t_jq out .daemon.socket "$SOCK"
t_jq out .daemon.state_dir "$GPUMOD_STATE_DIR"
t_jq out .daemon.runner spawn
t_jq out '[.services[].id] | sort | join(",")' chat,emb
t_jq out '[.services[].state] | unique | join(",")' down
t_jq out '.memory | has("host")' true
t_jq out '.events | type' array
t_run 0 gpumod status
t_match out "^daemon: pid $DPID"
t_match out "^chat +down"
t_end

t_begin "a second serve on the same state dir exits 1 naming the first daemon's pid"
t_run 1 gpumod serve --foreground
t_has err "gpumod: another daemon (pid $DPID) owns $GPUMOD_STATE_DIR"
t_run 1 gpumod serve
t_has err "another daemon (pid $DPID)"
alive "$DPID" || t_fail "the first daemon died"
t_end

t_begin "service start: ready with pid and port; show, list, logs -n, events"
t_run 0 gpumod service start chat
t_match out "^ready: chat \(pid [0-9]+, port $P1, state ready\) in [0-9.]+ s$"
t_run 0 gpumod service show chat --json
t_jq out .state ready
t_jq out .port "$P1"
t_jq out .last_start.outcome ready
t_jq out .last_start.origin cli
CHAT_PID=$(jq -r .pid "$T/out"); CHAT_PGID=$(jq -r .pgid "$T/out")
alive "$CHAT_PID" || t_fail "the engine pid $CHAT_PID is not running"
t_run 0 gpumod service show chat
t_match out "^chat: ready for .*, pid $CHAT_PID, group $CHAT_PGID, port $P1"
t_run 0 gpumod service list
t_match out "^chat +ready +$CHAT_PID +$P1"
t_match out "^emb +down"
t_run 0 gpumod service logs chat -n 2
t_eq "$(wc -l <"$T/out")" 2 "lines of logs -n 2"
t_run 0 gpumod service logs chat --json -n 3
t_jq out '.data | split("\n") | map(select(length > 0)) | length' 3
t_jq out '.next > 0' true
t_run 0 gpumod events --json --service chat
t_jq out '[.events[] | select(.kind == "state") | .to] | join(",")' starting,ready
t_jq out '[.events[] | select(.kind == "spawn")] | length' 1
t_jq out '.events[0] | keys | join(",")' data,from,id,kind,reason,service,to,ts
t_jq out '.events[0].ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$")' true
FIRST=$(jq -r '.events[0].id' "$T/out")
t_run 0 gpumod events --since "$FIRST" --json
t_jq out "[.events[].id | select(. <= $FIRST)] | length" 0
t_run 0 gpumod events --since 10m --json
t_jq out '[.events[] | select(.service == "chat")] | length > 2' true
t_run 0 gpumod events -n 1 --json
t_jq out '.events | length' 1
t_run 0 gpumod events
t_match out "chat state down -> starting"
t_run 2 gpumod events --since yesterdayish
t_has err "neither an event id, an RFC 3339 time nor a duration"
t_run 0 gpumod status --json
t_jq out '.events | length <= 10' true
t_jq out '[.services[] | select(.id == "chat") | .state] | join("")' ready
t_end

t_begin "secrets never reach the events, the API or the daemon's log"
t_run 0 gpumod events --json
t_lacks out hunter2-secret
t_run 0 gpumod service show chat --json
t_lacks out hunter2-secret
t_lacks "$T/daemon.log" hunter2-secret
t_end

t_begin "logs follow=1 streams the tail, then new output as it comes"
curl -s -N --max-time $((20 * GPUMOD_TEST_TIME_SCALE)) --unix-socket "$SOCK" \
    "http://gpumod/services/chat/logs?follow=1&n=1" >"$T/follow.out" 2>/dev/null &
FPID=$!
t_wait 5 test -s "$T/follow.out" || t_fail "no tail on the follow stream"
t_eq "$(wc -l <"$T/follow.out")" 1 "lines before any new output"
t_lacks "$T/follow.out" "POST /v1/completions"
t_run 0 curl -s --max-time 5 "http://127.0.0.1:$P1/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "hi", "max_tokens": 2}'
t_wait 5 grep -q "POST /v1/completions 200" "$T/follow.out" || t_fail "the request's log line never came on the stream"
kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null
t_run 0 gpumod status # the daemon is fine after the follower went
t_end

t_begin "start --no-wait returns a ticket; the ticket's outcome is on show"
t_run 0 gpumod service start emb --no-wait --json
t_jq out '.start_seq > 0' true
SEQ=$(jq -r .start_seq "$T/out")
t_wait 10 sh -c "'$GPUMOD_BIN' service show emb --json | jq -e '.last_start.seq == $SEQ and .last_start.outcome == \"ready\"'" ||
    t_fail "the ticket $SEQ never ended ready"
t_end

t_begin "unknown service -> exit 2; the API's 404, 405 and 400 answers"
t_run 2 gpumod service show nosuch
t_has err "no service 'nosuch'"
t_run 2 gpumod service start nosuch
URLPATH=/nosuch api
t_eq "$(cat "$T/status")" 404 "unknown route"
t_jq out .error.code not_found
URLPATH=/status api -X DELETE
t_eq "$(cat "$T/status")" 405 "wrong method"
t_jq out .error.code method_not_allowed
URLPATH=/preflight api -X POST -H 'Content-Type: application/json' --data-binary '{"service": '
t_eq "$(cat "$T/status")" 400 "bad JSON"
t_jq out .error.code bad_request
t_has out "preflight: the body must be a JSON object: not JSON (at byte 11)"
URLPATH=/preflight api -X POST -H 'Content-Type: application/json' --data-binary '{"service": 3}'
t_eq "$(cat "$T/status")" 400 "service not a string"
URLPATH=/results api -X POST
t_eq "$(cat "$T/status")" 400 "results without a body (tests/e2e/t82-bench-results.sh)"
t_jq out .error.code bad_request
URLPATH=/route/default api
t_eq "$(cat "$T/status")" 200 "the router's default"
t_jq out .service null
URLPATH=/modes/current api
t_eq "$(cat "$T/status")" 200 "modes/current"
t_jq out .mode both
URLPATH=/modes api
t_jq out '.modes[0].id' both
t_jq out '.modes[0].current' true
t_end

t_begin "SIGTERM: STOPPING=1, every child stopped, socket removed, exit 0"
kill -TERM "$DPID"
reap "$DPID" 15 || t_fail "the daemon still runs 15 s after SIGTERM"
t_eq "$rc" 0 "daemon exit code"
alive "$CHAT_PID" && t_fail "the engine $CHAT_PID outlived the daemon"
t_eq "$(pgrep -g "$CHAT_PGID" | wc -l)" 0 "processes left in chat's group $CHAT_PGID"
[ -e "$SOCK" ] && t_fail "the socket file is still there"
t_wait 5 grep -qx STOPPING=1 "$T/notify.out" || t_fail "no STOPPING=1 datagram: $(cat "$T/notify.out")"
t_has "$T/daemon.log" "stopping every service"
grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log && t_fail "a sanitizer report: $(grep -hE -A8 'Sanitizer|runtime error:' "$T"/*.log | head -20)"
t_run 3 gpumod status
t_end

t_begin "serve (detached) returns once the socket answers; its log is in log_dir"
t_run 0 gpumod serve
t_match out "^gpumod: daemon running \(pid [0-9]+, socket $SOCK\)$"
BG=$(sed -E 's/.*pid ([0-9]+),.*/\1/' "$T/out")
_t_pids+=("$BG")
t_run 0 gpumod status --json
t_jq out .daemon.pid "$BG"
t_has "$GPUMOD_STATE_DIR/logs/gpumod.log" "ready: pid $BG"
kill -TERM "$BG"
t_wait 15 sh -c "! kill -0 $BG 2>/dev/null" || t_fail "the detached daemon did not stop"
t_end

t_begin "a broken configuration: serve exits 2 listing the error, nothing started"
printf 'id: broken\ndriver: llamacpp\nport: notaport\n' >"$C/presets/broken.yaml"
t_run 2 gpumod serve --foreground
t_has err "broken.yaml:3:7: error: preset 'broken': port: expected an integer in 1..65535, found 'notaport'"
t_has err "has 2 errors; fix them and start again"
t_run 2 gpumod serve
t_has err "broken.yaml"
rm -f "$C/presets/broken.yaml"
t_end

t_done
