#!/usr/bin/env bash
# t31-nvml-cli.sh - the host snapshot through the real binary (`gpumod gpu
# --json`) against the fake NVML and the fake nvidia-smi: figures, unified
# memory, the nvidia-smi fallback, a CPU-only host, a wedged NVML (the
# command answers at its deadline and exits with the NVML thread stuck),
# and a fakellm whose GPU memory is released after it is killed.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
MIB=1048576

# nvml_state EXTRA: one discrete and one unified device; EXTRA adds keys
nvml_state() {
    cat >"$T/nvml.new" <<EOF
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576,
              "reserved_mb": 300, "base_used_mb": 500, "memory": "ok"},
             {"index": 1, "uuid": "GPU-gb10", "name": "NVIDIA GB10", "total_mb": 0,
              "base_used_mb": 0, "memory": "not_supported", "compute_capability": "12.1"}],
 "processes": [], "release_delay_ms": ${RELEASE_MS:-0}${1:-}}
EOF
    mv "$T/nvml.new" "$T/nvml.json" # writers replace by rename
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

t_begin "gpu --json: NVML figures, unified memory from MemAvailable"
nvml_state
t_run 0 gpumod gpu --json
t_jq out .nvml ok
t_jq out .source nvml
t_jq out .nvidia_driver true
t_jq out '.gpus | length' 2
t_jq out .gpus[0].total_bytes $((24576 * MIB))
t_jq out .gpus[0].reserved_bytes $((300 * MIB))
t_jq out .gpus[0].free_bytes $(((24576 - 300 - 500) * MIB))
t_jq out .gpus[1].unified true
t_jq out '.gpus[1].free_bytes == .host.mem_available_bytes' true
t_jq out '.gpus[1].total_bytes == .host.mem_total_bytes' true
t_jq out .gpus[0].compute_capability null
t_jq out .gpus[1].compute_capability 12.1
t_run 0 gpumod gpu
t_has out "NVIDIA GB10  GPU-gb10  00000000:02:00.0  cc 12.1"
t_lacks out "Fake 24GB  GPU-aaaa  00000000:01:00.0  cc"
t_end

t_begin "a wedged NVML: the answer comes at nvml_timeout, nvidia-smi is not tried, the command exits"
printf 'memory:\n  nvml_timeout: 300ms\n' >"$T/config/gpumod.yaml"
nvml_state ', "call_delay_ms": {"nvmlDeviceGetMemoryInfo_v2": 30000}'
t0=$(now_ms)
t_run 0 gpumod gpu --json
took=$(( $(now_ms) - t0 ))
[ "$took" -lt $((300 + 2000 * GPUMOD_TEST_TIME_SCALE)) ] || t_fail "took $took ms"
t_jq out .nvml hung
t_jq out .source none
t_jq out '.gpus | length' 0
t_jq out .gpu_error "nvml: NVML did not answer within 300 ms"
t_jq out '.host.mem_available_bytes > 0' true
t_lacks err "AddressSanitizer"
t_lacks err "LeakSanitizer"
t_run 0 gpumod gpu
t_has out "nvml   hung (GPU figures from none"
rm -f "$T/config/gpumod.yaml"
t_end

t_begin "no NVML library: the figures come from nvidia-smi"
nvml_state
GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 t_run 0 gpumod gpu --json
t_jq out .nvml absent
t_jq out .source nvidia-smi
t_jq out .gpus[1].compute_capability null # nvidia-smi's fields do not carry it
t_jq out .gpus[0].uuid GPU-aaaa
t_jq out .gpus[0].free_bytes $(((24576 - 300 - 500) * MIB))
t_jq out .gpus[1].unified true
t_jq out .gpu_error "nvml: cannot load '/nonexistent/libnvidia-ml.so.1': cannot open shared object file: No such file or directory"
t_end

t_begin "no NVIDIA at all: a CPU-only snapshot that still has the host memory"
GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=/nonexistent/nvidia-smi \
    t_run 0 gpumod gpu --json
t_jq out .nvml absent
t_jq out .source none
t_jq out .nvidia_driver false
t_jq out '.gpus | length' 0
t_jq out '.host.mem_available_bytes > 0' true
GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=/nonexistent/nvidia-smi \
    t_run 0 gpumod gpu
t_has out "gpus   none: a CPU-only host"
t_end

if [ ! -f "$MODEL" ]; then
    t_skip "fakellm's GPU memory is freed release_delay_ms after it dies" "no $MODEL"
else
    t_begin "fakellm's GPU memory shows under its pid, and is freed release_delay_ms after it dies"
    RELEASE_MS=$((500 * GPUMOD_TEST_TIME_SCALE)) nvml_state
    P=$(free_port)
    fakellm_spawn llm FAKELLM_GPU_MB=1000 CUDA_VISIBLE_DEVICES=0 -- -m "$MODEL" --port "$P"
    pid=$_t_last_pid
    listed() { gpumod gpu --json | jq -e --argjson p "$pid" '.gpus[0].processes | map(.pid) | index($p) != null'; }
    t_wait 10 listed || t_fail "pid $pid never listed"
    t_run 0 gpumod gpu --json
    t_jq out ".gpus[0].processes[] | select(.pid == $pid) | .used_bytes" $((1000 * MIB))
    t_jq out .gpus[0].free_bytes $(((24576 - 300 - 500 - 1000) * MIB))
    kill -KILL "$pid"
    reap "$pid" 5
    killed=$(now_ms)
    t_run 0 gpumod gpu --json
    t_jq out .gpus[0].free_bytes $(((24576 - 300 - 500 - 1000) * MIB)) # noticed now: still releasing
    freed() { gpumod gpu --json | jq -e ".gpus[0].free_bytes == $(((24576 - 300 - 500) * MIB))"; }
    t_wait 10 freed || t_fail "the memory was never released"
    took=$(( $(now_ms) - killed ))
    [ "$took" -ge $((500 * GPUMOD_TEST_TIME_SCALE)) ] || t_fail "released after $took ms, before the delay"
    t_run 0 gpumod gpu --json
    t_jq out '.gpus[0].processes | length' 0
    t_end
fi

t_done
