#!/usr/bin/env bash
# fakellm's llama-server endpoints: shapes, the token rule, generation
# lengths, streams, errors, auth and the HTTP layer (keep-alive, chunked
# bodies, pipelining).
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
SENTENCE="Once upon a time a small model loaded in the fake server and answered every request."

status_is() { t_eq "$(cat "$T/status")" "$1" "${2:-HTTP status}"; }

P=$(free_port)
fakellm_spawn main -- -m "$MODEL" --host 127.0.0.1 --port "$P" --alias qwen,qwen-alias -c 256 -np 2 --metrics
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P

t_begin "/v1/models: one entry, id = first alias, aliases = all"
http GET "$U/v1/models"
status_is 200
t_jq out '.data | length' 1
t_jq out '.data[0].id' qwen
t_jq out '.data[0].aliases | join(",")' "qwen,qwen-alias"
t_jq out '.data[0].owned_by' llamacpp
t_jq out '.models[0].name' qwen
http GET "$U/models"
t_jq out '.data[0].id' qwen
t_end

t_begin "/v1/models without --alias: the id is the model path"
P2=$(free_port)
fakellm_spawn noalias -- -m "$MODEL" --port "$P2"
wait_healthy "$P2" || t_fail "never healthy"
http GET "http://127.0.0.1:$P2/v1/models"
t_jq out '.data[0].id' "$MODEL"
t_end

t_begin "chat: usage counts the words of every message's content"
http POST "$U/v1/chat/completions" '{"model":"qwen-alias","messages":[
  {"role":"system","content":"You are  terse."},
  {"role":"user","content":[{"type":"text","text":"count\nthese four\twords"},{"type":"image_url","image_url":{"url":"x"}}]}]}'
status_is 200
t_jq out .usage.prompt_tokens 7
t_jq out .usage.completion_tokens 16
t_jq out .usage.total_tokens 23
t_jq out .timings.prompt_n 7
t_jq out .timings.predicted_n 16
t_jq out '.choices[0].finish_reason' stop
t_jq out '.choices[0].message.role' assistant
t_jq out '.choices[0].message.content' "$SENTENCE"
t_jq out .model qwen-alias
t_jq out .object chat.completion
t_jq out '.id | startswith("chatcmpl-")' true
t_jq out '.timings.predicted_per_second > 0' true
t_end

t_begin "max_tokens, max_completion_tokens and ignore_eos set the length"
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"a"}],"max_tokens":5}'
t_jq out '.choices[0].message.content' "Once upon a time a"
t_jq out '.choices[0].finish_reason' length
t_jq out .usage.completion_tokens 5
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"a"}],"max_tokens":50,"max_completion_tokens":3}'
t_jq out .usage.completion_tokens 3
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"a"}],"max_tokens":16}'
t_jq out '.choices[0].finish_reason' length
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"a"}],"max_tokens":1e12}'
t_jq out .usage.completion_tokens 16
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"a"}],"max_tokens":40,"ignore_eos":true}'
t_jq out .usage.completion_tokens 40
t_jq out '.choices[0].finish_reason' length
t_jq out '.choices[0].message.content | split(" ") | length' 40
t_jq out '.choices[0].message.content | split(" ") | .[16]' Once
t_end

t_begin "generation stops at the slot's context (-c 256 -np 2 = 128 per slot)"
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"one two three"}],"ignore_eos":true}'
t_jq out .usage.completion_tokens 125
t_jq out .usage.total_tokens 128
http POST "$U/v1/chat/completions" "{\"messages\":[{\"role\":\"user\",\"content\":\"$(printf 'w %.0s' $(seq 128))\"}]}"
status_is 400 "a prompt that fills the slot"
t_jq out .error.type exceed_context_size_error
t_end

t_begin "/tokenize applies the same rule; generated text round-trips"
http POST "$U/tokenize" '{"content":"Hello,  world!\nfoo"}'
t_jq out '.tokens | length' 3
http POST "$U/tokenize" '{"content":"foo bar foo"}'
t_jq out '.tokens[0] == .tokens[2] and .tokens[0] != .tokens[1]' true
t_jq out '[.tokens[] | . >= 0 and . < 32000] | all' true
http POST "$U/tokenize" '{"content":"a b","with_pieces":true}'
t_jq out '[.tokens[].piece] | join(",")' "a,b"
http POST "$U/tokenize" "{\"content\":\"$SENTENCE\"}"
t_jq out '.tokens | length' 16
cp "$T/out" "$T/toks"
http POST "$U/detokenize" "{\"tokens\":$(jq -c .tokens "$T/toks")}"
t_jq out .content "$SENTENCE"
t_end

t_begin "chat stream: role chunk, one chunk per token, finish, usage chunk, [DONE]"
curl -sN --max-time 10 "$U/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x y"}],
  "max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}' >"$T/sse"
grep '^data: {' "$T/sse" | sed 's/^data: //' >"$T/chunks"
t_eq "$(grep -c '^data: ' "$T/sse")" 8 "data lines"
t_eq "$(tail -n 2 "$T/sse" | head -n 1)" "data: [DONE]" "last event"
t_eq "$(jq -sr '.[0].choices[0].delta.role' "$T/chunks")" assistant "role chunk"
t_eq "$(jq -sr '[.[].choices[0].delta.content // empty] | join("")' "$T/chunks")" "Once upon a time" "streamed text"
t_eq "$(jq -s '[.[] | select(.choices[0].delta.content != null)] | length' "$T/chunks")" 4 "token chunks"
t_eq "$(jq -sr '.[5].choices[0].finish_reason' "$T/chunks")" length "finish chunk"
t_eq "$(jq -sr '.[5].timings.predicted_n' "$T/chunks")" 4 "timings in the finish chunk"
t_eq "$(jq -sc '.[6].choices' "$T/chunks")" "[]" "usage chunk choices"
t_eq "$(jq -sr '.[6].usage.total_tokens' "$T/chunks")" 6 "usage chunk"
t_eq "$(jq -sr '[.[].object] | unique | join(",")' "$T/chunks")" chat.completion.chunk "object"
t_end

t_begin "stream without include_usage has no usage chunk"
curl -sN --max-time 10 "$U/v1/chat/completions" -d '{"messages":[],"stream":true}' >"$T/sse"
t_eq "$(grep -c '"usage"' "$T/sse")" 0 "usage chunks"
t_eq "$(grep -c '"finish_reason":"stop"' "$T/sse")" 1 "stop chunk"
t_end

t_begin "/v1/completions: text, stream and non-stream"
http POST "$U/v1/completions" '{"prompt":"The prompt has five tokens","max_tokens":2}'
t_jq out .object text_completion
t_jq out '.choices[0].text' "Once upon"
t_jq out .usage.prompt_tokens 5
curl -sN --max-time 10 "$U/v1/completions" -d '{"prompt":"x","max_tokens":3,"stream":true}' >"$T/sse"
t_eq "$(grep '^data: {' "$T/sse" | sed 's/^data: //' | jq -sr '[.[].choices[0].text] | join("")')" "Once upon a" "text"
t_has "$T/sse" "data: [DONE]"
t_end

t_begin "/completion (native): content, tokens_predicted, stop; stream ends without [DONE]"
http POST "$U/completion" '{"prompt":"p q","n_predict":3}'
t_jq out .content "Once upon a"
t_jq out .tokens_predicted 3
t_jq out .tokens_evaluated 2
t_jq out .stop true
t_jq out .stop_type limit
t_jq out .timings.predicted_n 3
http POST "$U/completion" '{"prompt":[1,2,3]}'
t_jq out .tokens_evaluated 3
t_jq out .stop_type eos
curl -sN --max-time 10 "$U/completion" -d '{"prompt":"p","n_predict":2,"stream":true}' >"$T/sse"
t_eq "$(grep -c '^data: ' "$T/sse")" 3 "data lines"
t_lacks "$T/sse" "[DONE]"
t_eq "$(grep '^data: ' "$T/sse" | tail -n 1 | sed 's/^data: //' | jq -r .stop)" true "last chunk stops"
t_eq "$(grep '^data: ' "$T/sse" | head -n 1 | sed 's/^data: //' | jq -r '.content + ":" + (.tokens_predicted | tostring)')" "Once:1" "first chunk"
t_end

t_begin "/props and /slots"
http GET "$U/props"
t_jq out .total_slots 2
t_jq out .default_generation_settings.n_ctx 128
t_jq out .model_path "$MODEL"
t_jq out .build_info b10587-fakellm
t_jq out .is_sleeping false
http GET "$U/slots"
t_jq out 'length' 2
t_jq out '[.[].is_processing] | any' false
t_jq out '.[1].n_ctx' 128
t_end

t_begin "/metrics counts what was served, with llama-server's names"
P3=$(free_port)
fakellm_spawn met -- -m "$MODEL" --port "$P3" --metrics
wait_healthy "$P3" || t_fail "never healthy"
http POST "http://127.0.0.1:$P3/v1/chat/completions" '{"messages":[{"role":"user","content":"a b c"}],"max_tokens":4}'
http POST "http://127.0.0.1:$P3/completion" '{"prompt":"d e","n_predict":6}'
http GET "http://127.0.0.1:$P3/metrics"
m() { awk -v n="$1" '$1 == n { print $2 }' "$T/out"; }
t_eq "$(m llamacpp:prompt_tokens_total)" 5 prompt_tokens_total
t_eq "$(m llamacpp:tokens_predicted_total)" 10 tokens_predicted_total
t_eq "$(m llamacpp:n_decode_total)" 10 n_decode_total
t_eq "$(m llamacpp:requests_processing)" 0 requests_processing
t_eq "$(m llamacpp:requests_deferred)" 0 requests_deferred
t_eq "$(m fakellm:aborted_requests_total)" 0 aborted
for name in prompt_seconds_total tokens_predicted_seconds_total n_tokens_max \
    spec_decode_num_draft_tokens_total spec_decode_num_accepted_tokens_total \
    spec_decode_num_drafts_total prompt_tokens_seconds predicted_tokens_seconds \
    n_busy_slots_per_decode prompt_tokens_cached_total; do
    [ -n "$(m "llamacpp:$name")" ] || t_fail "no llamacpp:$name"
done
t_has out "# TYPE llamacpp:requests_processing gauge"
t_end

t_begin "/metrics without --metrics and /slots with --no-slots are 501"
P4=$(free_port)
fakellm_spawn nomet -- -m "$MODEL" --port "$P4" --no-slots
wait_healthy "$P4" || t_fail "never healthy"
http GET "http://127.0.0.1:$P4/metrics"
status_is 501
t_jq out .error.type not_supported_error
t_jq out '.error.message | contains("--metrics")' true
http GET "http://127.0.0.1:$P4/slots"
status_is 501
t_end

t_begin "errors: unknown path 404, bad JSON 400, bad messages 400"
http GET "$U/v2/nothing"
status_is 404
t_jq out .error.code 404
t_jq out .error.message "File Not Found"
t_jq out .error.type not_found_error
http POST "$U/v1/chat/completions" '{"messages": [unterminated'
status_is 400
t_jq out .error.type invalid_request_error
http POST "$U/v1/chat/completions" '{"messages":"nope"}'
status_is 400
t_jq out .error.message "Expected 'messages' to be an array"
http POST "$U/v1/completions" '{"max_tokens":1}'
status_is 400
http GET "$U/v1/chat/completions"
status_is 404 "GET on a POST route"
t_end

t_begin "--api-key: 401 without the key, /health stays public"
P5=$(free_port)
fakellm_spawn key -- -m "$MODEL" --port "$P5" --api-key sekrit,other --metrics
wait_healthy "$P5" || t_fail "never healthy"
http GET "http://127.0.0.1:$P5/v1/models"
status_is 401
t_jq out .error.type authentication_error
t_jq out .error.message "Invalid API Key"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "http://127.0.0.1:$P5/metrics")" 401 "wrong key"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer other' "http://127.0.0.1:$P5/metrics")" 200 "second key"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P5/health")" 200 "health"
t_end

t_begin "embeddings: 501 without --embeddings; deterministic unit vectors with it"
http POST "$U/v1/embeddings" '{"input":"hello"}'
status_is 501
t_jq out '.error.message | contains("--embeddings")' true
P6=$(free_port)
fakellm_spawn emb -- -m "$MODEL" --port "$P6" --embeddings
wait_healthy "$P6" || t_fail "never healthy"
http POST "http://127.0.0.1:$P6/v1/embeddings" '{"input":["hello world","hello world","other text here"],"model":"e"}'
status_is 200
t_jq out '.data | length' 3
t_jq out '.data[0].embedding | length' 64
t_jq out '(.data[0].embedding | map(. * .) | add) | . > 0.999 and . < 1.001' true
t_jq out '.data[0].embedding == .data[1].embedding' true
t_jq out '.data[0].embedding == .data[2].embedding' false
t_jq out '[.data[].index] | join(",")' "0,1,2"
t_jq out .usage.prompt_tokens 7
t_jq out .object list
http POST "http://127.0.0.1:$P6/v1/embeddings" '{"input":"hello world"}'
cp "$T/out" "$T/e1"
http POST "http://127.0.0.1:$P6/embeddings" '{"input":"hello   world"}'
t_eq "$(jq -c '.data[0].embedding' "$T/e1")" "$(jq -c '.data[0].embedding' "$T/out")" "same tokens, same vector"
http POST "http://127.0.0.1:$P6/v1/embeddings" '{"input":""}'
status_is 400 "empty input"
http POST "http://127.0.0.1:$P6/v1/chat/completions" '{"messages":[]}'
status_is 501 "completions on an embedding server"
t_end

t_begin "HTTP keep-alive reuses one connection"
out=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' "$U/health" "$U/props")
t_eq "$out" "1 0 " "connects per request"
t_end

t_begin "a chunked request body is read whole"
http_chunked=$(curl -s -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' \
    --data-binary '{"content":"one two three four"}' "$U/tokenize")
t_eq "$(jq '.tokens | length' <<<"$http_chunked")" 4 "tokens"
t_end

t_begin "pipelined requests are answered in order; Connection: close closes"
exec 3<>"/dev/tcp/127.0.0.1/$P"
printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\nPOST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n{"content":"a"}\nGET /props HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
timeout 5 cat <&3 >"$T/pipe"
exec 3<&-
t_eq "$(grep -o 'HTTP/1.1 200 OK' "$T/pipe" | wc -l)" 3 "responses"
t_eq "$(grep -o '"status":"ok"\|"tokens":\[[0-9]*\]\|"total_slots":2' "$T/pipe" | paste -sd,)" \
    "\"status\":\"ok\",\"tokens\":[$(jq '.tokens[0]' <<<"$(curl -s "$U/tokenize" -d '{"content":"a"}')")],\"total_slots\":2" "order"
t_has "$T/pipe" "Connection: close"
t_end

t_begin "a malformed request gets 400 and the server lives on"
exec 3<>"/dev/tcp/127.0.0.1/$P"
printf 'THIS IS NOT HTTP\r\n\r\n' >&3
timeout 5 cat <&3 >"$T/bad"
exec 3<&-
t_has "$T/bad" "HTTP/1.1 400 Bad Request"
t_eq "$(curl -s -o /dev/null -w '%{http_code}' "$U/health")" 200 "health after"
t_end

t_begin "Expect: 100-continue is answered, so a long body does not wait for curl's timeout"
printf '{"content":"' >"$T/big.json"; printf 'w %.0s' $(seq 3000) >>"$T/big.json"; printf '"}' >>"$T/big.json"
tt=$(curl -s -o "$T/out" -w '%{time_total}' --expect100-timeout 30 --max-time 60 \
    -H 'Expect: 100-continue' --data-binary @"$T/big.json" "$U/tokenize")
t_jq out '.tokens | length' 3000
awk -v t="$tt" 'BEGIN { exit !(t < 10) }' || t_fail "took $tt s: no 100 Continue"
t_end

t_begin "a body over 64 MiB is refused with 413"
code=$(head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' |
    curl -s -o "$T/out" -w '%{http_code}' --max-time $((60 * GPUMOD_TEST_TIME_SCALE)) --data-binary @- "$U/tokenize")
t_eq "$code" 413 "status"
t_jq out .error.code 413
t_end

t_begin "-to 1: an idle keep-alive connection is closed by the server"
P7=$(free_port)
fakellm_spawn idle -- -m "$MODEL" --port "$P7" -to 1
wait_healthy "$P7" || t_fail "never healthy"
exec 3<>"/dev/tcp/127.0.0.1/$P7"
printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n' >&3
t0=$(date +%s%N)
timeout $((10 * GPUMOD_TEST_TIME_SCALE)) cat <&3 >"$T/idle"
crc=$?
t1=$(date +%s%N)
exec 3<&-
t_eq "$crc" 0 "cat ended by the server's close, not by timeout"
t_has "$T/idle" '{"status":"ok"}'
[ $(( (t1 - t0) / 1000000 )) -ge 900 ] || t_fail "closed after $(( (t1 - t0) / 1000000 )) ms, before -to 1"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
