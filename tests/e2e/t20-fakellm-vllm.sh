#!/usr/bin/env bash
# fakellm as `vllm serve`: model names, vLLM's error shapes and limits,
# its metrics, and the dev-mode sleep/wake that must release memory.
. "$(dirname "$0")/lib.sh"

S=$GPUMOD_TEST_TIME_SCALE

status_is() { t_eq "$(cat "$T/status")" "$1" "${2:-HTTP status}"; }

P=$(free_port)
fakellm_spawn v -- serve Org/Model-7B --host 127.0.0.1 --port "$P" --served-model-name chat chat-alias \
    --max-model-len 64 --max-num-seqs 8 --api-key k1
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
AUTH=(-H 'Authorization: Bearer k1')
vpost() { curl -s -o "$T/out" -w '%{http_code}' "${AUTH[@]}" --max-time $((10 * S)) "$U$1" -d "$2" >"$T/status"; }

t_begin "/v1/models lists each served name with max_model_len"
curl -s "${AUTH[@]}" "$U/v1/models" >"$T/out"
t_jq out '[.data[].id] | join(",")' "chat,chat-alias"
t_jq out '[.data[].max_model_len] | unique | join(",")' 64
t_jq out '.data[0].owned_by' vllm
t_jq out '.data[1].root' Org/Model-7B
t_end

t_begin "the API key guards /v1/* only"
http GET "$U/v1/models"
status_is 401
t_jq out .error Unauthorized
http GET "$U/metrics"
status_is 200 "metrics without a key"
http GET "$U/version"
t_jq out .version 0.11.0
t_end

t_begin "chat with a served name; an unknown model is 404 NotFoundError"
vpost /v1/chat/completions '{"model":"chat-alias","messages":[{"role":"user","content":"two words"}]}'
status_is 200
t_jq out .model chat-alias
t_jq out .usage.prompt_tokens 2
t_jq out .usage.completion_tokens 16
t_jq out '.choices[0].finish_reason' stop
t_jq out 'has("timings")' false
vpost /v1/chat/completions '{"model":"other","messages":[]}'
status_is 404
t_jq out .error.type NotFoundError
t_jq out .error.message 'The model `other` does not exist.'
t_jq out .error.code 404
t_end

t_begin "prompt + max_tokens over --max-model-len is 400"
vpost /v1/completions '{"model":"chat","prompt":"a b c d","max_tokens":61}'
status_is 400
t_jq out .error.type BadRequestError
t_jq out '.error.message | startswith("This model'"'"'s maximum context length is 64 tokens. However, you requested 65 tokens")' true
vpost /v1/completions '{"model":"chat","prompt":"a","max_tokens":1e12}'
status_is 400 "an absurd max_tokens"
vpost /v1/completions '{"model":"chat","prompt":"a b c d","max_tokens":60,"ignore_eos":true}'
status_is 200 "exactly at the limit"
t_jq out .usage.total_tokens 64
t_end

t_begin "vLLM stream: role chunk with empty content, usage chunk, [DONE]"
curl -sN "${AUTH[@]}" --max-time 10 "$U/v1/chat/completions" -d '{"messages":[{"role":"user","content":"x"}],
  "max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}' >"$T/sse"
grep '^data: {' "$T/sse" | sed 's/^data: //' >"$T/chunks"
t_eq "$(jq -sc '.[0].choices[0].delta' "$T/chunks")" '{"role":"assistant","content":""}' "role chunk"
t_eq "$(jq -sr '.[-1].usage.completion_tokens' "$T/chunks")" 2 "usage"
t_eq "$(grep -c 'timings' "$T/sse")" 0 "timings (llama only)"
t_eq "$(tail -n 2 "$T/sse" | head -n 1)" "data: [DONE]" "end"
t_end

t_begin "vLLM /tokenize reports count and max_model_len; /detokenize answers prompt"
vpost /tokenize '{"prompt":"one two three"}'
t_jq out .count 3
t_jq out .max_model_len 64
vpost /tokenize '{"prompt":"Once upon a time"}'
vpost /detokenize "{\"tokens\":$(jq -c .tokens "$T/out")}"
t_jq out .prompt "Once upon a time"
t_end

t_begin "vLLM errors: unknown path, wrong method, bad JSON"
http GET "$U/nothing"
status_is 404
t_jq out .detail "Not Found"
http GET "$U/v1/chat/completions"
status_is 405
t_jq out .detail "Method Not Allowed"
vpost /v1/chat/completions '{bad'
status_is 400
t_jq out .error.type BadRequestError
t_end

t_begin "vLLM /metrics: vllm: names with model_name labels, counts what was served"
http GET "$U/metrics"
t_has out 'vllm:prompt_tokens_total{engine="0",model_name="chat"} 7'
t_has out 'vllm:generation_tokens_total{engine="0",model_name="chat"} 78'
t_has out 'vllm:num_requests_running{engine="0",model_name="chat"} 0'
t_has out 'vllm:num_requests_waiting{engine="0",model_name="chat"} 0'
t_has out 'vllm:request_success_total{engine="0",finished_reason="stop",model_name="chat"} 1'
t_has out 'vllm:request_success_total{engine="0",finished_reason="length",model_name="chat"} 2'
t_has out 'vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="chat"} 3'
t_has out 'vllm:time_to_first_token_seconds_count{engine="0",model_name="chat"} 3'
t_has out '# TYPE vllm:e2e_request_latency_seconds histogram'
t_has out 'fakellm:aborted_requests_total 0'
t_end

t_begin "without VLLM_SERVER_DEV_MODE there is no /sleep"
http POST "$U/sleep?level=1"
status_is 404
t_end

t_begin "embeddings need a pooling runner"
vpost /v1/embeddings '{"input":"x"}'
status_is 400
t_jq out .error.message "The model does not support Embeddings API"
P2=$(free_port)
fakellm_spawn pool -- serve emb --host 127.0.0.1 --port "$P2" --runner pooling
wait_healthy "$P2" || t_fail "never healthy"
http POST "http://127.0.0.1:$P2/v1/embeddings" '{"input":"hello there"}'
status_is 200
t_jq out '.data[0].embedding | length' 64
t_jq out .usage.prompt_tokens 2
http POST "http://127.0.0.1:$P2/v1/chat/completions" '{"messages":[]}'
status_is 400 "chat on a pooling model"
t_end

cat >"$T/nvml.json" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-0", "name": "Fake", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": []}
EOF

t_begin "sleep level 2 (dev mode, --enable-sleep-mode) frees RAM and NVML entries; wake takes them back"
P3=$(free_port)
fakellm_spawn sleepy VLLM_SERVER_DEV_MODE=1 FAKELLM_RAM_MB=256 FAKELLM_GPU_MB=5000 GPUMOD_FAKE_NVML_STATE="$T/nvml.json" \
    -- serve m --host 127.0.0.1 --port "$P3" --enable-sleep-mode
pid=$_t_last_pid
wait_healthy "$P3" || t_fail "never healthy"
V=http://127.0.0.1:$P3
r=$(rss_mb "$pid"); [ "$r" -ge 256 ] || t_fail "awake RSS $r MiB < 256"
t_jq "$T/nvml.json" "[.processes[] | select(.pid == $pid) | .used_mb] | add" 5000
http GET "$V/is_sleeping"
t_jq out .is_sleeping false
http POST "$V/sleep?level=2" # level 1 keeps RAM and adds the weights: t100-fakellm-sleep
status_is 200 "sleep"
t_eq "$(wc -c <"$T/out")" 0 "sleep body bytes"
http GET "$V/is_sleeping"
t_jq out .is_sleeping true
r=$(rss_mb "$pid"); [ "$r" -lt 128 ] || t_fail "asleep RSS $r MiB: not released"
t_jq "$T/nvml.json" "[.processes[] | select(.pid == $pid)] | length" 0
http GET "$V/health"
status_is 200 "health while asleep"
http POST "$V/v1/chat/completions" '{"messages":[]}'
status_is 503 "chat while asleep"
http POST "$V/wake_up"
status_is 200 "wake"
http GET "$V/is_sleeping"
t_jq out .is_sleeping false
r=$(rss_mb "$pid"); [ "$r" -ge 256 ] || t_fail "woken RSS $r MiB < 256"
t_jq "$T/nvml.json" "[.processes[] | select(.pid == $pid) | .used_mb] | add" 5000
http POST "$V/v1/chat/completions" '{"messages":[]}'
status_is 200 "chat after wake"
t_end

t_begin "without --enable-sleep-mode, sleep answers 200 and frees nothing (as vLLM)"
P4=$(free_port)
fakellm_spawn nosleep VLLM_SERVER_DEV_MODE=1 FAKELLM_RAM_MB=200 -- serve m --host 127.0.0.1 --port "$P4"
pid=$_t_last_pid
wait_healthy "$P4" || t_fail "never healthy"
http POST "http://127.0.0.1:$P4/sleep?level=2"
status_is 200
http GET "http://127.0.0.1:$P4/is_sleeping"
t_jq out .is_sleeping true
r=$(rss_mb "$pid"); [ "$r" -ge 200 ] || t_fail "RSS $r MiB: released without sleep mode"
t_has "$T/nosleep.log" "sleep mode was not enabled"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
