#!/usr/bin/env bash
# gpumod tune against fakellm's speed model (FAKELLM_SPEED: its tokens/s a
# scripted function of its flags and environment, with seeded noise, and
# reported in llama-server's timings, which --objective engine_tps reads,
# so a busy machine cannot decide an outcome): the grid and coordinate
# descent find the scripted optimum; over 20 seeded runs where no flag
# matters at most one reports an IMPROVEMENT; a variant the gate refuses is
# SKIPPED and never spawned; a variant that dies at its start is FAILED
# with its log; the proposer's invalid proposals are SKIPPED with why; the
# lease gives the host back when tune is killed; --resume goes on; --apply
# writes the winner and keeps the preset's comments.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok", "compute_capability": "12.0"}],
 "processes": []}
JSON

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port)
# the optimum: threads 2 (+30 %), and batch_size 1024 another 5 %
# two answer scripts that make a variant faster but wrong: one fails the
# canary, the other only the eval suite below
SPEED="base=1000; threads=2:+30%,4:+10%; batch_size=1024:+15%; env.FAKELLM_SCRIPT=$T/wrong-canary.jsonl:+30%,$T/wrong-eval.jsonl:+30%"
printf '{"match": "17 + 25", "answer": "43"}\n' >"$T/wrong-canary.jsonl"
{
    printf 'name: capitals\nitems:\n'
    : >"$T/wrong-eval.jsonl"
    for c in Japan:Tokyo Italy:Rome Germany:Berlin Spain:Madrid Canada:Ottawa Egypt:Cairo Kenya:Nairobi Peru:Lima Norway:Oslo; do
        printf '  - {id: %s, prompt: "What is the capital of %s?", scorer: exact, expected: %s}\n' "${c%%:*}" "${c%%:*}" "${c##*:}"
        printf '{"match": "capital of %s", "answer": "Atlantis"}\n' "${c%%:*}" >>"$T/wrong-eval.jsonl"
    done
} >"$T/suite.yaml"
{
    printf '# the chat model: tuned by t86\n'
    printf 'id: chat\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\ndevices: [0]\n' "$P1" "$MODEL"
    printf 'unit_vars:\n  threads: 1 # one thread to start with\n  parallel: 1\n'
    printf 'env:\n  FAKELLM_SPEED: "%s"\n  FAKELLM_SPEED_NOISE: "0.02"\n  GPUMOD_FAKE_NVML_STATE: %s\ncanary: true\n' "$SPEED" "$T/nvml.json"
} >"$C/presets/chat.yaml"
# MTP speculative decoding: one slot only (the rule table refuses parallel > 1)
P4=$(free_port)
# (the tiny models' head sizes take no quantized KV cache, so the estimator
# cannot tell a q8_0 variant's need: the preset declares its memory)
preset mtp "$P4" 'unit_vars: {spec_type: draft-mtp, parallel: 1}' 'env: {FAKELLM_SPEED: "base=1000"}' \
    'memory: {host_mb: 64}'
# declares 8 GiB on the fake GPU, so that a variant holding 6000 MiB is
# within what the gate admitted (the watchdog would stop one over it)
P5=$(free_port)
preset big "$P5" 'devices: [0]' 'memory: {gpu_mb: 8000, host_mb: 64}' \
    "env: {FAKELLM_SPEED: \"base=1000\", GPUMOD_FAKE_NVML_STATE: $T/nvml.json}"
# no flag matters here
preset flat "$P2" 'env: {FAKELLM_SPEED: "base=1000", FAKELLM_SPEED_NOISE: "0.03"}'
# the proposer: a scripted OpenAI endpoint
cat >"$T/script.jsonl" <<'EOF'
{"match": "\"change\":\"threads=2\"", "answer": "{\"stop\": true, \"reason\": \"done\"}"}
{"match": "invalid proposal: the value '12'", "answer": "```json\n{\"key\": \"threads\", \"value\": \"2\", \"reason\": \"two threads fit two cores\"}\n```"}
{"match": "invalid proposal: the key 'ubatch_size'", "answer": "{\"key\": \"threads\", \"value\": \"12\", \"reason\": \"outside the menu\"}"}
{"match": "\"history\":[]", "answer": "{\"key\": \"ubatch_size\", \"value\": \"64\", \"reason\": \"not on the menu\"}"}
EOF
preset proposer "$P3" "env: {FAKELLM_SCRIPT: $T/script.jsonl}"
mkdir -p "$C/modes"
printf 'id: solo\nservices: [chat]\n' >"$C/modes/solo.yaml"
daemon_start
gpumod mode switch solo >/dev/null 2>&1 || true

LOAD=(--objective engine_tps --requests 8 --warmup 1 --gen-tokens 16 --prompt-tokens 16 --rounds 3 --ttl 5)

if runner_is systemd; then
    sd_skip "t86" "a unit runs its installed command, not a variant's overrides"
    t_begin "the daemon stops cleanly"
    daemon_stop
    t_end
    t_done
    exit
fi

t_begin "usage errors: exit 2 naming what is wrong"
t_run 2 gpumod tune
t_has err "which service?"
t_run 2 gpumod tune chat
t_has err "nothing to search"
t_run 2 gpumod tune chat --param threads
t_has err "expected KEY=V1,V2"
t_run 2 gpumod tune chat --param threads=1,2 --min-gain fast
t_has err "--min-gain 'fast'"
t_run 2 gpumod tune chat --param threads=1,2 --strategy propose
t_has err "needs --proposer"
t_run 2 gpumod tune chat --param threads=1,2 --rounds 1
t_has err "--rounds '1'"
t_run 2 gpumod tune chat --param threads=1,2 --frobnicate
t_has err "unknown option '--frobnicate'"
t_run 2 gpumod tune nosuch --param threads=1,2
t_has err "no preset 'nosuch'"
t_run 2 gpumod tune --abort -q
t_has err "--abort takes no other argument"
t_run 2 gpumod tune chat --param threads=1,2 --yes
t_has err "--yes goes with --apply"
t_run 2 gpumod tune chat flat --param threads=1,2
t_has err "one service at a time ('chat' and 'flat')"
t_end

t_begin "the grid finds the scripted optimum; the TSV has a row per variant; the host is given back"
t_run 0 gpumod tune chat --param threads=1,2,4 --param batch_size=512,1024 "${LOAD[@]}" \
    --tsv "$T/grid.tsv" --json "$T/grid.json" --svg "$T/grid.svg"
sed 's/^/# /' "$T/out"
sed 's/^/# /' "$T/grid.tsv"
t_has out "winner: threads+batch_size=2+1024"
t_has out "confirmed by the re-verification"
t_jq "$T/grid.json" .schema gpumod.tune/1
t_jq "$T/grid.json" '.winner.value' "2+1024"
t_jq "$T/grid.json" '.winner.confirmed' true
t_jq "$T/grid.json" '[.rows[] | select(.outcome == "BASELINE")] | length' 1
t_jq "$T/grid.json" '.outcomes.FINAL' 1
# the baseline, 6 variants, the re-verification
t_eq "$(tail -n +2 "$T/grid.tsv" | wc -l)" 8 "TSV rows"
t_eq "$(head -1 "$T/grid.tsv" | cut -f1-5)" "$(printf 'variable\tvalue\tmedian\tdelta\toutcome')" "TSV header"
t_match "$T/grid.tsv" "^threads\+batch_size	2\+1024	.*	IMPROVEMENT	"
t_has "$T/grid.svg" "<svg"
# threads 1 batch 512 is the preset's own speed: never an improvement
t_lacks <(grep -P '^threads\+batch_size\t1\+512\t' "$T/grid.tsv") IMPROVEMENT
t_eq "$(field chat .overrides)" null "overrides after the run"
t_eq "$(state_of chat)" ready "state after the run"
t_run 0 gpumod tune --abort
t_has out "no tune run holds a lease"
curl -s --unix-socket "$GPUMOD_SOCKET" "http://gpumod/results?kind=tune" >"$T/res.json"
t_jq "$T/res.json" '.results | length >= 1' true
t_end

t_begin "coordinate descent finds it too, one key at a time from the best so far"
t_run 0 gpumod tune chat --param threads=1,2,4 --param batch_size=512,1024 --strategy coord "${LOAD[@]}" \
    --json "$T/coord.json" --no-store
t_jq "$T/coord.json" '.winner.key' "threads=2;batch_size=1024"
t_jq "$T/coord.json" '.winner.confirmed' true
# the batch sweep ran against the incumbent threads=2
t_jq "$T/coord.json" '[.rows[] | select(.key == "threads=2;batch_size=1024")][0].reference' "threads=2"
t_end

t_begin "20 seeded runs where no flag matters: at most one IMPROVEMENT (the false-positive rate printed)"
# at the default of 5 pairs per comparison
fp=0
for seed in $(seq 1 20); do
    gpumod tune flat --param threads=2,4 "${LOAD[@]}" --rounds 5 --seed "$seed" \
        --json "$T/flat.json" --no-store -q >/dev/null 2>&1
    if [ "$(jq '.outcomes.IMPROVEMENT' "$T/flat.json")" != 0 ]; then fp=$((fp + 1)); fi
done
echo "t86: false positives: $fp of 20 runs ($((fp * 5)) %)"
[ "$fp" -le 1 ] || t_fail "$fp of 20 runs reported an IMPROVEMENT where no flag matters"
t_end

t_begin "a variant the gate refuses (the fake GPU is 24 GiB) is SKIPPED with the gate's reason, never spawned"
n=$(count spawn chat)
t_run 0 gpumod tune chat --param context_size=128,4000000 "${LOAD[@]}" --json "$T/gate.json" --no-store
t_jq "$T/gate.json" '[.rows[] | select(.value == "4000000")][0].outcome' SKIPPED
t_jq "$T/gate.json" '[.rows[] | select(.value == "4000000")][0].reason | startswith("the gate: ")' true
events chat
t_eq "$(jq -s '[.[] | select(.kind == "spawn") | .data.argv | join(" ") | select(contains("4000000"))] | length' "$T/ev")" 0 \
    "spawns with -c 4000000"
t_end

t_begin "a variant that dies at its start is FAILED with its log; a bad override SKIPPED with the daemon's words"
t_run 0 gpumod tune chat --env FAKELLM_EXIT_DURING_LOAD=3 --param cache_type_k=f16,bogus "${LOAD[@]}" \
    --strategy coord --json "$T/fail.json" --no-store
t_jq "$T/fail.json" '[.rows[] | select(.variable == "env.FAKELLM_EXIT_DURING_LOAD")][0].outcome' FAILED
t_jq "$T/fail.json" '[.rows[] | select(.value == "bogus")][0].outcome' SKIPPED
t_match <(jq -r '[.rows[] | select(.value == "bogus")][0].reason' "$T/fail.json") "cache_type_k"
t_eq "$(state_of chat)" ready "state after the run"
t_end

t_begin "the proposer: a key and a value off the menu are SKIPPED with why, the good change measured"
gpumod service start proposer >/dev/null
t_run 0 gpumod tune chat --param threads=1,2 --strategy propose --proposer "http://127.0.0.1:$P3" \
    "${LOAD[@]}" --json "$T/prop.json" --no-store
t_jq "$T/prop.json" '[.rows[] | select(.outcome == "SKIPPED")] | length' 2
t_match <(jq -r '.rows[] | select(.outcome == "SKIPPED") | .reason' "$T/prop.json") "the key 'ubatch_size' is not on the menu"
t_match <(jq -r '.rows[] | select(.outcome == "SKIPPED") | .reason' "$T/prop.json") "the value '12' of 'threads' is not on the menu"
t_jq "$T/prop.json" '[.rows[] | select(.key == "threads=2")][0].outcome' IMPROVEMENT
t_jq "$T/prop.json" '[.rows[] | select(.key == "threads=2")][0].reason | contains("two threads fit two cores")' true
t_end

t_begin "tune killed mid-run: the lease expires and the daemon gives the host back; --resume goes on"
# the helper itself (gpumod execs it: the same pid), not a subshell around it
"$GPUMOD_BIN" tune chat --param threads=1,2,4 --param batch_size=512,1024 "${LOAD[@]}" --no-store -q >/dev/null 2>&1 &
tp=$!
has_rows() { curl -s --unix-socket "$GPUMOD_SOCKET" http://gpumod/tune | jq -e '(.lease.state.rows // []) | length >= 2' >/dev/null; }
t_wait 60 has_rows || t_fail "no rows recorded in the lease"
kill -9 "$tp"
wait "$tp" 2>/dev/null
expired() { curl -s --unix-socket "$GPUMOD_SOCKET" http://gpumod/tune | jq -e '.lease == null and .last.ended == "expired"' >/dev/null; }
t_wait 30 expired || t_fail "the lease did not expire"
restored() { [ "$(field chat .overrides)" = null ] && is_state chat ready; }
t_wait 30 restored || t_fail "not restored: overrides $(field chat .overrides), state $(state_of chat)"
t_run 0 gpumod tune chat --param threads=1,2,4 --param batch_size=512,1024 "${LOAD[@]}" --no-store --resume \
    --json "$T/resume.json"
t_match err "resuming: [0-9]+ comparisons of the earlier run are kept"
t_jq "$T/resume.json" '[.rows[] | select(.reason // "" | contains("resumed"))] | length >= 2' true
t_jq "$T/resume.json" '.winner.value' "2+1024"
t_run 2 gpumod tune chat --param threads=1,8 "${LOAD[@]}" --no-store --resume
t_has err "keeps no earlier run of this search"
t_end

t_begin "the rule table on every variant: a refuse rule SKIPPED with its text, a warn rule measured and flagged"
gpumod service start mtp >/dev/null
t_run 0 gpumod tune mtp --param parallel=1,2 --param cache_type_k=f16,q8_0 "${LOAD[@]}" --json "$T/rules.json" --no-store
jq -r '.rows[] | "# \(.value) \(.outcome) \(.reason)"' "$T/rules.json"
t_jq "$T/rules.json" '[.rows[] | select(.value | startswith("2+")) | .outcome] | unique | join(",")' SKIPPED
t_jq "$T/rules.json" '[.rows[] | select(.value | startswith("2+")) | .reason | startswith("rule llama-mtp-parallel: ")] | all' true
t_jq "$T/rules.json" '[.rows[] | select(.value == "1+q8_0")][0].flagged' true
t_match <(jq -r '.rows[] | select(.value == "1+q8_0") | .reason' "$T/rules.json") "rule llama-kv-quant-sm120 \(warn\)"
t_jq "$T/rules.json" '[.rows[] | select(.value == "1+q8_0")][0].outcome' "NO CHANGE"
t_jq "$T/rules.json" '[.rows[] | select(.value == "1+f16")][0].flagged' false
events mtp
t_eq "$(jq -s '[.[] | select(.kind == "spawn") | .data.argv | join(" ") | select(test("(-np|--parallel) 2"))] | length' "$T/ev")" 0 \
    "spawns with --parallel 2"
gpumod service stop mtp >/dev/null
t_end

t_begin "a faster variant that fails the canary is UNSAFE, never the winner"
t_run 0 gpumod tune chat --env "FAKELLM_SCRIPT=$T/wrong-canary.jsonl" "${LOAD[@]}" --json "$T/canary.json" --no-store
t_jq "$T/canary.json" '.rows[1].outcome' UNSAFE
t_match <(jq -r '.rows[1].reason' "$T/canary.json") "^failed the canary: "
t_jq "$T/canary.json" .winner null
t_eq "$(field chat .overrides)" null "overrides after the run"
t_end

t_begin "--quality: a faster variant whose answers are worse than its reference's (eval compare) is UNSAFE"
t_run 0 gpumod tune chat --env "FAKELLM_SCRIPT=$T/wrong-eval.jsonl" "${LOAD[@]}" --quality "$T/suite.yaml" \
    --json "$T/quality.json" --no-store
t_jq "$T/quality.json" '.rows[1].outcome' UNSAFE
t_jq "$T/quality.json" '.rows[1].delta_pct > 20' true
t_match <(jq -r '.rows[1].reason' "$T/quality.json") "^quality: worse than its reference"
t_jq "$T/quality.json" .winner null
t_end

t_begin "--max-memory: a variant whose measured GPU footprint is over the budget is UNSAFE"
gpumod service start big >/dev/null
t_run 0 gpumod tune big --env FAKELLM_GPU_MB=100,6000 "${LOAD[@]}" --max-memory 4000 --json "$T/mem.json" --no-store
jq -r '.rows[] | "# \(.value) \(.outcome) \(.mem_peak_mb) \(.reason)"' "$T/mem.json"
t_jq "$T/mem.json" '[.rows[] | select(.value == "6000")][0].outcome' UNSAFE
t_match <(jq -r '.rows[] | select(.value == "6000") | .reason' "$T/mem.json") "its GPU footprint [0-9]+ MiB is over --max-memory 4000 MiB"
t_jq "$T/mem.json" '[.rows[] | select(.value == "6000")][0].mem_peak_mb >= 6000' true
t_jq "$T/mem.json" '[.rows[] | select(.value == "100")][0].outcome != "UNSAFE"' true
gpumod service stop big >/dev/null
t_end

t_begin "a tune: file gives the menu and the options; a key it does not know is an error at its line"
cat >"$T/tune.yaml" <<'EOF'
# kept beside the preset
tune:
  params:
    threads: [1, 2]
  strategy: coord
  objective: engine_tps
  rounds: 3
  requests: 8
  warmup: 1
  gen_tokens: 16
  prompt_tokens: 16
  allow_traffic: true
EOF
t_run 0 gpumod tune chat --file "$T/tune.yaml" --json "$T/file.json" --no-store
t_jq "$T/file.json" '.settings.strategy' coord
t_jq "$T/file.json" '.winner.key' threads=2
t_jq "$T/file.json" '[.rows[] | .flagged] | all' true
printf 'tune:\n  params: {threads: [1, 2]}\n  rownds: 3\n' >"$T/bad.yaml"
t_run 2 gpumod tune chat --file "$T/bad.yaml"
t_has err "$T/bad.yaml:3:3: tune.rownds: not an option of gpumod tune"
t_end

t_begin "the client's objectives run too: throughput, and a weighted score (the outcomes are the machine's)"
t_run 0 gpumod tune chat --param threads=1,2 --objective throughput --requests 8 --warmup 1 --gen-tokens 16 \
    --prompt-tokens 16 --rounds 2 --json "$T/tput.json" --no-store
t_jq "$T/tput.json" '.settings.objective + " " + (.settings.higher_is_better | tostring)' "throughput true"
t_jq "$T/tput.json" '[.rows[] | select(.outcome != "BASELINE") | .median > 0] | all' true
t_run 0 gpumod tune chat --param threads=1,2 --objective score --weights engine_tps=1,ttft=0.5 --requests 8 \
    --warmup 1 --gen-tokens 16 --prompt-tokens 16 --rounds 2 --json "$T/score.json" --no-store
t_jq "$T/score.json" '[.rows[] | select(.outcome != "BASELINE") | .median | type] | unique | join(",")' number
t_run 2 gpumod tune chat --param threads=1,2 --objective score
t_has err "--objective score needs --weights"
t_run 2 gpumod tune chat --param threads=1,2 --objective score --weights speed=1
t_has err "--weights 'speed=1'"
t_end

t_begin "--budget: no comparison starts that would pass it; the run says it stopped early"
t_run 1 gpumod tune chat --param threads=1,2,4 "${LOAD[@]}" --budget 1 --json "$T/budget.json" --no-store
t_has out "stopped early: the time budget of 1 s"
t_jq "$T/budget.json" '[.rows[] | select(.outcome != "BASELINE")] | length' 1
t_jq "$T/budget.json" '.stopped | startswith("the time budget")' true
t_eq "$(field chat .overrides)" null "overrides after the run"
t_end

t_begin "Ctrl-C mid-measurement: the bench is killed, the lease released, the host restored, exit 130"
"$GPUMOD_BIN" tune chat --param threads=1,2 --objective engine_tps --requests 8 --warmup 0 --gen-tokens 4000 \
    --prompt-tokens 16 --no-store >"$T/int.out" 2>"$T/int.err" &
tp=$!
measuring() { pgrep -f "gpumod-bench http://127.0.0.1:$P1" >/dev/null; }
t_wait 60 measuring || t_fail "no measurement started"
kill -INT "$tp"
ended() { ! kill -0 "$tp" 2>/dev/null; }
t_wait 20 ended || t_fail "tune still runs 20 s after SIGINT (a measurement takes 32 s)"
wait "$tp"
t_eq "$?" 130 "exit status"
t_has "$T/int.err" "to go on, run the same command with --resume"
t_eq "$(pgrep -fc "gpumod-bench http://127.0.0.1:$P1")" 0 "bench processes left"
api_tune() { curl -s --unix-socket "$GPUMOD_SOCKET" http://gpumod/tune; }
t_eq "$(api_tune | jq -r '.lease == null and .last.ended == "released"')" true "the lease released"
restored() { [ "$(field chat .overrides)" = null ] && is_state chat ready; }
t_wait 30 restored || t_fail "not restored: overrides $(field chat .overrides), state $(state_of chat)"
t_end

t_begin "--apply --yes writes the confirmed winner into the preset, its comments kept, a note beside it"
t_run 0 gpumod tune chat --param threads=1,2 "${LOAD[@]}" --no-store --apply --yes
t_has out "+  threads: 2 # one thread to start with"
t_has "$C/presets/chat.yaml" "# the chat model: tuned by t86"
t_match "$C/presets/chat.yaml" "^  # gpumod tune [0-9-]+: threads=2, \+"
t_has "$C/presets/chat.yaml" "  threads: 2 # one thread to start with"
t_run 0 gpumod config check
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
