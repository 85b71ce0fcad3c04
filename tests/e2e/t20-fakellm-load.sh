#!/usr/bin/env bash
# fakellm's scripted load: health while loading in both flavours, the log
# lines, RAM that is really resident, a load that fails half-way, the fake
# NVML registration, and router mode's models.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE
# load windows long enough (scaled) that the checks made while loading
# run inside them on a busy machine
LOAD=$((3000 * S))

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

t_begin "llama: 503 Loading model during the load, 200 after, load >= FAKELLM_LOAD_MS"
P=$(free_port)
t0=$(now_ms)
fakellm_spawn ll FAKELLM_LOAD_MS=$LOAD -- -m "$MODEL" --host 127.0.0.1 --port "$P"
t_wait 5 grep -q "loading model" "$T/ll.log" || t_fail "no load line"
http GET "http://127.0.0.1:$P/health"
t_eq "$(cat "$T/status")" 503 "health status while loading"
t_jq out .error.code 503
t_jq out .error.message "Loading model"
t_jq out .error.type unavailable_error
http GET "http://127.0.0.1:$P/v1/models"
t_eq "$(cat "$T/status")" 503 "/v1/models while loading"
wait_healthy "$P" || t_fail "never healthy"
t1=$(now_ms)
[ $((t1 - t0)) -ge $LOAD ] || t_fail "healthy after $((t1 - t0)) ms, before FAKELLM_LOAD_MS"
[ $((t1 - t0)) -le $((LOAD + 5000 * S)) ] || t_fail "load took $((t1 - t0)) ms (hung?)"
http GET "http://127.0.0.1:$P/health"
t_eq "$(cat "$T/status")" 200 "health status after load"
t_jq out .status ok
t_end

t_begin "llama: load log lines in order, with progress"
t_match "$T/ll.log" "^I srv +load_model: loading model '$MODEL'$"
t_has "$T/ll.log" "load_tensors: loading model tensors, this can take a while"
t_match "$T/ll.log" "^\\.+$"
t_has "$T/ll.log" "I srv  llama_server: model loaded"
t_has "$T/ll.log" "I srv  llama_server: listening on http://127.0.0.1:$P"
order=$(grep -nE "binding port|loading model '|model loaded|listening on" "$T/ll.log" | cut -d: -f2- |
    sed -E 's/.*(binding port|loading model|model loaded|listening on).*/\1/' | paste -sd,)
t_eq "$order" "binding port,loading model,model loaded,listening on" "log order"
t_end

t_begin "vLLM: connections refused while loading, then 200 with an empty body"
P=$(free_port)
t0=$(now_ms)
fakellm_spawn vl FAKELLM_LOAD_MS=$LOAD -- serve org/m --host 127.0.0.1 --port "$P"
t_wait 5 grep -q "Initializing a V1 LLM engine" "$T/vl.log" || t_fail "no engine line"
curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$P/health"
t_eq "$?" 7 "curl exit status while loading (7 = connection refused)"
wait_healthy "$P" || t_fail "never healthy"
t1=$(now_ms)
[ $((t1 - t0)) -ge $LOAD ] || t_fail "listening after $((t1 - t0)) ms, before FAKELLM_LOAD_MS"
http GET "http://127.0.0.1:$P/health"
t_eq "$(cat "$T/status")" 200 "status"
t_eq "$(wc -c <"$T/out")" 0 "body bytes"
t_has "$T/vl.log" "Starting vLLM API server 0 on http://127.0.0.1:$P"
t_has "$T/vl.log" "INFO:     Application startup complete."
t_end

t_begin "FAKELLM_RAM_MB is resident after the load; without it RSS stays small"
P=$(free_port); P2=$(free_port)
fakellm_spawn ram FAKELLM_RAM_MB=300 FAKELLM_LOAD_MS=400 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
fakellm_spawn noram -- -m "$MODEL" --port "$P2"
pid2=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
wait_healthy "$P2" || t_fail "the second never healthy"
r=$(rss_mb "$pid"); r2=$(rss_mb "$pid2")
[ "$r" -ge 300 ] || t_fail "VmRSS $r MiB < 300"
[ "$r" -le 450 ] || t_fail "VmRSS $r MiB, far above 300"
[ "$r2" -lt 150 ] || t_fail "VmRSS without FAKELLM_RAM_MB is $r2 MiB"
t_end

t_begin "FAKELLM_EXIT_DURING_LOAD: 503 first, then the error line and that exit code half-way"
P=$(free_port)
t0=$(now_ms)
fakellm_spawn edl FAKELLM_LOAD_MS=$((4000 * S)) FAKELLM_EXIT_DURING_LOAD=3 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
http GET "http://127.0.0.1:$P/health"
t_wait 5 grep -q "loading model" "$T/edl.log"
http GET "http://127.0.0.1:$P/health"
t_eq "$(cat "$T/status")" 503 "health before the failure"
reap "$pid" 10 || t_fail "did not exit"
t1=$(now_ms)
t_eq "$rc" 3 "exit status"
[ $((t1 - t0)) -ge $((2000 * S)) ] || t_fail "exited after $((t1 - t0)) ms: not half-way through a $((4000 * S)) ms load"
t_has "$T/edl.log" "cudaMalloc failed: out of memory"
t_has "$T/edl.log" "E llama_model_load: error loading model: unable to allocate CUDA0 buffer"
t_has "$T/edl.log" "exiting due to model loading error"
t_lacks "$T/edl.log" "model loaded"
t_end

t_begin "FAKELLM_EXIT_DURING_LOAD in vLLM mode: EngineCore failed to start"
P=$(free_port)
fakellm_spawn vedl FAKELLM_LOAD_MS=200 FAKELLM_EXIT_DURING_LOAD=1 -- serve m --port "$P"
pid=$_t_last_pid
reap "$pid" 10 || t_fail "did not exit"
t_eq "$rc" 1 "exit status"
t_has "$T/vedl.log" "EngineCore failed to start."
t_has "$T/vedl.log" "Free memory on device"
t_lacks "$T/vedl.log" "Application startup complete"
t_end

nvml_state() {
    cat >"$1" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"},
             {"index": 1, "uuid": "GPU-bbbb", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": [{"pid": 1, "device": 1, "used_mb": 77}],
 "release_delay_ms": 0, "call_delay_ms": {"nvmlDeviceGetMemoryInfo_v2": 0}}
EOF
}

t_begin "FAKELLM_GPU_MB registers one entry per visible device, keeping the rest"
nvml_state "$T/nvml.json"
P=$(free_port)
fakellm_spawn gpu GPUMOD_FAKE_NVML_STATE="$T/nvml.json" CUDA_VISIBLE_DEVICES=1,0 FAKELLM_GPU_MB=9000,1000 \
    -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
t_jq "$T/nvml.json" "[.processes[] | select(.pid == $pid) | \"\(.device):\(.used_mb)\"] | sort | join(\",\")" "0:1000,1:9000"
t_jq "$T/nvml.json" '[.processes[] | select(.pid == 1)] | length' 1
t_jq "$T/nvml.json" '.devices | length' 2
t_jq "$T/nvml.json" '.release_delay_ms' 0
t_end

t_begin "FAKELLM_GPU_MB: CUDA_VISIBLE_DEVICES by UUID, default device 0"
nvml_state "$T/nvml2.json"
P=$(free_port); P2=$(free_port)
fakellm_spawn gpu2 GPUMOD_FAKE_NVML_STATE="$T/nvml2.json" CUDA_VISIBLE_DEVICES=GPU-bbbb FAKELLM_GPU_MB=500 \
    -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
fakellm_spawn gpu3 GPUMOD_FAKE_NVML_STATE="$T/nvml2.json" FAKELLM_GPU_MB=600 -- -m "$MODEL" --port "$P2"
pid2=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
wait_healthy "$P2" || t_fail "the second never healthy"
t_jq "$T/nvml2.json" "[.processes[] | select(.pid == $pid) | \"\(.device):\(.used_mb)\"] | join(\",\")" "1:500"
t_jq "$T/nvml2.json" "[.processes[] | select(.pid == $pid2) | \"\(.device):\(.used_mb)\"] | join(\",\")" "0:600"
t_end

t_begin "FAKELLM_GPU_MB: twenty concurrent writers lose no entry (flock + rename)"
nvml_state "$T/nvml3.json"
pids=()
for i in $(seq 1 20); do
    fakellm_spawn "w$i" GPUMOD_FAKE_NVML_STATE="$T/nvml3.json" FAKELLM_GPU_MB=$i -- -m "$MODEL" --port "$(free_port)"
    pids+=("$_t_last_pid")
done
all_up() { [ "$(grep -l 'listening on' "$T"/w*.log | wc -l)" -eq 20 ]; }
t_wait 10 all_up || t_fail "not all 20 started"
t_jq "$T/nvml3.json" '[.processes[] | select(.pid != 1)] | length' 20
t_jq "$T/nvml3.json" '[.processes[].used_mb] | add' $((210 + 77))
for p in "${pids[@]}"; do kill -TERM "$p"; done
t_end

t_begin "without GPUMOD_FAKE_NVML_STATE, FAKELLM_GPU_MB is skipped silently"
P=$(free_port)
fakellm_spawn nogpu FAKELLM_GPU_MB=100 -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "never healthy"
t_lacks "$T/nogpu.log" "E "
t_end

t_begin "router mode lists every *.gguf with its status"
mkdir -p "$T/models"
cp "$MODEL" "$T/models/alpha.gguf"; cp "$MODEL" "$T/models/beta.gguf"; touch "$T/models/notes.txt"
P=$(free_port)
fakellm_spawn router FAKELLM_LOAD_MS=300 -- --models-dir "$T/models" --models-max 1 --port "$P" --metrics
wait_healthy "$P" || t_fail "never healthy"
http GET "http://127.0.0.1:$P/models"
t_jq out '[.data[].id] | join(",")' "alpha,beta"
t_jq out '[.data[].status.value] | join(",")' "unloaded,unloaded"
t_jq out '.data[0].path' "$T/models/alpha.gguf"
t_end

t_begin "router mode: a request autoloads its model; --models-max 1 evicts the LRU"
t0=$(now_ms)
http POST "http://127.0.0.1:$P/v1/chat/completions" '{"model":"alpha","messages":[{"role":"user","content":"hi"}]}'
t1=$(now_ms)
t_eq "$(cat "$T/status")" 200 "status"
t_jq out .model alpha
[ $((t1 - t0)) -ge 300 ] || t_fail "answered in $((t1 - t0)) ms, before the model could load"
http GET "http://127.0.0.1:$P/models"
t_jq out '[.data[].status.value] | join(",")' "loaded,unloaded"
http POST "http://127.0.0.1:$P/models/load" '{"model":"beta"}'
t_jq out .success true
t_wait 5 sh -c "curl -s http://127.0.0.1:$P/models | jq -e '.data[1].status.value == \"loaded\"'" ||
    t_fail "beta never loaded"
http GET "http://127.0.0.1:$P/models"
t_jq out '[.data[].status.value] | join(",")' "unloaded,loaded"
t_has "$T/router.log" "models_max limit reached, removing LRU name=alpha"
t_end

t_begin "router mode: unknown model 400, /metrics needs ?model="
http POST "http://127.0.0.1:$P/v1/chat/completions" '{"model":"gamma","messages":[]}'
t_eq "$(cat "$T/status")" 400 "unknown model"
t_jq out .error.message "model 'gamma' not found"
http GET "http://127.0.0.1:$P/metrics"
t_eq "$(cat "$T/status")" 400 "metrics without model"
t_jq out .error.message "model name is missing from the request"
http GET "http://127.0.0.1:$P/metrics?model=beta"
t_eq "$(cat "$T/status")" 200 "metrics with model"
t_end

t_begin "router mode --no-models-autoload refuses an unloaded model"
P=$(free_port)
fakellm_spawn router2 -- --models-dir "$T/models" --no-models-autoload --port "$P"
wait_healthy "$P" || t_fail "never healthy"
http POST "http://127.0.0.1:$P/v1/chat/completions" '{"model":"beta","messages":[{"role":"user","content":"x"}]}'
t_eq "$(cat "$T/status")" 400 "status"
t_jq out .error.message "model 'beta' is not loaded"
t_end

t_begin "every fakellm still running exits 0 on SIGTERM, no sanitizer report"
stop_all_clean
t_end

t_done
