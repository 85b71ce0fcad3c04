#!/usr/bin/env bash
# Supervisor defects found in review, each as a user sees it: a stop
# arriving while a kill verifies GPU memory completes; a start that joined
# an unhealthy service is answered when its restart is cancelled by a stop
# or by shutdown (and the daemon exits); the reservation of a service that
# exits before its footprint is measured is released; a need that cannot be
# found answers need_unknown; a failed start's log tail keeps its lines and
# loses its secrets; services do not inherit NOTIFY_SOCKET; a preset host
# that is not an address is a config error.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"

# a pid that dies stays listed for ten minutes: the verify of a stop waits
# for it until verify_freed_timeout
cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": [], "release_delay_ms": 600000}
JSON

# health_interval 1s: a probe's deadline is the interval, so a probe slowed
# by a busy machine never makes 'brief' unhealthy; limp, limp2 and held
# fail their probes with answers (status 500)
settings 'supervisor: {stop_timeout: 2s, health_interval: 1s, health_failures: 2}' \
    'memory: {verify_freed_timeout: 3s, nvml_timeout: 10s}'
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port) P6=$(free_port)
# healthy for 3 answers, then 500; ignores SIGTERM (so it stays unhealthy
# for stop_timeout while being killed); restarts only after a minute
preset limp "$P1" 'env: {FAKELLM_HEALTH_FAIL_AFTER: "3", FAKELLM_IGNORE_SIGTERM: "1"}' \
    'restart: {max_restarts: 3, restart_window: 10m, backoff_initial: 60s, backoff_max: 60s}'
# holds fake GPU memory, then its health fails: the kill verifies memory
preset held "$P2" 'env:' "  GPUMOD_FAKE_NVML_STATE: $T/nvml.json" '  FAKELLM_GPU_MB: "8"' \
    '  FAKELLM_HEALTH_FAIL_AFTER: "3"' 'restart: {max_restarts: 0}'
printf 'id: nomodel\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\n' "$P3" "$T/absent.gguf" \
    >"$C/presets/nomodel.yaml"
printf '%s\n' 'id: leaky' 'driver: command' "port: $P4" 'memory: {host_mb: 1}' \
    'command: [sh, -c, "printf \"loading\\nHF_TOKEN=hf_SECRET1\\n--api-key\\tsk-SECRET2\\nAuthorization: Bearer tok_SECRET3\\n\"; printenv NOTIFY_SOCKET || echo notify-unset; exit 3"]' \
    >"$C/presets/leaky.yaml"
preset limp2 "$P5" 'env: {FAKELLM_HEALTH_FAIL_AFTER: "3", FAKELLM_IGNORE_SIGTERM: "1"}' \
    'restart: {max_restarts: 3, restart_window: 10m, backoff_initial: 60s, backoff_max: 60s}'

restart_scheduled() { [ "$(field "$1" .restarts.next_at)" != null ]; }

export NOTIFY_SOCKET=$T/no-such-notify.sock
daemon_start
unset NOTIFY_SOCKET

t_begin "a stop while the kill of an unhealthy service verifies GPU memory completes"
t_run 0 gpumod service start held
pg=$(field held .pgid)
t_wait 20 is_state held unhealthy || t_fail "never unhealthy (state $(state_of held))"
t_wait 10 group_gone "$pg" || t_fail "group $pg not gone"
t_eq "$(state_of held)" unhealthy "state while the memory is verified"
t_run 0 timeout $((30 * S)) gpumod service stop held
t_eq "$(state_of held)" down "state after the stop"
events held
t_has "$T/ev" "after verify_freed_timeout (3000 ms) pid"
t_end

t_begin "a start that joined an unhealthy service: a stop cancelling the restart answers it (409)"
t_run 0 gpumod service start limp
t_wait 20 is_state limp unhealthy || t_fail "never unhealthy (state $(state_of limp))"
t_spawn joiner gpumod service start limp
jp=$_t_last_pid
t_wait 10 restart_scheduled limp || t_fail "no restart scheduled (state $(state_of limp))"
alive "$jp" || t_fail "the joined start ended before the restart was cancelled: $(cat "$T/joiner.log")"
t_run 0 timeout $((10 * S)) gpumod service stop limp
reap "$jp" 10 || t_fail "the joined start was never answered"
t_eq "$rc" 1 "exit code of the joined start"
t_has "$T/joiner.log" "the restart of 'limp' was cancelled by a stop"
t_eq "$(state_of limp)" down "state"
t_end

t_begin "a service exiting before its footprint is measured releases its reservation"
# memory queries take 1.5 s from now on: the footprint waits that long
jq '.call_delay_ms = {"nvmlDeviceGetMemoryInfo_v2": 1500}' "$T/nvml.json" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
preset brief "$P6" 'restart: {max_restarts: 0}'
gpumod reload >/dev/null 2>&1 || kill -HUP "$DPID"
t_wait 10 sh -c "gpumod service show brief --json >/dev/null 2>&1" || t_fail "preset brief not loaded"
t_run 0 gpumod service start brief --no-wait
t_wait 20 is_state brief ready || t_fail "never ready (state $(state_of brief))"
if [ "$(field brief .footprint)" = null ]; then
    kill -KILL "$(field brief .pid)"
    t_wait 20 is_state brief failed || t_fail "not failed after its exit (state $(state_of brief))"
    t_eq "$(field brief .admitted)" null "admitted (the reservation) after the exit"
    t_eq "$(field brief .last_start.outcome)" failed "outcome"
else
    t_diag "measured before the exit could be sent: nothing to check this time"
fi
jq '.call_delay_ms = {}' "$T/nvml.json" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
t_end

t_begin "a need that cannot be found answers need_unknown (exit 2)"
t_run 2 gpumod service start nomodel
t_has err "need"
t_run 2 gpumod service start nomodel --json
t_has out "need_unknown"
t_end

t_begin "a failed start's log tail keeps its lines and loses its secrets; no NOTIFY_SOCKET"
t_run 1 gpumod service start leaky --json
t_jq out '(.last_start.message // .error.message) | test("\nHF_TOKEN=<redacted>\n")' true
t_jq out '(.last_start.message // .error.message) | test("--api-key\t<redacted>")' true
t_jq out '(.last_start.message // .error.message) | test("Authorization: Bearer <redacted>")' true
t_has out "notify-unset"
t_lacks out "no-such-notify"
t_lacks out "SECRET"
gpumod events --json >"$T/allev"
t_lacks "$T/allev" "SECRET"
t_lacks "$T/daemon.log" "SECRET"
t_end

t_begin "shutdown cancelling a restart answers a joined start 503 and the daemon exits"
t_run 0 gpumod service start limp2
t_wait 20 is_state limp2 unhealthy || t_fail "never unhealthy (state $(state_of limp2))"
t_spawn joiner2 gpumod service start limp2
jp=$_t_last_pid
t_wait 10 restart_scheduled limp2 || t_fail "no restart scheduled (state $(state_of limp2))"
daemon_stop
reap "$jp" 10 || t_fail "the joined start was never answered"
t_eq "$rc" 3 "exit code of the joined start (503)"
# the waiting CLI reads the daemon's end of its event stream ("is shutting
# down"), or finds it gone first when an event woke it mid-shutdown
t_match "$T/joiner2.log" "daemon is shutting down while 'limp2' was starting|daemon went away while 'limp2' was starting"
t_end

t_begin "a preset host that is not an address is a config error"
preset badhost "$(free_port)" 'unit_vars: {host: gpu-box.lan}'
t_run 2 gpumod config check
t_match err "badhost.yaml:[0-9]+:[0-9]+: error: preset 'badhost': host 'gpu-box.lan' is not valid: expected a numeric IP address"
t_end
t_done
