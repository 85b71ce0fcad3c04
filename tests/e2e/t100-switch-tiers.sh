#!/usr/bin/env bash
# The switch plans with tiers (docs/modes.md): two modes of one vLLM fake
# each (sleep_mode l1, a scripted load and wake).  A -> B puts a to sleep
# (the plan says "sleep l1"), B -> A wakes it (the plan says wake, not
# start); --dry-run shows each step's tier and expected time; a target
# that does not fit beside the sleepers stops them instead; a switch whose
# start fails wakes in its rollback what it put to sleep; a wake that fails
# falls back to a stop and a cold start, and the switch says so.
. "$(dirname "$0")/lib.sh"
fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

printf 'drivers:\n  llamacpp: {binary: fakellm}\n  vllm: {binary: fakellm}\nrouter: {enabled: false}\n%s\n' \
    "supervisor: {stop_timeout: 2s, health_interval: 1s}" >"$C/gpumod.yaml"
# vpreset ID [EXTRA_ENV] [EXTRA_YAML]: a vLLM preset played by fakellm, sleep_mode l1
vpreset() {
    printf 'id: %s\ndriver: vllm\nport: %s\nmodel_id: org/%s-7b\ncontext_size: 128\nsleep_mode: l1\nunit_vars: {gpu_mem_util: 0.2}\nmemory: {host_mb: 16, gpu_mb: 1000}\nenv: {FAKELLM_GPU_MB: "1000", FAKELLM_WEIGHTS_MB: "64", FAKELLM_SLEEP_GPU_MB: "500", FAKELLM_LOAD_MS: "2500", FAKELLM_WAKE_MS: "200"%s}\n%s' \
        "$1" "$(free_port)" "$1" "${2:+, $2}" "${3:-}" >"$C/presets/$1.yaml"
}
vpreset a
vpreset b
vpreset w '' # its wake fails once it is asleep (FAKELLM_WAKE_FAIL is read at the wake)
sed -i 's/FAKELLM_WAKE_MS: "200"/FAKELLM_WAKE_MS: "200", FAKELLM_WAKE_FAIL: "1"/' "$C/presets/w.yaml"
vpreset stuck '' $'startup_timeout: 1s\n'
sed -i 's/FAKELLM_LOAD_MS: "2500"/FAKELLM_LOAD_MS: "600000"/' "$C/presets/stuck.yaml"
# n: sleep_mode none (a switch stops it)
vpreset n
sed -i 's/^sleep_mode: l1$/sleep_mode: none/' "$C/presets/n.yaml"
# big: needs nearly the whole 24 GiB device (declared)
printf 'id: big\ndriver: vllm\nport: %s\nmodel_id: org/big-7b\ncontext_size: 128\nunit_vars: {gpu_mem_util: 0.94}\nmemory: {host_mb: 16, gpu_mb: 23100}\nenv: {FAKELLM_GPU_MB: "1000"}\n' \
    "$(free_port)" >"$C/presets/big.yaml"
mkdir -p "$C/modes"
for m in A:a B:b W:w F:stuck G:big N:a,n; do printf 'id: %s\nservices: [%s]\n' "${m%%:*}" "${m#*:}" >"$C/modes/${m%%:*}.yaml"; done
daemon_start

t_begin "A from none: a starts cold (its load measured)"
t_run 0 gpumod mode switch A
t_eq "$(state_of a)" ready "a"
t_end

t_begin "dry run A -> B: a sleeps (l1) with its expected time, b starts"
t_run 0 gpumod mode switch B --dry-run --json
t_jq out '.sleeps | join(",")' a
t_jq out '.stops | length' 0
t_jq out '.starts | join(",")' b
t_jq out '.steps[0].kind' sleep
t_jq out '.steps[0].tier' l1
t_jq out '.steps[0].expect_ms > 0' true
t_jq out '.expect_ms > 0' true
t_run 0 gpumod mode switch B --dry-run
t_match out "sleep l1 +a +-"
t_match out "start +b +ok"
t_has out "expected: "
t_end

t_begin "A -> B: a is put to sleep, b started"
t_run 0 gpumod mode switch B
t_has out "(slept l1)"
t_eq "$(state_of a),$(state_of b)" "sleeping,ready" "states"
t_run 0 gpumod mode current --json
t_jq out .mode B
t_end

t_begin "B -> A: the plan wakes a (not a start); the switch wakes it"
t_run 0 gpumod mode switch A --dry-run --json
t_jq out '.wakes | join(",")' a
t_jq out '.starts | length' 0
t_jq out '.sleeps | join(",")' b
t_jq out '[.steps[] | select(.kind == "wake")][0].tier' l1
t_jq out '[.steps[] | select(.kind == "wake")][0].verdict.ok' true
t_run 0 gpumod mode switch A --dry-run
t_match out "wake l1 +a +ok"
t_run 0 gpumod mode switch A
t_has out "wake a"
t_has out "(woke l1)"
t_eq "$(state_of a),$(state_of b)" "ready,sleeping" "states"
t_end

t_begin "a target that does not fit beside the sleepers stops them instead"
t_run 0 gpumod mode switch G --dry-run --json
t_jq out '.ok' true
t_jq out '[.stops[]] | sort | join(",")' "a,b"
t_jq out '.sleeps | length' 0
t_jq out '[.steps[] | select(.kind == "stop") | .note] | map(test("does not fit beside it asleep")) | all' true
t_run 0 gpumod mode switch G --dry-run
t_has out "does not fit beside it asleep"
t_end

t_begin "rollback wakes what the switch put to sleep (a start that fails)"
t_run 1 gpumod mode switch F
t_has err "rolled back: the host is in mode 'A'"
t_has err "rollback-start a"
t_eq "$(state_of a)" ready "a after the rollback"
t_run 0 sh -c "curl -s --unix-socket '$GPUMOD_SOCKET' 'http://gpumod/switches?limit=1'"
t_jq out '[.switches[0].phases[] | select(.phase == "sleep")][0].detail.slept' true
t_jq out '[.switches[0].phases[] | select(.phase == "rollback-start")][0].detail.woke' true
t_end

t_begin "the plan's sleeps run once its stops are done (an l1 sleep's gate sees their memory gone)"
t_run 0 gpumod mode switch N
t_eq "$(state_of a),$(state_of n)" "ready,ready" "N"
t_run 0 gpumod mode switch B --json
t_eq "$(state_of a),$(state_of n),$(state_of b)" "sleeping,down,ready" "B"
# started/ended of a phase in ms (the journal's times are ISO with milliseconds)
t_jq out 'def ms: (.[0:19] + "Z" | fromdate) * 1000 + (.[20:23] | tonumber);
    ([.phases[] | select(.phase == "stop" and .service == "n")][0] | (.started | ms) + .duration_ms) as $stopped
    | [.phases[] | select(.phase == "sleep" and .service == "a")][0] | (.started | ms) >= $stopped' true
t_end

t_begin "a wake that fails falls back to a stop and a cold start, and says so"
t_run 0 gpumod mode switch W
t_run 0 gpumod mode switch A
t_eq "$(state_of w)" sleeping "w asleep"
t_run 0 gpumod mode switch W --json
t_jq out '[.phases[] | select(.phase == "wake")][0].detail.fell_back' true
t_jq out '[.phases[] | select(.phase == "wake")][0].detail.message | test("wake failed")' true
t_eq "$(state_of w)" ready "w after the cold start"
t_end

t_done

