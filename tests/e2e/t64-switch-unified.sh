#!/usr/bin/env bash
# Verify-freed on unified memory (a GB10: NVML has no framebuffer figures,
# the device's free memory is MemAvailable): after the stop, the first
# start waits until MemAvailable is back (written into a /proc fixture
# here, the way a kernel returns it: late), and the journal shows the
# gate refused on unified.0.mem_available right after the stop.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
mkdir -p "$T/proc"
cp -r "$FIXTURES/proc/healthy/." "$T/proc/"
export GPUMOD_PROC_ROOT=$T/proc
. "$(dirname "$0")/sup-lib.sh"
cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-bbbb", "name": "NVIDIA GB10", "total_mb": 0, "base_used_mb": 0, "memory": "not_supported"}],
 "processes": [], "release_delay_ms": 0}
JSON
# avail GIB: MemAvailable (MemTotal 128 GiB), replaced by rename as a reader expects
avail() {
    awk -v a=$(($1 * 1048576)) '/^MemTotal:/ {print "MemTotal:       134217728 kB"; next}
        /^MemAvailable:/ {printf "MemAvailable:   %d kB\n", a; next} {print}' "$T/proc/meminfo" >"$T/meminfo.new" &&
        mv "$T/meminfo.new" "$T/proc/meminfo"
}
avail 60
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}" "memory: {verify_freed_timeout: 30s}"
PA=$(free_port) PB=$(free_port)
uma_preset() { # ID PORT
    printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\ndevices: [0]\nmemory: {gpu_mb: 40000, host_mb: 16}\n' \
        "$1" "$2" "$FAKELLM_BIN" "$MODEL" >"$C/presets/$1.yaml"
}
uma_preset ua "$PA"
uma_preset ub "$PB"
PC=$(free_port)
uma_preset uc "$PC" # never run: its need is the declared one (a footprint measured here shows no GPU bytes)
mkdir -p "$C/modes"
printf 'id: A\nservices: [ua]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [ub]\n' >"$C/modes/B.yaml"
printf 'id: C\nservices: [uc]\n' >"$C/modes/C.yaml"
daemon_start

t_begin "A comes up on the unified device"
t_run 0 gpumod mode switch A
t_eq "$(state_of ua)" ready "ua"
avail 20 # ua's 40000 MiB are in use now
t_end

t_begin "MemAvailable comes back late after the stop: the first start waits for it"
# once ua is down, MemAvailable returns a little later
( t_wait 20 is_state ua down && sleep 1 && avail 60 ) >/dev/null 2>&1 &
bg=$!
t_run 0 gpumod mode switch B --json
wait "$bg"
t_jq out .outcome committed
vf='.phases[] | select(.phase == "verify-freed")'
t_jq out "$vf | .service" ub
t_jq out "$vf | .ok" true
t_jq out "$vf | .detail.first.ok" false
t_jq out "$vf | .detail.first.binding" unified.0.mem_available
t_jq out "$vf | .detail.polls > 1" true
t_eq "$(state_of ub)" ready "ub"
t_end

t_begin "kill -9 mid-verify-freed: reported, the last committed mode comes back"
avail 20 # ub holds its part; after its stop MemAvailable does not come back this time
mode_is() { [ "$(gpumod mode current --json | jq -r .mode)" = "$1" ]; }
in_vf() { [ "$(gpumod mode current --json | jq -r .switching.phase)" = verify-freed ]; }
t_spawn sw "$GPUMOD_BIN" mode switch C
swpid=$_t_last_pid
t_wait 20 in_vf || t_fail "the switch never waited in verify-freed: $(gpumod mode current --json)"
kill -KILL "$DPID"
reap "$DPID" 5
reap "$swpid" 5
t_eq "$rc" 3 "the client's exit code when the daemon died under it"
avail 60
daemon_start
t_wait 20 mode_is B || t_fail "mode B never came back: $(gpumod mode current --json)"
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=2'"
t_jq out '.switches[1].to' C
t_jq out '.switches[1].outcome' interrupted
t_jq out '.switches[1].error | test("at phase .verify-freed uc.")' true
t_jq out '.switches[0].outcome' committed
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
