#!/usr/bin/env bash
# t71-router-stream: the relay.  A streamed response and a 1 MiB body are
# byte-identical through the router and direct; 200 concurrent streams all
# complete; a client that hangs up shows in fakellm's abort counter; an
# upstream that dies inside a stream gives an SSE error event and a clean
# end; a streaming request that waits for a load gets SSE loading comments
# and then the backend's events; one access-log line per request.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

command -v python3 >/dev/null || { t_skip "router stream tests" "python3 is missing"; t_done; exit; }

PF=$(free_port) PW=$(free_port) PC=$(free_port) PL=$(free_port)
rsettings ""
printf 'id: fixed\ndriver: command\nport: %s\ncommand: [python3, %s, "{port}"]\nmemory: {host_mb: 1}\n' \
    "$PF" "$T/backend.py" >"$C/presets/fixed.yaml"
rpreset wide "$PW" 65536 'unit_vars: {parallel: 256}' 'env: {FAKELLM_TPS: "200"}'
rpreset crashy "$PC" 4096 'unit_vars: {parallel: 4}' \
    'env: {FAKELLM_TPS: "100", FAKELLM_CRASH_AFTER: "1"}' 'restart: {max_restarts: 0}'
preset slow "$PL" 'env: {FAKELLM_LOAD_MS: "1500"}'

daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"

t_begin "a streamed response is byte-identical through the router and direct"
t_run 0 gpumod service start fixed
code=$(rcurl "$T/via.sse" -N "$RURL/v1/chat/completions" -d "$(chat fixed true)")
t_eq "$code" 200 "status via the router"
curl -s -N --max-time 10 -o "$T/direct.sse" "http://127.0.0.1:$PF/v1/chat/completions" -d "$(chat fixed true)"
t_eq "$(grep -c '^data: ' "$T/via.sse")" 40 "events via the router"
cmp "$T/via.sse" "$T/direct.sse" || t_fail "the router changed the stream"
t_end

t_begin "a 1 MiB Content-Length body is byte-identical too"
code=$(rcurl "$T/via.bin" "$RURL/v1/chat/completions" -d "$(chat fixed)")
t_eq "$code" 200 "status"
curl -s --max-time 10 -o "$T/direct.bin" "http://127.0.0.1:$PF/v1/chat/completions" -d "$(chat fixed)"
t_eq "$(stat -c %s "$T/via.bin")" 1048576 "size"
cmp "$T/via.bin" "$T/direct.bin" || t_fail "the router changed the body"
t_end

t_begin "200 concurrent streams all complete"
t_run 0 gpumod service start wide
mkdir -p "$T/many"
pids=()
for i in $(seq 200); do
    curl -s -N --max-time $((60 * S)) -o "$T/many/$i.sse" "$RURL/v1/chat/completions" -d "$(chat wide true 20)" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
done_n=$(grep -l '^data: \[DONE\]' "$T"/many/*.sse | wc -l)
t_eq "$done_n" 200 "streams that ended with [DONE]"
t_eq "$(cat "$T"/many/*.sse | grep -c '"content":" ')" $((200 * 19)) "token events in all"
t_end

t_begin "a client that hangs up: the backend sees the abort"
before=$(curl -s "http://127.0.0.1:$PW/metrics" | awk '/^fakellm:aborted_requests_total/ {print $2}')
# the client hangs up once the stream has begun (not after a fixed time,
# which a busy machine can spend before the first byte)
curl -s -N -o "$T/hang.sse" --max-time $((30 * S)) "$RURL/v1/chat/completions" -d "$(chat wide true 2000)" &
hpid=$!
t_wait 10 grep -q '"content"' "$T/hang.sse" || t_fail "the stream never began"
kill "$hpid" 2>/dev/null
wait "$hpid" 2>/dev/null
aborted() { [ "$(curl -s "http://127.0.0.1:$PW/metrics" | awk '/^fakellm:aborted_requests_total/ {print $2}')" -gt "$before" ]; }
t_wait 5 aborted || t_fail "fakellm's aborted_requests_total stayed at $before"
t_wait 5 grep -q 'model=wide -> wide status=200 .* aborted=yes' "$T/daemon.log" || t_fail "no access line with aborted=yes"
t_end

t_begin "the upstream dies inside a stream: an SSE error event, then a clean end"
t_run 0 gpumod service start crashy
curl -s -N --max-time $((20 * S)) -o "$T/crash.sse" -w '%{http_code}' "$RURL/v1/chat/completions" \
    -d "$(chat crashy true 300)" >"$T/crash.code" &
cpid=$!
t_wait 5 grep -q '"content"' "$T/crash.sse" || t_fail "the long stream never started"
# the second request completes, then fakellm aborts (FAKELLM_CRASH_AFTER=1) under the first
curl -s -o /dev/null --max-time 10 "$RURL/v1/completions" -d '{"model":"crashy","prompt":"x","max_tokens":1}'
wait $cpid
t_eq "$(cat "$T/crash.code")" 200 "status"
t_has "$T/crash.sse" "event: error"
t_match "$T/crash.sse" '^data: \{"error":\{"message":"service .crashy.: backend 127.0.0.1:[0-9]+ closed the connection'
t_lacks "$T/crash.sse" "[DONE]"
t_eq "$(tail -c 2 "$T/crash.sse" | od -An -c | tr -d ' ')" '\n\n' "the event ends the stream"
t_end

t_begin "a streaming request that waits for a load: SSE loading comments, then the events"
code=$(rcurl "$T/wait.sse" -N "$RURL/v1/chat/completions" -d "$(chat slow true 4)")
t_eq "$code" 200 "status"
t_match "$T/wait.sse" '^: loading'
t_has "$T/wait.sse" "data: [DONE]"
t_eq "$(head -c 9 "$T/wait.sse")" ": loading" "the first bytes"
t_end

t_begin "one access-log line per request, without headers or the query"
t_match "$T/daemon.log" 'access 127\.0\.0\.1:[0-9]+ "POST /v1/chat/completions" model=fixed -> fixed status=200 in=[0-9]+ out=1048576 ttfb_ms=[0-9.]+ dur_ms=[0-9.]+ aborted=no'
t_eq "$(grep -c 'model=wide -> wide status=200' "$T/daemon.log")" 201 "lines for the 200 streams and the hung-up one"
t_end

stop_all_clean
t_done
