#!/usr/bin/env bash
# A tiered switch's choice and time against the scripted engine (issue 21:
# "the test asserts the plan's choice (wake, not start) and the time
# against the scripted values, not against the machine").  a: a vLLM fake
# with sleep_mode l1, a cold load of 20 s and a wake of 200 ms (scripted);
# b: a vLLM fake that loads at once (its wake is not expected to be cheaper
# than its load, so the plan stops it).  none -> A (a's 20 s load,
# measured) -> B (a sleeps) -> A: the plan wakes a, not a start, and the
# switch takes at least the scripted wake and less than the scripted cold
# load; a second round trip does the same with the wake time now measured.
# The bounds are the fake's script, so a slow, busy machine cannot fail it.
. "$(dirname "$0")/lib.sh"
fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

LOAD_MS=20000
WAKE_MS=200
printf 'drivers:\n  vllm: {binary: fakellm}\nrouter: {enabled: false}\n%s\n' \
    "supervisor: {stop_timeout: 2s, health_interval: 1s}" >"$C/gpumod.yaml"
# vpreset ID LOAD_MS: a vLLM preset played by fakellm, sleep_mode l1
vpreset() {
    printf 'id: %s\ndriver: vllm\nport: %s\nmodel_id: org/%s-7b\ncontext_size: 128\nsleep_mode: l1\nunit_vars: {gpu_mem_util: 0.2}\nmemory: {host_mb: 16, gpu_mb: 1000}\nenv: {FAKELLM_GPU_MB: "1000", FAKELLM_WEIGHTS_MB: "32", FAKELLM_SLEEP_GPU_MB: "300", FAKELLM_LOAD_MS: "%s", FAKELLM_WAKE_MS: "%s"}\n' \
        "$1" "$(free_port)" "$1" "$2" "$WAKE_MS" >"$C/presets/$1.yaml"
}
vpreset a "$LOAD_MS"
vpreset b 0
mkdir -p "$C/modes"
for m in A:a B:b; do printf 'id: %s\nservices: [%s]\n' "${m%%:*}" "${m#*:}" >"$C/modes/${m%%:*}.yaml"; done
daemon_start

# phase KIND SERVICE FILTER: jq FILTER on the phase KIND of SERVICE in the last switch JSON ($T/out)
phase() { jq -r --arg k "$1" --arg s "$2" "[.phases[] | select(.phase == \$k and .service == \$s)][0] | $3" "$T/out"; }

t_begin "none -> A: a starts cold, its load at least the scripted $LOAD_MS ms"
t_run 0 gpumod mode switch A --json
t_eq "$(phase start a .ok)" true "a's start phase"
t_jq out "[.phases[] | select(.phase == \"start\" and .service == \"a\")][0].detail.load_ms >= $LOAD_MS" true
t_eq "$(state_of a)" ready "a"
t_end

t_begin "A -> B: a (load $LOAD_MS ms measured) is put to sleep, b starts"
t_run 0 gpumod mode switch B --json
t_eq "$(phase sleep a .detail.slept)" true "a slept"
t_eq "$(phase sleep a .detail.tier)" l1 "a's tier"
t_eq "$(phase start b .ok)" true "b's start phase"
t_eq "$(state_of a),$(state_of b)" "sleeping,ready" "states"
t_end

# back_to_A ROUND: the dry run and the switch B -> A (wake a, not a start),
# timed against the script
back_to_A() {
    t_begin "B -> A ($1): the plan wakes a, not a start (dry run)"
    t_run 0 gpumod mode switch A --dry-run --json
    t_jq out '.wakes | join(",")' a
    t_jq out '.starts | length' 0
    t_jq out '[.steps[] | select(.service == "a")] | map(.kind) | join(",")' wake
    t_jq out '[.steps[] | select(.kind == "wake")][0].tier' l1
    # b loads at once: a wake is not cheaper, so it stops (the plan says why)
    t_jq out '.stops | join(",")' b
    t_jq out '[.steps[] | select(.kind == "stop")][0].note | test("not expected to be cheaper")' true
    t_jq out ".expect_ms < $LOAD_MS" true
    t_end

    t_begin "B -> A ($1): the switch wakes a; its time is >= the wake ($WAKE_MS ms), < the cold load ($LOAD_MS ms)"
    t_run 0 gpumod mode switch A --json
    t_jq out '[.phases[] | select(.service == "a") | .phase] | map(select(. == "start" or . == "wake")) | join(",")' wake
    t_eq "$(phase wake a .ok)" true "a's wake phase"
    t_eq "$(phase wake a .detail.woke)" true "woke"
    t_eq "$(phase wake a .detail.fell_back)" false "fell_back"
    t_eq "$(phase wake a .detail.tier)" l1 "the wake's tier"
    t_eq "$(phase wake a "(.detail.ms >= $WAKE_MS and .detail.ms < $LOAD_MS)")" true \
        "the wake's ms ($(phase wake a .detail.ms)) within [$WAKE_MS, $LOAD_MS)"
    t_eq "$(phase wake a "(.duration_ms >= $WAKE_MS)")" true "the wake phase's duration_ms ($(phase wake a .duration_ms))"
    t_jq out "(.duration_ms >= $WAKE_MS and .duration_ms < $LOAD_MS)" true
    t_eq "$(state_of a),$(state_of b)" "ready,down" "states"
    t_end
}

back_to_A "first round trip"

t_begin "A -> B again: a, just woken, sleeps again"
t_run 0 gpumod mode switch B --json
t_eq "$(phase sleep a .detail.slept)" true "a slept"
t_eq "$(state_of a),$(state_of b)" "sleeping,ready" "states"
t_end

t_begin "the dry run now expects a's measured wake: at least $WAKE_MS ms, under $LOAD_MS ms"
t_run 0 gpumod mode switch A --dry-run --json
t_jq out "[.steps[] | select(.kind == \"wake\")][0].expect_ms | (. >= $WAKE_MS and . < $LOAD_MS)" true
t_end

back_to_A "second round trip"

t_done
