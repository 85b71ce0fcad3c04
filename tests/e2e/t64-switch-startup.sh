#!/usr/bin/env bash
# The start-up mode after kill -9 of the daemon.  The killed engines' GPU
# memory comes back slowly (the fake NVML frees a dead process's memory
# release_delay_ms after it first noticed it gone), so the next daemon
# waits for it (bounded by verify_freed_timeout) before it plans, and
# retries a refused switch with backoff within switch.startup_retry; every
# attempt is an event.  Past startup_retry it gives up and says so.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
nvml() { # RELEASE_DELAY_MS
    printf '{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],\n "processes": [], "release_delay_ms": %s}\n' \
        "$1" >"$T/nvml.json"
}
PA=$(free_port)
printf 'id: big\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\ndevices: [0]\nmemory: {gpu_mb: 16000, host_mb: 16}\nenv:\n  GPUMOD_FAKE_NVML_STATE: %s\n  FAKELLM_GPU_MB: "16000"\n' \
    "$PA" "$FAKELLM_BIN" "$MODEL" "$T/nvml.json" >"$C/presets/big.yaml"
mkdir -p "$C/modes"
printf 'id: A\nservices: [big]\n' >"$C/modes/A.yaml"
mode_is() { [ "$(gpumod mode current --json | jq -r .mode)" = "$1" ]; }
startup_events() { events; jq -c 'select(.kind == "switch.phase" and .data.phase == "startup")' "$T/ev" >"$T/su"; }
has_startup() { startup_events; grep -q "$1" "$T/su"; }

if runner_is systemd; then
    sd_skip "kill -9, then start-up: waits for the memory, retries the refused switch, brings A back" \
        "units outlive the daemon by design (a restarted daemon adopts them)"
    sd_skip "past switch.startup_retry the start-up mode gives up, with an event" "as above"
    t_done
    exit 0
fi

# kill9_and_restart: mode A up (the last committed mode comes back at
# start-up, else a switch), kill -9 of the daemon, a new daemon
kill9_and_restart() {
    daemon_start
    t_wait 20 mode_is A || t_run 0 gpumod mode switch A
    kill -KILL "$DPID"
    reap "$DPID" 5
    daemon_start
}

t_begin "kill -9, then start-up: waits for the memory, retries the refused switch, brings A back"
nvml 4000
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}" "memory: {verify_freed_timeout: 1s}"
daemon_start
t_run 0 gpumod mode switch A
daemon_stop
kill9_and_restart
t_wait 30 mode_is A || t_fail "mode A never came back: $(gpumod mode current --json)"
startup_events
jq -r .reason "$T/su" | sed "s/^/# /"
t_has "$T/su" "start-up: a previous daemon left GPU memory held"
t_has "$T/su" "attempt 1 to bring up mode 'A' failed"
t_has "$T/su" "next attempt in"
t_match "$T/su" "mode 'A' is up \\(attempt [2-9]"
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '.switches[0].origin' startup
t_jq out '.switches[0].outcome' committed
daemon_stop
t_end

t_begin "past switch.startup_retry the start-up mode gives up, with an event"
nvml 600000
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}" "memory: {verify_freed_timeout: 500ms}" \
    "switch: {startup_retry: 2s}"
kill9_and_restart
t_wait 20 has_startup "gave up on mode 'A'" || t_fail "no give-up event: $(cat "$T/su")"
t_has "$T/su" "within switch.startup_retry (2000 ms)"
t_run 0 gpumod mode current --json
t_jq out .mode none
daemon_stop
t_end

t_done
