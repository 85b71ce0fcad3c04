#!/usr/bin/env bash
# Footprints where NVML gives no per-process figure (docs/memory.md
# "Footprints"): (a) a unified device (GB10: the fake NVML's memory
# "not_supported", no process entries): the footprint's GPU figure is the
# drop in MemAvailable from admission to ready (scripted here in a
# writable /proc fixture copy while the service loads) minus the group's
# RSS, recorded as "unified", and the next start's gate uses it (need
# source "measured"); (b) a discrete GPU whose per-process figure is
# hidden (a process entry without used_mb: NOT_AVAILABLE): the footprint
# falls back to the admitted bytes and is marked partial, and the next
# start's need says "measured (host) + admitted (gpu 0)".  Polled under
# scaled deadlines; no timing assertions.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
MIB=1048576

# A writable copy of a fixture; the daemon's port check reads net/tcp under
# the same root, so net points at the real one.
PROC=$T/proc
cp -r "$FIXTURES/proc/healthy" "$PROC"
rm -f "$PROC/README.md"
ln -s /proc/net "$PROC/net"
# set_avail MIB: MemAvailable (MemTotal 128 GiB), rewritten atomically (temp file + rename)
set_avail() {
    awk -v a=$(($1 * 1024)) '/^MemTotal:/ {print "MemTotal:       134217728 kB"; next}
        /^MemAvailable:/ {printf "MemAvailable:   %d kB\n", a; next} {print}' "$FIXTURES/proc/healthy/meminfo" \
        >"$PROC/meminfo.new" && mv "$PROC/meminfo.new" "$PROC/meminfo"
}
set_avail 60000
export GPUMOD_PROC_ROOT=$PROC

# nvml_state MEMORY [PROCESS_JSON]: one device, "ok" (discrete, 24 GiB) or "not_supported" (unified)
nvml_state() {
    local total=24576
    [ "$1" = not_supported ] && total=0
    printf '{"devices": [{"index": 0, "uuid": "GPU-cccc", "name": "Fake", "total_mb": %s, "base_used_mb": 0, "memory": "%s"}],\n "processes": [%s], "release_delay_ms": 0}\n' \
        "$total" "$1" "${2:-}" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
}
nvml_state not_supported

P1=$(free_port)
settings 'supervisor: {health_interval: 1s, stop_timeout: 2s}'
# loads for 4 s (scaled): long enough to lower MemAvailable under it
preset uma "$P1" 'devices: [0]' 'env:' "  GPUMOD_FAKE_NVML_STATE: $T/nvml.json" \
    "  FAKELLM_LOAD_MS: \"$((4000 * S))\""
daemon_start

# evj KIND SERVICE N: the Nth (1-based; -1 the last) event of that kind as JSON in $T/e.json
evj() {
    gpumod events --json --service "$2" | jq "[.events[] | select(.kind == \"$1\")] | .[$3]" >"$T/e.json"
}
has_kind() { [ "$(count "$1" "$2")" -ge "${3:-1}" ]; }

t_begin "unified: the footprint's GPU figure is the MemAvailable drop during the load, minus RSS"
t_run 0 gpumod service start uma --no-wait
t_wait 20 has_kind spawn uma || t_fail "no spawn event"
# the engine takes 3000 MiB of the shared pool while it loads
set_avail 57000
t_wait 30 is_state uma ready || t_fail "uma: $(state_of uma)"
t_wait 10 has_kind footprint uma || t_fail "no footprint event"
evj footprint uma 0
t_jq "$T/e.json" '.data.gpu_how["0"]' unified
t_jq "$T/e.json" '.data.partial' false
t_jq "$T/e.json" '.data.host_bytes > 0' true
# the drop is 3000 MiB; the RSS counted as host is not counted again
t_jq "$T/e.json" '.data.gpu_bytes["0"] + .data.host_bytes' $((3000 * MIB))
t_jq "$T/e.json" '.data.admission_mem_available_bytes' $((60000 * MIB))
t_jq "$T/e.json" '.data.ready_mem_available_bytes' $((57000 * MIB))
t_jq "$T/e.json" '.reason | test("^measured [0-9]+ MiB host over [0-9]+ process\\(es\\), gpu 0 [0-9]+ MiB \\(unified: MemAvailable delta: 60000 MiB at admission - 57000 MiB at ready - [0-9]+ MiB RSS\\)$")' true
GPU1=$(jq -r '.data.gpu_bytes["0"]' "$T/e.json")
HOST1=$(jq -r '.data.host_bytes' "$T/e.json")
gpumod service show uma --json >"$T/show.json"
t_jq "$T/show.json" '.footprint.gpu_bytes["0"]' "$GPU1"
t_jq "$T/show.json" '.footprint.gpu_how["0"]' unified
t_jq "$T/show.json" '.footprint.detail | test("unified: MemAvailable delta")' true
t_end

t_begin "unified: the next start's gate uses the measured footprint"
t_run 0 gpumod service stop uma
set_avail 60000
t_run 0 gpumod service start uma --no-wait
t_wait 20 has_kind gate uma 2 || t_fail "no second gate event"
evj gate uma 1
t_jq "$T/e.json" '.data.ok' true
t_jq "$T/e.json" '.data.need.source' measured
t_jq "$T/e.json" '.data.need.gpu_bytes["0"]' "$GPU1"
t_jq "$T/e.json" '.data.need.host_bytes' "$HOST1"
t_jq "$T/e.json" '.data.need.detail | test("gpu 0: unified: MemAvailable delta")' true
t_wait 30 is_state uma ready || t_fail "uma: $(state_of uma)"
t_run 0 gpumod service stop uma
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end

# (b) a discrete GPU that hides per-process figures
nvml_state ok
P2=$(free_port)
preset hid "$P2" 'devices: [0]' 'env:' "  GPUMOD_FAKE_NVML_STATE: $T/nvml.json" \
    "  FAKELLM_LOAD_MS: \"$((4000 * S))\""
daemon_start

t_begin "discrete, per-process figures hidden: the footprint falls back to the admitted bytes (partial)"
t_run 0 gpumod service start hid --no-wait
t_wait 20 has_kind spawn hid || t_fail "no spawn event"
evj gate hid 0
ADM=$(jq -r '.data.need.gpu_bytes["0"]' "$T/e.json")
t_jq "$T/e.json" '.data.need.source' estimate
pid_of() { P=$(field hid .pid) && [ "$P" != null ] && [ -n "$P" ]; }
t_wait 10 pid_of || t_fail "no pid for hid"
# NVML lists the engine on GPU 0 without a figure (NOT_AVAILABLE)
nvml_state ok "{\"pid\": $P, \"device\": 0}"
t_wait 30 is_state hid ready || t_fail "hid: $(state_of hid)"
t_wait 10 has_kind footprint hid || t_fail "no footprint event"
evj footprint hid 0
t_jq "$T/e.json" '.data.gpu_how["0"]' admitted
t_jq "$T/e.json" '.data.partial' true
t_jq "$T/e.json" '.data.gpu_bytes["0"]' "$ADM"
t_jq "$T/e.json" '.reason | test("gpu 0 [0-9]+ MiB \\(admitted: no per-process figure\\) \\(partial\\)$")' true
gpumod service show hid --json >"$T/show.json"
t_jq "$T/show.json" '.footprint.partial' true
t_end

t_begin "discrete, partial: the next start's need says which figures were measured"
t_run 0 gpumod service stop hid
nvml_state ok
t_run 0 gpumod service start hid --no-wait
t_wait 20 has_kind gate hid 2 || t_fail "no second gate event"
evj gate hid 1
t_jq "$T/e.json" '.data.need.source' measured
t_jq "$T/e.json" '.data.need.gpu_bytes["0"]' "$ADM"
t_jq "$T/e.json" '.data.need.detail | startswith("measured (host) + admitted (gpu 0) after a start of '"'"'hid'"'"'")' true
t_wait 30 is_state hid ready || t_fail "hid: $(state_of hid)"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
