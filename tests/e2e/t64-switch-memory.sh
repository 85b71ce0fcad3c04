#!/usr/bin/env bash
# Mode switching and memory, against the fake NVML (one 24 GiB GPU, 300
# MiB used): a plan that cannot fit is refused with the binding
# constraint and nothing is stopped; memory that comes back slowly after a
# stop (the driver hides per-process figures, so the supervisor's own stop
# check cannot see it, and the fake frees a dead process's memory only
# after release_delay_ms) makes the first start wait in verify-freed, and
# the journal shows that the gate refused on the figures right after the
# stop.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": [], "release_delay_ms": 1500}
JSON
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
PA=$(free_port) PB=$(free_port) PH=$(free_port)
# declared GPU memory, and fakellm holding as much on the fake GPU
gpu_preset() { # ID PORT MIB
    printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\ndevices: [0]\nmemory: {gpu_mb: %s, host_mb: 16}\nenv:\n  GPUMOD_FAKE_NVML_STATE: %s\n  FAKELLM_GPU_MB: "%s"\n' \
        "$1" "$2" "$FAKELLM_BIN" "$MODEL" "$3" "$T/nvml.json" "$3" >"$C/presets/$1.yaml"
}
gpu_preset big_a "$PA" 16000
gpu_preset big_b "$PB" 16000
gpu_preset huge "$PH" 30000
PE=$(free_port) PC=$(free_port)
gpu_preset emb "$PE" 500
gpu_preset big_c "$PC" 16000
mkdir -p "$C/modes"
printf 'id: A\nservices: [big_a]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [big_b]\n' >"$C/modes/B.yaml"
printf 'id: H\nservices: [huge]\n' >"$C/modes/H.yaml"
# big_a kept: big_b alone would fit the GPU, beside big_a it cannot
printf 'id: K\nservices: [big_a, big_b]\n' >"$C/modes/K.yaml"
# two starts: the small one first
printf 'id: E\nservices: [emb, big_c]\n' >"$C/modes/E.yaml"
daemon_start

t_begin "A comes up; its 16000 MiB show on the fake GPU"
t_run 0 gpumod mode switch A
t_run 0 gpumod service show big_a --json
t_jq out '.footprint.gpu_bytes["0"]' $((16000 * 1048576))
t_end

t_begin "a plan that cannot fit is refused with the binding constraint; nothing is stopped"
pid_a=$(field big_a .pid)
t_run 1 gpumod mode switch H
t_has err "mode 'H' does not fit: 'huge' would be refused (gpu.0.free)"
t_has err "nothing was stopped"
t_run 1 gpumod mode switch H --json
t_jq out .error.code gate_refused
t_jq out .error.detail.binding gpu.0.free
t_jq out .error.detail.service huge
t_jq out '.error.detail.plan.stops | join(",")' big_a
t_eq "$(field big_a .pid)" "$pid_a" "big_a's pid"
t_eq "$(state_of big_a)" ready "big_a"
t_run 0 gpumod mode switch H --dry-run
t_match out "start +huge +REFUSED"
t_has out "gpu.0.free"
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].outcome' refused
t_jq out '[.switches[0].phases[].phase] | join(",")' plan
t_end

t_begin "a plan that cannot fit because of what it keeps: refused on the kept service's memory"
t_run 1 gpumod mode switch K --json
t_jq out .error.code gate_refused
t_jq out .error.detail.service big_b
t_jq out .error.detail.binding gpu.0.free
t_jq out '.error.detail.plan.keeps | join(",")' big_a
t_jq out '.error.detail.plan.stops | length' 0
t_eq "$(field big_a .pid)" "$pid_a" "big_a's pid"
t_end

t_begin "slow memory release: the first start waits for it in verify-freed"
# from now on the driver hides per-process figures (as in a container):
# the supervisor's stop sees no pid holding memory, but the device's free
# memory comes back only release_delay_ms after the process died
jq '. + {"return": {"nvmlDeviceGetComputeRunningProcesses_v3": 4, "nvmlDeviceGetComputeRunningProcesses_v2": 4, "nvmlDeviceGetComputeRunningProcesses": 4}}' \
    "$T/nvml.json" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
t_run 0 gpumod mode switch B --json
t_jq out .outcome committed
t_jq out '[.phases[] | .phase] | join(",")' "plan,drain,stop,verify-freed,start,verify-healthy,commit"
vf='.phases[] | select(.phase == "verify-freed")'
t_jq out "$vf | .service" big_b
t_jq out "$vf | .ok" true
# right after the stop the gate refused on the real figures: without the wait the start would not fit
t_jq out "$vf | .detail.first.ok" false
t_jq out "$vf | .detail.first.binding" gpu.0.free
t_jq out "$vf | .detail.polls > 1" true
t_diag "verify-freed waited $(jq -r "$vf | .detail.waited_ms" "$T/out") ms over $(jq -r "$vf | .detail.polls" "$T/out") polls (release_delay_ms 1500)"
t_eq "$(state_of big_b)" ready "big_b"
t_run 0 gpumod mode switch B --json
t_end

t_begin "verify-freed judges every start: a small first start does not let the big second one in early"
# back to A with per-process figures shown (big_a's footprint measured), then hidden again; through
# none, since big_b's footprint, measured while they were hidden, shows nothing on the GPU
t_run 0 gpumod mode switch none
jq 'del(.return)' "$T/nvml.json" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
a_fits() { gpumod mode switch A --dry-run --json | jq -e .ok >/dev/null; }
t_wait 10 a_fits || t_fail "A never fits after big_b's memory came back"
t_run 0 gpumod mode switch A
jq '. + {"return": {"nvmlDeviceGetComputeRunningProcesses_v3": 4, "nvmlDeviceGetComputeRunningProcesses_v2": 4, "nvmlDeviceGetComputeRunningProcesses": 4}}' \
    "$T/nvml.json" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
# emb (500 MiB) would fit at once; big_c (16000 MiB) only once big_a's memory is back
t_run 0 gpumod mode switch E --json
t_jq out .outcome committed
t_jq out '[.phases[] | .phase + ":" + (.service // "-")] | join(" ")' \
    "plan:- drain:- stop:big_a verify-freed:emb start:emb start:big_c verify-healthy:- commit:-"
t_jq out "$vf | .detail.starts" 2
t_jq out "$vf | .detail.first.ok" false
t_jq out "$vf | .detail.polls > 1" true
t_eq "$(state_of emb),$(state_of big_c)" "ready,ready" "E's services"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
