#!/usr/bin/env bash
# Residency tiers through the daemon (gpumod service sleep, POST
# /services/ID/sleep, a start that wakes): fakellm plays vLLM with the fake
# NVML.  l1: the engine's GPU entries go, the service is "sleeping (l1)"
# with its measured asleep holdings, a start wakes it (woke, the wake time
# stored, the entries back); l2 the same; an engine without the sleep
# endpoints (404) is stopped instead and says so, and so is one that never
# confirms; a wake that fails falls back to a stop and a cold start; the
# tier stop (sleep_mode none) stops; the gate refuses an l1 sleep whose
# weights cannot fit in host RAM (stopped instead); on a unified host sleep
# is off unless memory.unified_sleep.
. "$(dirname "$0")/lib.sh"
fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

SOCK=$GPUMOD_SOCKET
printf 'drivers:\n  llamacpp: {binary: fakellm}\n  vllm: {binary: fakellm}\nrouter: {enabled: false}\n%s\n' \
    "supervisor: {stop_timeout: 2s, health_interval: 1s}" >"$C/gpumod.yaml"
# vpreset ID SLEEP_MODE [ENV_YAML]: a vLLM preset played by fakellm
vpreset() {
    printf 'id: %s\ndriver: vllm\nport: %s\nmodel_id: org/%s-7b\ncontext_size: 128\nsleep_mode: %s\nmemory: {host_mb: 16, gpu_mb: 2000}\nenv: {FAKELLM_GPU_MB: "2000", FAKELLM_WEIGHTS_MB: "64"%s}\n' \
        "$1" "$(free_port)" "$1" "$2" "${3:+, $3}" >"$C/presets/$1.yaml"
}
vpreset a l1
vpreset b l2
vpreset nodev l1 'VLLM_SERVER_DEV_MODE: "0"'
vpreset stuck l1 'FAKELLM_SLEEP_STUCK: "1"'
vpreset wfail l1 'FAKELLM_WAKE_FAIL: "1"'
vpreset nosl none
mkdir -p "$T/models"
ln -s "$MODEL" "$T/models/aidreams260K-f32.gguf"
printf 'id: rt\ndriver: llamacpp\nport: %s\nsleep_mode: router\nmemory: {host_mb: 100}\nenv: {FAKELLM_MODEL_GPU_MB: "700"}\nunit_vars: {models_dir: %s, default_model: aidreams260K-f32}\n' \
    "$(free_port)" "$T/models" >"$C/presets/rt.yaml"
# gpu_mb: the GPU entries of a service's pid in the fake NVML
gpu_mb() { jq --argjson p "$(gpumod service show "$1" --json | jq .pid)" '[.processes[] | select(.pid == $p) | .used_mb] | add // 0' "$T/nvml.json"; }
sleep_api() {
    curl -s -S --max-time $((30 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' -X POST \
        "http://gpumod/services/$1/sleep" >"$T/status" 2>"$T/err"
}
daemon_start

t_begin "l1: sleep, the state sleeping (l1), GPU entries gone, the asleep figures measured; start wakes it"
t_run 0 gpumod service start a
t_eq "$(gpu_mb a)" 2000 "awake: 2000 MiB on the GPU"
t_run 0 gpumod service sleep a
t_has out "'a' is asleep (l1"
t_eq "$(state_of a)" sleeping "state"
t_eq "$(gpu_mb a)" 0 "asleep: nothing on the GPU"
gpumod service show a --json >"$T/show"
t_jq "$T/show" .tier l1
t_jq "$T/show" .asleep.tier l1
t_jq "$T/show" .asleep.measured true
t_run 0 gpumod status
t_has out "sleeping (l1)"
t_eq "$(count sleep a)" 1 "one sleep event"
t_run 0 gpumod service sleep a
t_has out "'a' is asleep (l1"
t_run 0 gpumod service start a
t_has out "'a' woke (l1) in"
t_eq "$(state_of a)" ready "state after the wake"
t_eq "$(gpu_mb a)" 2000 "awake again: 2000 MiB"
gpumod service show a --json >"$T/show"
t_jq "$T/show" .last_start.woke true
t_jq "$T/show" '.wake_ms >= 0' true
t_jq "$T/show" .asleep null
# the gate judged the wake's delta; what it holds awake (the watchdog's need) is the full need again
t_jq "$T/show" '.admitted | [.host_bytes, .gpu_bytes["0"]] | map(. / 1048576 | floor | tostring) | join(",")' "16,2000"
t_run 0 sh -c "curl -s --unix-socket '$SOCK' http://gpumod/status"
t_jq out '.watchdog.services[] | select(.id == "a") | .need_bytes / 1048576 | floor' 2016
t_eq "$(count wake a)" 1 "one wake event"
t_jq "$T/ev" "select(.kind == \"wake\") | .data.fell_back" false
t_end

t_begin "l1: a sleep right after a wake is confirmed (a second sleep, a second wake)"
t_run 0 gpumod service sleep a
t_has out "'a' is asleep (l1"
t_eq "$(state_of a)" sleeping "state after the second sleep"
t_eq "$(gpu_mb a)" 0 "asleep again: nothing on the GPU"
t_run 0 gpumod service start a
t_has out "'a' woke (l1) in"
t_eq "$(gpu_mb a)" 2000 "awake again: 2000 MiB"
t_run 0 gpumod service stop a
t_end

t_begin "l2: sleep and wake (tags, reload_weights)"
t_run 0 gpumod service start b
t_eq "$(sleep_api b; cat "$T/status")" 200 "POST sleep"
t_jq out .slept true
t_jq out .tier l2
t_eq "$(state_of b)" sleeping "state"
t_eq "$(gpu_mb b)" 0 "asleep: nothing on the GPU"
t_run 0 gpumod service start b
t_has out "'b' woke (l2)"
t_eq "$(gpu_mb b)" 2000 "awake"
t_run 0 gpumod service stop b
t_end

t_begin "an engine without the sleep endpoints (404): stopped instead, and it says so"
t_run 0 gpumod service start nodev
t_run 0 gpumod service sleep nodev
t_has out "'nodev' stopped: the engine does not support sleep (POST /sleep?level=1: 404); stopped instead"
t_eq "$(state_of nodev)" down "state"
t_eq "$(sleep_api nodev; cat "$T/status")" 200 "sleep of a down service"
t_jq out .slept false
t_end

t_begin "a sleep never confirmed: stopped instead"
t_run 0 gpumod service start stuck
t_run 0 gpumod service sleep stuck
t_has out "the engine did not confirm the sleep (GET /is_sleeping: false after"
t_eq "$(state_of stuck)" down "state"
events stuck
t_jq "$T/ev" "select(.kind == \"sleep\") | .data.fell_back" true
t_end

t_begin "a stop while it goes to sleep: the sleep ends as that stop (fell_back), not at the confirmation's deadline"
t_run 0 gpumod service start stuck
# the log ring keeps the case before's lines: wait for one more acknowledgement than it holds now
acks() { gpumod service logs stuck -n 100000 2>/dev/null | grep -c 'FAKELLM_SLEEP_STUCK: sleep level 1 acknowledged'; }
ack0=$(acks)
curl -s -S --max-time $((30 * S)) --unix-socket "$SOCK" -o "$T/zz" -w '%{http_code}' -X POST \
    "http://gpumod/services/stuck/sleep" >"$T/zz.status" 2>"$T/zz.err" &
zpid=$!
more_acks() { [ "$(acks)" -gt "$ack0" ]; }
t_wait 10 more_acks ||
    t_fail "the sleep never reached the engine"
t_run 0 gpumod service stop stuck
wait "$zpid"
t_eq "$(cat "$T/zz.status")" 200 "POST sleep"
t_jq "$T/zz" .slept false
t_jq "$T/zz" .fell_back true
t_jq "$T/zz" .message "'stuck' was stopped while it went to sleep"
t_eq "$(state_of stuck)" down "state"
events stuck
t_eq "$(jq -s '[.[] | select(.kind == "sleep")] | last | [.data.fell_back, .data.why, .data.ms < 10000] | map(tostring) | join(",")' -r "$T/ev")" \
    "true,'stuck' was stopped while it went to sleep,true" "the sleep event (ended before the 10 s deadline)"
t_end

t_begin "sleep_mode none: the sleep stops it"
t_run 0 gpumod service start nosl
t_run 0 gpumod service sleep nosl
t_has out "'nosl' stopped: its tier is stop (sleep_mode none): stopped"
t_eq "$(state_of nosl)" down "state"
t_end

t_begin "a wake that fails falls back to a stop and a cold start"
t_run 0 gpumod service start wfail
t_run 0 gpumod service sleep wfail
t_has out "asleep (l1"
old=$(gpumod service show wfail --json | jq .pid)
t_run 0 gpumod service start wfail
t_has out "the wake failed: stopped and started cold"
t_eq "$(state_of wfail)" ready "state"
t_jq "$(gpumod service show wfail --json >"$T/show"; echo "$T/show")" .last_start.fell_back true
[ "$(jq .pid "$T/show")" != "$old" ] || t_fail "the same process: not a cold start"
events wfail
t_jq "$T/ev" "select(.kind == \"wake\") | .data.fell_back" true
t_run 0 gpumod service stop wfail
t_end

t_begin "router mode: the sleep unloads every model, a start loads the default model again"
t_run 0 gpumod service start rt
port=$(gpumod service show rt --json | jq .port)
curl -s -X POST -H 'Content-Type: application/json' -d '{"model":"aidreams260K-f32"}' "http://127.0.0.1:$port/models/load" >/dev/null
t_wait 10 sh -c "curl -s http://127.0.0.1:$port/models | jq -e '.data[] | select(.status.value == \"loaded\")' >/dev/null"
t_run 0 gpumod service sleep rt
t_has out "'rt' is asleep (router"
t_eq "$(state_of rt)" sleeping "state"
t_eq "$(curl -s "http://127.0.0.1:$port/models" | jq '[.data[] | select(.status.value == "loaded")] | length')" 0 "no model loaded"
t_run 0 gpumod service start rt
t_has out "'rt' woke (router)"
t_eq "$(curl -s "http://127.0.0.1:$port/models" | jq -r '.data[] | select(.status.value == "loaded") | .id')" aidreams260K-f32 "the default model loaded"
t_run 0 gpumod service stop rt
t_end

t_begin "conflicts and unknowns"
t_eq "$(sleep_api nosuch; cat "$T/status")" 404 "unknown service"
t_end

# a /proc root of our own (healthy now, short of memory later) for the gate and the watchdog
daemon_stop
mkdir -p "$T/proc"
cp -r "$FIXTURES/proc/healthy/." "$T/proc/"
export GPUMOD_PROC_ROOT=$T/proc
short() { sed -i 's/^MemAvailable:.*/MemAvailable:       1024 kB/' "$T/proc/meminfo"; }
healthy() { cp -r "$FIXTURES/proc/healthy/." "$T/proc/"; }
printf 'memory: {watchdog: {mem_available_floor_mb: 0}}\n' >>"$C/gpumod.yaml"
daemon_start

t_begin "the gate refuses an l1 sleep (no host RAM for the weights): stopped instead, and it says so"
t_run 0 gpumod service start a
short
t_run 0 gpumod service sleep a
t_has out "'a' stopped: sleep refused by the gate: "
t_has out "; stopped instead"
healthy
t_run 0 gpumod service start a
short
t_eq "$(sleep_api a; cat "$T/status")" 200 "POST sleep"
t_jq out .slept false
t_jq out .fell_back true
t_jq out .tier stop
t_jq out '.message | test("^sleep refused by the gate: .*; stopped instead$")' true
t_eq "$(state_of a)" down "state"
events a
t_eq "$(jq -s '[.[] | select(.kind == "sleep")] | last | .data.fell_back' "$T/ev")" true "the sleep event: fell_back"
t_eq "$(jq -s '[.[] | select(.kind == "sleep")] | last | .data.why | test("^sleep refused by the gate")' "$T/ev")" true \
    "the sleep event: why"
healthy
t_end

t_begin "the watchdog sees a sleeper (state sleeping, its asleep figures) and stops it first"
t_run 0 gpumod service start a
t_run 0 gpumod service start b
t_run 0 gpumod service sleep a
t_has out "'a' is asleep (l1"
t_wait 10 sh -c "[ \"\$(curl -s --unix-socket '$SOCK' http://gpumod/status | jq -r '.watchdog.services[] | select(.id == \"a\") | .state')\" = sleeping ]" ||
    t_fail "the watchdog does not list a as sleeping"
t_run 0 sh -c "curl -s --unix-socket '$SOCK' http://gpumod/status"
t_jq out '.watchdog.services[] | select(.id == "a") | .need_bytes' \
    "$(gpumod service show a --json | jq '.asleep.held | .host_bytes + ([.gpu_bytes[]] | add // 0)')"
sed -i 's/mem_available_floor_mb: 0/mem_available_floor_mb: 2048/' "$C/gpumod.yaml"
t_run 0 gpumod reload
short
t_wait 10 sh -c '[ "$(gpumod service show a --json | jq -r .state)" = down ]' || t_fail "a (asleep) was not stopped"
healthy
# the order is the point: while the fixture stays short the watchdog may go on to b (a slow,
# sanitised build sees more of its intervals), but its first victim is the sleeper
t_eq "$(gpumod events --json --kind watchdog | jq -r '[.events[] | select(.service != null)] | first | .service')" \
    a "the watchdog's first victim"
events a
t_eq "$(jq -s '[.[] | select(.kind == "watchdog")] | last | .reason | test("stopping .a. \\(asleep: it serves nothing")' "$T/ev")" \
    true "the watchdog's reason"
t_run 0 gpumod service stop b
t_end
sed -i '/^memory: {watchdog/d' "$C/gpumod.yaml"
t_run 0 gpumod reload

# a unified host: sleep off by default (stops), on with memory.unified_sleep
jq '.devices[0].memory = "not_supported"' "$T/nvml.json" >"$T/nvml.new" && mv "$T/nvml.new" "$T/nvml.json"
t_begin "unified memory: an l1 service stops by default"
t_run 0 gpumod service start a
t_run 0 gpumod service sleep a
t_has out "'a' stopped: sleep is off on a unified-memory host (memory.unified_sleep: false): stopped"
t_eq "$(state_of a)" down "state"
t_end

t_begin "unified memory with memory.unified_sleep: it sleeps, its holdings predicted"
printf 'memory: {unified_sleep: true}\n' >>"$C/gpumod.yaml"
t_run 0 gpumod reload
t_run 0 gpumod service start a
t_run 0 gpumod service sleep a
t_has out "'a' is asleep (l1"
t_jq "$(gpumod service show a --json >"$T/show"; echo "$T/show")" .asleep.measured false
t_run 0 gpumod service start a
t_has out "woke (l1)"
t_end

gpumod service stop a >/dev/null 2>&1
gpumod service stop b >/dev/null 2>&1
gpumod service stop wfail >/dev/null 2>&1
daemon_stop
t_done
