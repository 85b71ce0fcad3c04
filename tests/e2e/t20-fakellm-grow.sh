#!/usr/bin/env bash
# fakellm's growth knobs (for the memory watchdog's tests): the fake NVML
# entry and the real RSS grow step by step up to their caps, after the
# load by default, during it with FAKELLM_GROW_FROM=load.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf

nvml_state() {
    cat >"$1" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": [], "release_delay_ms": 0}
EOF
}
# gpu_mb FILE PID: the pid's used_mb on device 0
gpu_mb() { jq -r "[.processes[] | select(.pid == $2) | .used_mb] | add // 0" "$1"; }
gpu_at_least() { [ "$(gpu_mb "$1" "$2")" -ge "$3" ]; }
rss_at_least() { [ "$(rss_mb "$1")" -ge "$2" ]; }

t_begin "FAKELLM_GPU_GROW_MB: the NVML entry stays at FAKELLM_GPU_MB while loading, then grows to the cap"
nvml_state "$T/nvml.json"
P=$(free_port)
fakellm_spawn g GPUMOD_FAKE_NVML_STATE="$T/nvml.json" FAKELLM_GPU_MB=100 FAKELLM_GPU_GROW_MB=50 \
    FAKELLM_GPU_GROW_MAX_MB=200 FAKELLM_GROW_INTERVAL_MS=20 FAKELLM_LOAD_MS=1500 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
t_wait 5 gpu_at_least "$T/nvml.json" "$pid" 1 || t_fail "no NVML entry at the load's start"
during=$(gpu_mb "$T/nvml.json" "$pid")
http GET "http://127.0.0.1:$P/health"
# the entry was read before this 503: it is the loading figure
[ "$(cat "$T/status")" = 503 ] && t_eq "$during" 100 "used_mb while loading"
wait_healthy "$P" || t_fail "never healthy"
t_wait 10 gpu_at_least "$T/nvml.json" "$pid" 300 || t_fail "used_mb never reached 100 + 200: $(gpu_mb "$T/nvml.json" "$pid")"
t_wait 10 grep -q "allocated 200 MiB more on the GPU" "$T/g.log" || t_fail "no growth line at the cap"
t_eq "$(gpu_mb "$T/nvml.json" "$pid")" 300 "used_mb at the cap"
t_eq "$(grep -c 'allocated .* MiB more' "$T/g.log")" 4 "growth lines (4 steps of 50 MiB, then none)"
t_has "$T/g.log" "I srv          grow: allocated 50 MiB more on the GPU and 0 MiB more on the host so far"
t_end

t_begin "FAKELLM_RAM_GROW_MB: real RSS grows after the load, capped by FAKELLM_RAM_GROW_MAX_MB"
P=$(free_port)
fakellm_spawn r FAKELLM_RAM_MB=50 FAKELLM_RAM_GROW_MB=40 FAKELLM_RAM_GROW_MAX_MB=200 FAKELLM_GROW_INTERVAL_MS=20 \
    -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
wait_healthy "$P" || t_fail "never healthy"
t_wait 10 rss_at_least "$pid" 250 || t_fail "VmRSS never reached 50 + 200 MiB: $(rss_mb "$pid") MiB"
t_wait 10 grep -q "0 MiB more on the GPU and 200 MiB more on the host" "$T/r.log" || t_fail "no growth line at the cap"
r=$(rss_mb "$pid")
[ "$r" -le 400 ] || t_fail "VmRSS $r MiB, far above the cap of 50 + 200"
t_end

t_begin "FAKELLM_GROW_FROM=load: growth begins while the model loads"
nvml_state "$T/nvml2.json"
P=$(free_port)
fakellm_spawn gl GPUMOD_FAKE_NVML_STATE="$T/nvml2.json" FAKELLM_GPU_MB=100 FAKELLM_GPU_GROW_MB=100 \
    FAKELLM_GROW_FROM=load FAKELLM_GROW_INTERVAL_MS=20 FAKELLM_LOAD_MS=60000 -- -m "$MODEL" --port "$P"
pid=$_t_last_pid
t_wait 10 gpu_at_least "$T/nvml2.json" "$pid" 500 || t_fail "used_mb never grew during the load"
http GET "http://127.0.0.1:$P/health"
t_eq "$(cat "$T/status")" 503 "still loading"
t_lacks "$T/gl.log" "model loaded"
t_end

t_begin "growth knobs: bad values are warned about and count as defaults"
P=$(free_port)
fakellm_spawn bad FAKELLM_GROW_FROM=later FAKELLM_RAM_GROW_MB=-5 -- -m "$MODEL" --port "$P"
wait_healthy "$P" || t_fail "never healthy"
t_has "$T/bad.log" "warning: ignoring FAKELLM_GROW_FROM='later': not load or ready"
t_has "$T/bad.log" "warning: negative FAKELLM_*_GROW_* sizes count as 0"
t_end

stop_all_clean
t_done
