#!/usr/bin/env bash
# The canary (docs/canary.md): after the health check answers 200 and
# before READY, the built-in known-answer prompts (or the preset's own)
# must be answered right.  fakellm answers them in its normal mode; its
# garbage mode, a scripted wrong answer, a wrong answer hidden behind
# thinking that names the right one, a crash during the first generation
# (the engine aborts while the second prompt is being answered) and identical
# embeddings all fail the start: state failed, the sample in
# the `canary` event and the start's message, no automatic restart; a mode
# switch that started such a service rolls back.  The canary's cost is in
# the event and in `service show`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s, max_restarts: 3, backoff_initial: 100ms}"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port) P6=$(free_port)
P7=$(free_port) P8=$(free_port) P9=$(free_port)
preset good "$P1" 'canary: true'
preset garbage "$P2" 'canary: true' 'env: {FAKELLM_GARBAGE: "1"}'
printf '{"match": "Is the sky blue", "answer": "Yes, it is blue."}\n' >"$T/script.jsonl"
preset own "$P3" 'canary: {prompt: "Is the sky blue? Answer yes or no.", expect: "yes"}' \
    "env: {FAKELLM_SCRIPT: \"$T/script.jsonl\"}"
printf '{"match": "Are you there", "error": 500}\n' >"$T/script500.jsonl"
P10=$(free_port)
preset err500 "$P10" 'canary: {prompt: "Are you there?", expect: "yes"}' "env: {FAKELLM_SCRIPT: \"$T/script500.jsonl\"}"
preset ownwrong "$P4" 'canary: {prompt: "Is the sky blue? Answer yes or no.", expect: "no"}' \
    "env: {FAKELLM_SCRIPT: \"$T/script.jsonl\"}"
# thinking that names the right answer, then a wrong one: only a canary that strips it fails
preset thinker "$P5" 'canary: true' 'env: {FAKELLM_THINK: "content", FAKELLM_ERROR_RATE: "1"}'
preset crash "$P6" 'canary: true' 'env: {FAKELLM_CRASH_AFTER: "1", FAKELLM_TTFT_MS: "200"}'
preset emb "$P7" 'canary: true' 'unit_vars: {extra_args: [--embeddings]}'
preset embgarbage "$P8" 'canary: true' 'unit_vars: {extra_args: [--embeddings]}' 'env: {FAKELLM_GARBAGE: "1"}'
preset plain "$P9"
mkdir -p "$C/modes"
printf 'id: A\nservices: [plain]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [garbage]\n' >"$C/modes/B.yaml"
daemon_start

# canary_events SERVICE: that service's canary events' data, one JSON a line
canary_events() { events "$1"; jq -c 'select(.kind == "canary" and .data != null) | .data' "$T/ev"; }

t_begin "fakellm answers the built-in canary: ready; the cost is in the event and in service show"
t_run 0 gpumod service start good
t_eq "$(state_of good)" ready "good"
t_eq "$(canary_events good | jq -s 'length')" 1 "canary verdicts"
t_eq "$(canary_events good | jq -r '"\(.ok) \(.sent) \(.passed)"')" "true 3 3" "ok sent passed"
t_run 0 gpumod service show good --json
t_jq out .canary.state passed
t_jq out '.canary.ms >= 0' true
t_jq out .canary.passed 3
t_jq out '.canary.answer' Paris
t_end

t_begin "garbage: the start fails (exit 1), state failed, the sample in the event and the message, no restart"
t_run 1 gpumod service start garbage
t_has err "failed its canary"
t_has err "it is not restarted, a person must start it"
t_eq "$(state_of garbage)" failed "garbage"
t_eq "$(canary_events garbage | jq -r .ok)" false "verdict"
t_eq "$(canary_events garbage | jq -r '.why | startswith("prompt 1 of 3: expected '"'"'42'"'"' in the answer")')" true "why"
t_eq "$(canary_events garbage | jq -r '.answer | length > 0')" true "the sample is kept"
t_run 0 gpumod service show garbage --json
t_jq out .canary.state failed
t_jq out .last_start.outcome failed
# no restart: the restart policy (backoff 100 ms) never starts it again
sleep "$(awk -v s="$S" 'BEGIN { print 1 * s }')"
t_eq "$(count spawn garbage)" 1 "spawns of garbage"
t_eq "$(state_of garbage)" failed "garbage, a while later"
t_end

t_begin "the preset's own prompt and expected text: passes when the answer has it, fails when not"
t_run 0 gpumod service start own
t_eq "$(canary_events own | jq -r '"\(.ok) \(.prompt)"')" "true Is the sky blue? Answer yes or no." "own"
t_run 1 gpumod service start ownwrong
t_has err "expected 'no' in the answer, got 'Yes, it is blue.'"
t_eq "$(state_of ownwrong)" failed "ownwrong"
t_end

t_begin "an HTTP error from the engine fails the canary, with the status and body in the reason"
t_run 1 gpumod service start err500
t_eq "$(state_of err500)" failed "err500"
t_eq "$(canary_events err500 | jq -r '.why | startswith("HTTP 500: ")')" true "why"
t_end

t_begin "thinking is stripped: the right answer only inside <think> fails"
t_run 1 gpumod service start thinker
t_eq "$(state_of thinker)" failed "thinker"
t_eq "$(canary_events thinker | jq -r '.why | contains("expected '"'"'42'"'"'")')" true "why"
t_end

t_begin "a crash during the first generation fails the start, no restart"
t_run 1 gpumod service start crash
t_eq "$(state_of crash)" failed "crash"
sleep "$(awk -v s="$S" 'BEGIN { print 1 * s }')"
t_eq "$(count spawn crash)" 1 "spawns of crash"
t_end

t_begin "an embedding service: two inputs, two different finite vectors; garbage's identical ones fail"
t_run 0 gpumod service start emb
t_eq "$(canary_events emb | jq -r '"\(.ok) \(.embeddings) \(.prompt)"')" "true true embeddings" "emb"
t_run 1 gpumod service start embgarbage
t_eq "$(canary_events embgarbage | jq -r .why)" "two different inputs gave the same embedding (64 values)" "why"
t_end

t_begin "a mode switch that starts a service whose canary fails rolls back"
t_run 0 gpumod service stop good
t_run 0 gpumod mode switch A
t_run 1 gpumod mode switch B
t_has err "failed at 'garbage'"
t_has err "rolled back: the host is in mode 'A'"
t_eq "$(state_of plain),$(state_of garbage)" "ready,failed" "states"
t_end

t_begin "a person starts a failed service again: the canary runs again"
n0=$(canary_events own | jq -s 'length')
t_run 0 gpumod service restart own
t_eq "$(canary_events own | jq -s 'length')" "$((n0 + 1))" "canary verdicts of own"
t_end

daemon_stop
t_done
