#!/usr/bin/env bash
# The memory watchdog through the real daemon, against fakellm and the
# fake NVML: (a) a service that keeps allocating past its admitted need is
# stopped with a `watchdog` event showing the figures, ends down and is
# not restarted; (b) MemAvailable scripted below the floor (an atomically
# rewritten /proc fixture copy) while a slow load runs: that load is
# stopped, ends failed, and the crossing stays visible in the status even
# with nothing left to stop.  Polled under scaled deadlines; no timing
# assertions.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
MIB=1048576

cat >"$T/nvml.json" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": [], "release_delay_ms": 0}
EOF

# A writable copy of the healthy fixture; the daemon's port check reads
# net/tcp under the same root, so net points at the real one.
PROC=$T/proc
cp -r "$FIXTURES/proc/healthy" "$PROC"
rm -f "$PROC/README.md"
ln -s /proc/net "$PROC/net"
# set_mem_available KB: rewrite meminfo atomically (temp file + rename)
set_mem_available() {
    sed -E "s/^MemAvailable: +[0-9]+ kB/MemAvailable:   $1 kB/" "$FIXTURES/proc/healthy/meminfo" >"$PROC/meminfo.new"
    mv "$PROC/meminfo.new" "$PROC/meminfo"
}

P1=$(free_port); P2=$(free_port)
settings 'memory:' \
    '  watchdog: {interval: 50ms, mem_available_floor_mb: 2048, over_need_factor: 1.0, over_need_margin_mb: 256}' \
    'supervisor: {health_interval: 1s, stop_timeout: 2s}'
# grows on the fake GPU from ready on, 200 MiB every 50 ms
preset grow "$P1" 'env:' "  GPUMOD_FAKE_NVML_STATE: $T/nvml.json" '  FAKELLM_GPU_MB: "8"' \
    '  FAKELLM_GPU_GROW_MB: "200"' '  FAKELLM_GPU_GROW_MAX_MB: "100000"' '  FAKELLM_GROW_INTERVAL_MS: "50"'
# loads for ten minutes
preset slow "$P2" 'startup_timeout: 10m' 'env:' "  GPUMOD_FAKE_NVML_STATE: $T/nvml.json" '  FAKELLM_LOAD_MS: "600000"'

export GPUMOD_PROC_ROOT=$PROC
daemon_start

# events_of ID: that service's events as one JSON array in $T/ev.json
events_of() {
    gpumod events --json --service "$1" >"$T/ev.raw" 2>"$T/err" &&
        jq '(if type == "array" then . else .events end)' "$T/ev.raw" >"$T/ev.json"
}
has_event() { events_of "$1" && jq -e "[.[] | select(.kind == \"$2\")] | length > 0" "$T/ev.json"; }
state_is() {
    gpumod service show "$1" --json >"$T/svc.json" 2>/dev/null && jq -e ".state == \"$2\"" "$T/svc.json"
}

t_begin "a service growing past its need is stopped with a watchdog event showing the figures"
t_run 0 gpumod service start grow --no-wait
t_wait 20 has_event grow watchdog || t_fail "no watchdog event for 'grow'"
events_of grow
jq '[.[] | select(.kind == "watchdog")][0]' "$T/ev.json" >"$T/wd.json"
t_jq "$T/wd.json" .service grow
t_jq "$T/wd.json" .data.trigger service.over_need
t_jq "$T/wd.json" '.reason | test("^.grow. uses [0-9]+ MiB > limit [0-9]+ MiB \\(admitted need [0-9]+ MiB x 1 \\+ 256 MiB\\): stopping it$")' true
t_jq "$T/wd.json" '.data.service.id' grow
t_jq "$T/wd.json" '.data.service.used_bytes > .data.service.limit_bytes' true
t_jq "$T/wd.json" '.data.service.gpu_used_bytes > .data.service.need_bytes' true
t_jq "$T/wd.json" '.data.service.limit_bytes == .data.service.need_bytes + 256 * 1048576' true
t_jq "$T/wd.json" '.data.service.host_used_bytes > 0' true
t_jq "$T/wd.json" '.data.floor_bytes' $((2048 * MIB))
t_jq "$T/wd.json" '.data.mem_available_bytes > .data.floor_bytes' true
t_jq "$T/wd.json" '.data.nvml' ok
t_end

t_begin "the stopped service ends down, its group gone, and is not restarted"
t_wait 20 state_is grow down || t_fail "state: $(jq -r .state "$T/svc.json" 2>/dev/null)"
t_jq "$T/svc.json" .pid null
events_of grow
t_jq "$T/ev.json" '[.[] | select(.kind == "spawn")] | length' 1
t_jq "$T/ev.json" '[.[] | select(.kind == "restart")] | length' 0
t_jq "$T/ev.json" '[.[] | select(.kind == "state") | .to] | join(",")' "starting,ready,stopping,down"
t_jq "$T/ev.json" '[.[] | select(.kind == "watchdog")] | length' 1
t_run 0 gpumod status --json
t_jq out '.watchdog.last_action.service' grow
t_jq out '.watchdog.last_action.trigger' service.over_need
t_end

t_begin "MemAvailable below the floor during a slow load: that load is stopped, named by the figures"
t_run 0 gpumod service start slow --no-wait
t_wait 10 state_is slow starting || t_fail "slow never starting"
loading() { grep -q "loading model" "$GPUMOD_STATE_DIR/logs/slow.log"; }
t_wait 10 loading || t_diag "no load line in slow.log (yet)"
set_mem_available 1000000 # 976 MiB < 2048 MiB
t_wait 20 has_event slow watchdog || t_fail "no watchdog event for 'slow'"
events_of slow
jq '[.[] | select(.kind == "watchdog")][0]' "$T/ev.json" >"$T/wd.json"
t_jq "$T/wd.json" .data.trigger host.mem_available
t_jq "$T/wd.json" '.reason | startswith("MemAvailable 976 MiB < floor 2048 MiB: stopping '"'"'slow'"'"' (loading; ")' true
t_jq "$T/wd.json" .data.mem_available_bytes $((1000000 * 1024))
t_jq "$T/wd.json" .data.service.loading true
t_end

t_begin "a load stopped by the watchdog ends failed (sticky), not restarted"
t_wait 20 state_is slow failed || t_fail "state: $(jq -r .state "$T/svc.json" 2>/dev/null)"
events_of slow
t_jq "$T/ev.json" '[.[] | select(.kind == "spawn")] | length' 1
t_jq "$T/ev.json" '[.[] | select(.kind == "restart")] | length' 0
t_end

t_begin "the floor stays crossed with nothing to stop: reported in the status, not silent"
note_set() { gpumod status --json >"$T/st.json" 2>/dev/null && jq -e '.watchdog.note // "" | test("no service can be stopped")' "$T/st.json"; }
t_wait 10 note_set || t_fail "note: $(jq -r .watchdog.note "$T/st.json" 2>/dev/null)"
t_jq "$T/st.json" .watchdog.note "MemAvailable 976 MiB < floor 2048 MiB, but no service can be stopped (none is running)"
t_jq "$T/st.json" .watchdog.mem_available_bytes $((1000000 * 1024))
t_has "$T/daemon.log" "MemAvailable 976 MiB < floor 2048 MiB, but no service can be stopped"
set_mem_available 24346604
note_clear() { gpumod status --json | jq -e '.watchdog.note == null'; }
t_wait 10 note_clear || t_fail "the note never cleared"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end

stop_all_clean
t_done
