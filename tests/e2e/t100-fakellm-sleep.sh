#!/usr/bin/env bash
# fakellm's residency doubles (tests/fakes/README.md "Sleep, wake and
# router-mode memory"): vLLM sleep per level (fake NVML entries, host RSS
# by the weights), FAKELLM_WAKE_MS / FAKELLM_WAKE_FAIL / FAKELLM_SLEEP_STUCK,
# /wake_up?tags=, /collective_rpc, router mode's per-model GPU memory, and
# the /metrics counters that grow with each request.
. "$(dirname "$0")/lib.sh"

S=$GPUMOD_TEST_TIME_SCALE
MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf

status_is() { t_eq "$(cat "$T/status")" "$1" "${2:-HTTP status}"; }
cat >"$T/nvml.json" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-0", "name": "Fake", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"},
             {"index": 1, "uuid": "GPU-1", "name": "Fake", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": []}
EOF
NV=(GPUMOD_FAKE_NVML_STATE="$T/nvml.json")
gpu_of() { jq -r "[.processes[] | select(.pid == $1) | .used_mb] | map(tostring) | join(\",\")" "$T/nvml.json"; }
sleeping_is() { http GET "$1/is_sleeping"; t_jq out .is_sleeping "$2"; }
# vllm NAME PORT [VAR=VALUE...]: a dev-mode vLLM fake with --enable-sleep-mode
vllm() {
    local name=$1 port=$2; shift 2
    fakellm_spawn "$name" VLLM_SERVER_DEV_MODE=1 "${NV[@]}" "$@" \
        -- serve m --host 127.0.0.1 --port "$port" --enable-sleep-mode
    wait_healthy "$port" || t_fail "$name never healthy"
}

t_begin "level 1: NVML entries gone, RAM kept, RSS grows by FAKELLM_WEIGHTS_MB; wake undoes both"
P=$(free_port)
vllm l1 "$P" FAKELLM_RAM_MB=64 FAKELLM_GPU_MB=5000 FAKELLM_WEIGHTS_MB=192
pid=$_t_last_pid; U=http://127.0.0.1:$P
t_eq "$(gpu_of "$pid")" 5000 "awake GPU"
r0=$(rss_mb "$pid"); [ "$r0" -ge 64 ] && [ "$r0" -lt 192 ] || t_fail "awake RSS $r0 MiB: expected 64..191"
http POST "$U/sleep?level=1"
status_is 200 "sleep"
sleeping_is "$U" true
t_eq "$(gpu_of "$pid")" "" "asleep GPU entries"
r1=$(rss_mb "$pid"); [ "$r1" -ge $((r0 + 192)) ] || t_fail "asleep RSS $r1 MiB: not awake's $r0 + 192"
t_has "$T/l1.log" "level 1 (the weights' host copy: 192 MiB)"
http POST "$U/wake_up"
status_is 200 "wake"
sleeping_is "$U" false
t_eq "$(gpu_of "$pid")" 5000 "woken GPU"
r2=$(rss_mb "$pid"); [ "$r2" -lt $((r0 + 96)) ] || t_fail "woken RSS $r2 MiB: the host copy stayed (awake $r0)"
t_end

t_begin "level 1 default weights = FAKELLM_GPU_MB's sum; FAKELLM_SLEEP_GPU_MB leaves a residue per device"
P=$(free_port)
vllm l1b "$P" CUDA_VISIBLE_DEVICES=0,1 FAKELLM_GPU_MB=100,60 FAKELLM_SLEEP_GPU_MB=30
pid=$_t_last_pid; U=http://127.0.0.1:$P
t_eq "$(gpu_of "$pid")" "100,60" "awake GPU per device"
r0=$(rss_mb "$pid")
http POST "$U/sleep?level=1"
t_eq "$(gpu_of "$pid")" "30,30" "asleep residue"
r1=$(rss_mb "$pid"); [ "$r1" -ge $((r0 + 160)) ] || t_fail "asleep RSS $r1 MiB: not $r0 + 160"
http POST "$U/wake_up"
t_eq "$(gpu_of "$pid")" "100,60" "woken GPU"
t_end

t_begin "level 2: NVML entries and FAKELLM_RAM_MB released, nothing added; wake takes them back"
P=$(free_port)
vllm l2 "$P" FAKELLM_RAM_MB=160 FAKELLM_GPU_MB=4000
pid=$_t_last_pid; U=http://127.0.0.1:$P
r0=$(rss_mb "$pid"); [ "$r0" -ge 160 ] || t_fail "awake RSS $r0 MiB < 160"
http POST "$U/sleep?level=2"
sleeping_is "$U" true
t_eq "$(gpu_of "$pid")" "" "asleep GPU entries"
r1=$(rss_mb "$pid"); [ "$r1" -lt 100 ] || t_fail "asleep RSS $r1 MiB: RAM not released"
t_has "$T/l2.log" "level 2 (the weights' host copy: 0 MiB)"
http POST "$U/wake_up"
sleeping_is "$U" false
r2=$(rss_mb "$pid"); [ "$r2" -ge 160 ] || t_fail "woken RSS $r2 MiB < 160"
t_eq "$(gpu_of "$pid")" 4000 "woken GPU"
t_end

t_begin "level 1 with FAKELLM_FORK_WORKER: the worker's entries go and come back"
P=$(free_port)
vllm wk "$P" FAKELLM_FORK_WORKER=1 FAKELLM_RAM_MB=32 FAKELLM_GPU_MB=700 FAKELLM_WEIGHTS_MB=64
U=http://127.0.0.1:$P
wpid=$(pgrep -P "$_t_last_pid" | head -1)
t_eq "$(gpu_of "$wpid")" 700 "worker's GPU awake"
http POST "$U/sleep?level=1"
t_eq "$(gpu_of "$wpid")" "" "worker's GPU asleep"
r=$(rss_mb "$wpid"); [ "$r" -ge 32 ] || t_fail "level 1 released the worker's RAM ($r MiB)"
http POST "$U/wake_up"
t_eq "$(gpu_of "$wpid")" 700 "worker's GPU woken"
t_end

t_begin "FAKELLM_WAKE_MS: /wake_up answers when done; /is_sleeping and /health answer meanwhile"
P=$(free_port)
vllm slow "$P" FAKELLM_GPU_MB=500 FAKELLM_WAKE_MS=$((4000 * S))
pid=$_t_last_pid; U=http://127.0.0.1:$P
http POST "$U/sleep?level=1"
curl -s -o "$T/wake.out" -w '%{http_code}' -X POST --max-time $((20 * S)) "$U/wake_up" >"$T/wake.status" &
cpid=$!
kill -0 "$cpid" 2>/dev/null || t_fail "/wake_up answered at once"
sleeping_is "$U" true
http GET "$U/health"
status_is 200 "health while waking"
t_eq "$(gpu_of "$pid")" "" "GPU while waking"
wait "$cpid"
t_eq "$(cat "$T/wake.status")" 200 "wake status"
sleeping_is "$U" false
t_eq "$(gpu_of "$pid")" 500 "woken GPU"
t_end

t_begin "FAKELLM_WAKE_FAIL: /wake_up answers 500 and the engine stays asleep"
P=$(free_port)
vllm wfail "$P" FAKELLM_GPU_MB=500 FAKELLM_WAKE_FAIL=1
pid=$_t_last_pid; U=http://127.0.0.1:$P
http POST "$U/sleep?level=1"
http POST "$U/wake_up"
status_is 500 "failed wake"
t_jq out .error.message "fakellm: FAKELLM_WAKE_FAIL: the wake failed, the engine stays asleep"
sleeping_is "$U" true
t_eq "$(gpu_of "$pid")" "" "GPU after a failed wake"
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"x"}]}'
status_is 503 "chat after a failed wake"
t_end

t_begin "FAKELLM_SLEEP_STUCK: /sleep answers 200, /is_sleeping stays false, nothing freed"
P=$(free_port)
vllm stuck "$P" FAKELLM_GPU_MB=500 FAKELLM_SLEEP_STUCK=1
pid=$_t_last_pid; U=http://127.0.0.1:$P
http POST "$U/sleep?level=1"
status_is 200 "stuck sleep"
sleeping_is "$U" false
t_eq "$(gpu_of "$pid")" 500 "GPU after a stuck sleep"
t_has "$T/stuck.log" "FAKELLM_SLEEP_STUCK"
t_end

t_begin "level 2 wake by tags: weights, collective_rpc reload_weights, kv_cache"
P=$(free_port)
vllm tags "$P" FAKELLM_GPU_MB=800 FAKELLM_RAM_MB=16
pid=$_t_last_pid; U=http://127.0.0.1:$P
http POST "$U/sleep?level=2"
http POST "$U/wake_up?tags=weights"
status_is 200 "wake weights"
sleeping_is "$U" true
t_eq "$(gpu_of "$pid")" 800 "GPU after the weights' wake"
http POST "$U/collective_rpc" '{"method":"reload_weights"}'
status_is 200 "reload_weights"
t_jq out '.results | tojson' '[null]'
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"x"}]}'
status_is 503 "chat with the KV cache asleep"
http POST "$U/wake_up?tags=kv_cache"
status_is 200 "wake kv_cache"
sleeping_is "$U" false
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"x"}]}'
status_is 200 "chat after both parts"
http POST "$U/collective_rpc" '{"method":"nope"}'
status_is 500 "unknown rpc method"
http POST "$U/collective_rpc" '{}'
status_is 400 "rpc without a method"
t_end

t_begin "without VLLM_SERVER_DEV_MODE there is no /collective_rpc"
P=$(free_port)
fakellm_spawn nodev -- serve m --host 127.0.0.1 --port "$P"
wait_healthy "$P" || t_fail "never healthy"
http POST "http://127.0.0.1:$P/collective_rpc" '{"method":"reload_weights"}'
status_is 404
t_end

t_begin "router mode: FAKELLM_MODEL_GPU_MB per loaded model on top of FAKELLM_GPU_MB"
mkdir -p "$T/models"
for m in alpha beta gamma; do cp "$MODEL" "$T/models/$m.gguf"; done
P=$(free_port)
fakellm_spawn router "${NV[@]}" FAKELLM_GPU_MB=50 FAKELLM_MODEL_GPU_MB=alpha=100,beta=200,7 FAKELLM_LOAD_MS=200 \
    -- --models-dir "$T/models" --port "$P" --metrics
pid=$_t_last_pid; U=http://127.0.0.1:$P
wait_healthy "$P" || t_fail "never healthy"
t_eq "$(gpu_of "$pid")" 50 "router alone"
http POST "$U/models/load" '{"model":"alpha"}'
t_eq "$(gpu_of "$pid")" 150 "alpha loading"
http POST "$U/models/load" '{"model":"beta"}'
t_wait 5 sh -c "curl -s $U/models | jq -e '[.data[].status.value] == [\"loaded\",\"loaded\",\"unloaded\"]'" ||
    t_fail "alpha and beta never loaded"
t_eq "$(gpu_of "$pid")" 350 "alpha and beta"
http POST "$U/models/load" '{"model":"gamma"}'
t_eq "$(gpu_of "$pid")" 357 "gamma takes the bare default"
http POST "$U/models/unload" '{"model":"alpha"}'
http POST "$U/models/unload" '{"model":"gamma"}'
t_eq "$(gpu_of "$pid")" 250 "beta left"
http GET "$U/models"
t_jq out '[.data[] | "\(.id)=\(.status.value)"] | join(",")' "alpha=unloaded,beta=loaded,gamma=unloaded"
t_end

t_begin "router mode without FAKELLM_GPU_MB: no entry until a model loads, none after"
P=$(free_port)
fakellm_spawn router2 "${NV[@]}" FAKELLM_MODEL_GPU_MB=300 -- --models-dir "$T/models" --port "$P"
pid=$_t_last_pid; U=http://127.0.0.1:$P
wait_healthy "$P" || t_fail "never healthy"
t_eq "$(gpu_of "$pid")" "" "no model"
http POST "$U/models/load" '{"model":"beta"}'
t_eq "$(gpu_of "$pid")" 300 "beta"
http POST "$U/models/unload" '{"model":"beta"}'
t_eq "$(gpu_of "$pid")" "" "beta unloaded"
t_end

# the counters an idle check reads: each must grow with every request
counter() { curl -s "$1" | awk -v n="$2" 'index($0, n) == 1 { s += $NF } END { print s + 0 }'; }
t_begin "/metrics: vllm:request_success_total grows with each completion"
P=$(free_port)
fakellm_spawn mv -- serve m --host 127.0.0.1 --port "$P"
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
a=$(counter "$U/metrics" vllm:request_success_total)
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"x"}]}'
http POST "$U/v1/completions" '{"prompt":"x","max_tokens":2}'
b=$(counter "$U/metrics" vllm:request_success_total)
t_eq "$b" $((a + 2)) "request_success_total after 2 requests"
t_end

t_begin "/metrics: llamacpp:n_decode_total and prompt_tokens_total grow with each completion"
P=$(free_port)
fakellm_spawn ml -- -m "$MODEL" --port "$P" --metrics
wait_healthy "$P" || t_fail "never healthy"
U=http://127.0.0.1:$P
a=$(counter "$U/metrics" llamacpp:n_decode_total)
p=$(counter "$U/metrics" llamacpp:prompt_tokens_total)
http POST "$U/v1/chat/completions" '{"messages":[{"role":"user","content":"x"}],"max_tokens":1}'
b=$(counter "$U/metrics" llamacpp:n_decode_total)
q=$(counter "$U/metrics" llamacpp:prompt_tokens_total)
[ "$b" -gt "$a" ] || t_fail "n_decode_total $a -> $b"
[ "$q" -gt "$p" ] || t_fail "prompt_tokens_total $p -> $q"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
