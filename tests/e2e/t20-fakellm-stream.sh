#!/usr/bin/env bash
# fakellm's token timing, slots and the deferred queue, client aborts, and
# a thousand concurrent streams on one thread.  Lower bounds are tight (the
# server must never be early), upper bounds loose and scaled.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE

# metric URL NAME: one value from /metrics
metric() { curl -s --max-time 5 "$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
metric_is() { [ "$(metric "$1" "$2")" == "$3" ]; }
# ms_ge A B: A >= B for decimal milliseconds
ms_ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

t_begin "FAKELLM_TTFT_MS: the first byte comes no sooner, by the client's and the server's clock"
P=$(free_port)
fakellm_spawn ttft FAKELLM_TTFT_MS=400 -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
st=$(curl -s -o "$T/sse" -w '%{time_starttransfer}' --max-time $((10 * S)) "$U/v1/chat/completions" \
    -d '{"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":2}')
ms_ge "$st" 0.4 || t_fail "first byte after $st s < 0.4"
ms_ge $((1 + 2 * S)) "$st" || t_fail "first byte after $st s"
tt=$(curl -s -o /dev/null -w '%{time_total}' --max-time $((10 * S)) "$U/completion" -d '{"prompt":"x","n_predict":1}')
ms_ge "$tt" 0.4 || t_fail "non-streamed answer after $tt s < 0.4"
line=$(grep 'log_request: .* POST /v1/chat/completions' "$T/ttft.log" | head -n 1)
recv=$(sed -E 's/.*recv_mono_ms=([0-9.]+).*/\1/' <<<"$line")
first=$(sed -E 's/.*first_send_mono_ms=([0-9.]+).*/\1/' <<<"$line")
done_=$(sed -E 's/.*done_mono_ms=([0-9.]+).*/\1/' <<<"$line")
ms_ge "$first" "$(awk -v r="$recv" 'BEGIN { printf "%.3f", r + 400 }')" || t_fail "server log: first send $first - receive $recv < 400 ms"
ms_ge "$done_" "$first" || t_fail "server log: done $done_ before first send $first"
grep -qE 'recv_real_ms=[0-9]{13}\.[0-9]{3} ' <<<"$line" || t_fail "no realtime ms in: $line"
t_end

t_begin "FAKELLM_TPS: 21 tokens at 20/s take ~1 s after the first byte; predicted_per_second <= 20"
P=$(free_port)
fakellm_spawn tps FAKELLM_TPS=20 -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
read -r st tt < <(curl -s -o "$T/sse" -w '%{time_starttransfer} %{time_total}\n' --max-time $((20 * S)) \
    "$U/v1/chat/completions" -d '{"messages":[],"stream":true,"max_tokens":21,"ignore_eos":true}')
gen=$(awk -v a="$tt" -v b="$st" 'BEGIN { print a - b }')
# the client clock starts at the first byte, which may trail the server's first
# send by a scheduler tick: the server-side rate below is the exact check
ms_ge "$gen" 0.9 || t_fail "tokens took $gen s after the first byte, < 0.9"
ms_ge $((1 + 2 * S)) "$gen" || t_fail "tokens took $gen s"
t_eq "$(grep -c '"delta":{"content"' "$T/sse")" 21 "token chunks"
pps=$(grep '"timings"' "$T/sse" | head -n 1 | sed 's/^data: //' | jq .timings.predicted_per_second)
ms_ge 20.5 "$pps" || t_fail "predicted_per_second $pps > 20: faster than FAKELLM_TPS"
ms_ge "$pps" 5 || t_fail "predicted_per_second $pps"
t_end

t_begin "FAKELLM_TPS=0 sends every token at once"
P=$(free_port)
fakellm_spawn tps0 FAKELLM_TPS=0 -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "never healthy"
tt=$(curl -s -o "$T/out" -w '%{time_total}' --max-time $((10 * S)) "http://127.0.0.1:$P/v1/completions" \
    -d '{"prompt":"x","max_tokens":2000,"ignore_eos":true}')
t_jq out .usage.completion_tokens 2000
ms_ge $((1 * S)) "$tt" || t_fail "2000 tokens took $tt s"
t_end

t_begin "-np 1: a second request waits (deferred) until the first is done"
P=$(free_port)
fakellm_spawn slot FAKELLM_TPS=10 -- -m "$MODEL" --port "$P" -np 1 --metrics
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
# streams, so that fakellm's log has each one's first and last token write
body='{"messages":[],"max_tokens":10,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
curl -sN -o "$T/r1" --max-time $((20 * S)) -H 'X-Request-Id: t20-r1' "$U/v1/chat/completions" -d "$body" &
c1=$!
t_wait 5 metric_is "$U" llamacpp:requests_processing 1 || t_fail "first never processing"
curl -sN -o "$T/r2" --max-time $((20 * S)) -H 'X-Request-Id: t20-r2' "$U/v1/chat/completions" -d "$body" &
c2=$!
t_wait 5 metric_is "$U" llamacpp:requests_deferred 1 || t_fail "second never deferred"
t_eq "$(metric "$U" llamacpp:requests_processing)" 1 "processing while one waits"
http GET "$U/slots"
t_jq out '.[0].is_processing' true
t_jq out '.[0].next_token[0].n_remain > 0' true
wait "$c1" "$c2"
# by fakellm's clock: the deferred stream's first token went out no sooner
# than the first stream's last one (fakellm logs a request once its answer
# is out: wait for both lines)
t_wait 5 grep -q "log_request: .* rid=t20-r2\$" "$T/slot.log" || t_fail "no log line for the second"
t_wait 5 grep -q "log_request: .* rid=t20-r1\$" "$T/slot.log" || t_fail "no log line for the first"
r1_last=$(sed -n 's/.*log_request: .* last_send_mono_ms=\([0-9.]*\) rid=t20-r1$/\1/p' "$T/slot.log")
r2_first=$(sed -n 's/.*log_request: .* first_send_mono_ms=\([0-9.]*\) .*rid=t20-r2$/\1/p' "$T/slot.log")
t_diag "first stream's last token at $r1_last ms, the deferred one's first at $r2_first ms"
[ -n "$r1_last" ] && [ -n "$r2_first" ] && ms_ge "$r2_first" "$r1_last" ||
    t_fail "the deferred request's first token ($r2_first) before the first's last ($r1_last): it did not wait"
t_has "$T/r1" '"completion_tokens":10'
t_has "$T/r2" '"completion_tokens":10'
t_eq "$(metric "$U" llamacpp:requests_deferred)" 0 "deferred after"
t_eq "$(metric "$U" llamacpp:requests_processing)" 0 "processing after"
t_end

t_begin "a client that hangs up mid-stream is counted, logged and frees its slot"
curl -sN --max-time $((20 * S)) "$U/v1/chat/completions" \
    -d '{"messages":[],"max_tokens":100,"ignore_eos":true,"stream":true}' >"$T/partial" &
c1=$!
t_wait 5 grep -q '"content":"Once"' "$T/partial" || t_fail "no first token"
kill "$c1"; wait "$c1" 2>/dev/null
t_wait 5 metric_is "$U" fakellm:aborted_requests_total 1 || t_fail "abort not counted"
t_eq "$(metric "$U" llamacpp:requests_processing)" 0 "processing after the abort"
t_has "$T/slot.log" "aborted: client disconnected"
http GET "$U/slots"
t_jq out '.[0].is_processing' false
t_end

t_begin "a client that hangs up while deferred leaves the queue"
curl -s -o /dev/null --max-time $((20 * S)) "$U/v1/chat/completions" -d "$body" &
c1=$!
t_wait 5 metric_is "$U" llamacpp:requests_processing 1 || t_fail "first never processing"
curl -s -o /dev/null --max-time $((20 * S)) "$U/v1/chat/completions" -d "$body" &
c2=$!
t_wait 5 metric_is "$U" llamacpp:requests_deferred 1 || t_fail "second never deferred"
kill "$c2"; wait "$c2" 2>/dev/null
t_wait 5 metric_is "$U" llamacpp:requests_deferred 0 || t_fail "still deferred"
t_eq "$(metric "$U" fakellm:aborted_requests_total)" 2 "aborted"
wait "$c1"
t_end

t_begin "1000 concurrent streams on one thread all complete"
P=$(free_port)
# the first token waits until every connection is open (3 s, 9 s at most)
fakellm_spawn many FAKELLM_TTFT_MS=$((3000 * (S < 3 ? S : 3))) FAKELLM_TPS=10 FAKELLM_LOG_REQUESTS=0 \
    -- -m "$MODEL" --port "$P" -np 1000 -c 1000000 --metrics
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
mkdir -p "$T/s"
cpids=()
for k in 1 2 3 4; do
    # Connection: close makes the server close first, so the TIME_WAITs sit
    # on its port, not on 1000 ephemeral ports other tests might pick
    curl -s --parallel --parallel-immediate --parallel-max 250 --max-time $((60 * S)) -H 'Connection: close' \
        -d '{"messages":[{"role":"user","content":"go"}],"stream":true,"max_tokens":5,"ignore_eos":true}' \
        "$U/v1/chat/completions?c=[1-250]" -o "$T/s/$k-#1" 2>"$T/curl$k.err" &
    cpids+=("$!")
done
t_wait 10 metric_is "$U" llamacpp:requests_processing 1000 ||
    t_fail "never 1000 at once (processing: $(metric "$U" llamacpp:requests_processing))"
for c in "${cpids[@]}"; do wait "$c" || t_fail "a curl exited $?"; done
t_eq "$(grep -l '^data: \[DONE\]' "$T"/s/* | wc -l)" 1000 "streams ending in [DONE]"
t_eq "$(cat "$T"/s/* | grep -c '"delta":{"content"')" 5000 "token chunks"
t_eq "$(metric "$U" llamacpp:tokens_predicted_total)" 5000 "tokens_predicted_total"
t_eq "$(metric "$U" fakellm:aborted_requests_total)" 0 "aborted"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
