#!/usr/bin/env bash
# fakellm's speed model (issue 18's tune tests): FAKELLM_SPEED turns the
# fake's flags (as llama-server and vllm spell them) and environment into
# tokens/s; tokens are paced at that rate; llama-server's `timings` report
# the model's figures, not the clock's; FAKELLM_SPEED_NOISE is seeded by
# FAKELLM_SEED and the prompt (the same prompt and seed give the same
# speed across restarts); a bad spec stops the fake with exit 2 naming
# the term.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE

# chat URL CONTENT MAX [EXTRA_JSON]: one user message, ignore_eos, MAX tokens
chat() {
    local body
    body=$(jq -nc --arg c "$2" --argjson n "$3" --argjson x "${4:-{\}}" \
        '{messages:[{role:"user",content:$c}],max_tokens:$n,ignore_eos:true} + $x')
    http POST "$1/v1/chat/completions" "$body"
}
pps() { jq -r .timings.predicted_per_second "$T/out"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# llama flavour: every flag the spec names, spelled as llama-server does
LSPEC='base=80; threads=8:+20,16:-5; cache_type_k=q8_0:-20%; env.FK_T22_KNOB=1:+25; ubatch_size=256:+0; ngl=99:+0'
P=$(free_port)
fakellm_spawn llama FAKELLM_SPEED="$LSPEC" FK_T22_KNOB=1 -- -m "$MODEL" --host 127.0.0.1 --port "$P" \
    -t 8 -b 1024 -ub 256 -ctk q8_0 -ctv q8_0 -fa on -np 2 -ngl 99 -c 8192
U=http://127.0.0.1:$P
P16=$(free_port)
fakellm_spawn llama16 FAKELLM_SPEED="$LSPEC" -- -m "$MODEL" --host 127.0.0.1 --port "$P16" \
    --threads=16 --cache-type-k q8_0
wait_healthy "$P" || t_fail "never healthy"
wait_healthy "$P16" || t_fail "the --threads=16 fake never healthy"

t_begin "llama: the speed is (base + absolute terms) * percent terms of the given flags and env"
# (80 + 20 + 25) * 0.8 = 100; at -t 16 without the env: (80 - 5) * 0.8 = 60
t_has "$T/llama.log" "speed: 100.000 tokens/s from FAKELLM_SPEED (base 80; threads=8 +20; cache_type_k=q8_0 -20%; env.FK_T22_KNOB=1 +25"
t_has "$T/llama16.log" "speed: 60.000 tokens/s from FAKELLM_SPEED (base 80; threads=16 -5; cache_type_k=q8_0 -20%)"
t0=$(now_ms)
chat "$U" "Tell me a story." 40
el=$(( $(now_ms) - t0 ))
t_eq "$(cat "$T/status")" 200 "HTTP status"
t_jq out .timings.predicted_per_second 100
t_jq out .timings.predicted_n 40
t_jq out .timings.predicted_ms 400
t_jq out .timings.predicted_per_token_ms 10
t_jq out '.timings | has("prompt_n") and has("prompt_ms") and has("prompt_per_token_ms") and has("prompt_per_second") and has("cache_n")' true
# paced, not all at once: 40 tokens at 100/s are 0.4 s of generation
[ "$el" -ge 350 ] || t_fail "40 tokens at 100 tokens/s came in $el ms"
chat "http://127.0.0.1:$P16" "Tell me a story." 6
t_jq out .timings.predicted_per_second 60
t_jq out .timings.predicted_ms 100
t_end

t_begin "llama: the final streamed chunk carries the model's timings (and the usage chunk too)"
curl -sN --max-time $((10 * S)) "$U/v1/chat/completions" \
    -d '{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' \
    | grep '^data: {' | sed 's/^data: //' >"$T/chunks"
t_eq "$(jq -rs '[.[] | select(.choices[0].finish_reason == "length")][0].timings.predicted_per_second' "$T/chunks")" 100 "final chunk's predicted_per_second"
t_eq "$(jq -rs '[.[] | select(.choices[0].finish_reason == "length")][0].timings.predicted_n' "$T/chunks")" 5 "final chunk's predicted_n"
t_eq "$(jq -rs '[.[] | select(.usage)][0].timings.predicted_ms' "$T/chunks")" 50 "usage chunk's predicted_ms"
t_eq "$(jq -rs '[.[] | select(.choices[0].delta.content) | has("timings")] | any' "$T/chunks")" false "token chunks with timings"
t_end

t_begin "llama: /completion's final object has the model's timings"
http POST "$U/completion" '{"prompt":"x","n_predict":4,"ignore_eos":true}'
t_jq out .timings.predicted_per_second 100
t_jq out .timings.predicted_n 4
t_end

PV=$(free_port)
fakellm_spawn vllm FAKELLM_SPEED='max_num_seqs=8:+10; enforce_eager=1:+10%; kv_cache_dtype=fp8:-50%; gpu_memory_utilization=0.9:+1000%' -- \
    serve Org/M --host 127.0.0.1 --port "$PV" --max-num-seqs 8 --enforce-eager --kv-cache-dtype fp8 \
    --gpu-memory-utilization 0.90
PV0=$(free_port)
fakellm_spawn vllm0 -- serve Org/M --host 127.0.0.1 --port "$PV0"
wait_healthy "$PV" || t_fail "vLLM fake never healthy"
wait_healthy "$PV0" || t_fail "plain vLLM fake never healthy"

t_begin "vllm: its flags count (a switch as 1, 0.90 = 0.9), timings are added under the model only"
# (100 + 10) * 1.1 * 0.5 * 11 = 665.5
t_has "$T/vllm.log" "665.500 tokens/s from FAKELLM_SPEED"
chat "http://127.0.0.1:$PV" "x" 3 '{"model":"Org/M"}'
t_eq "$(cat "$T/status")" 200 "HTTP status"
t_jq out .timings.predicted_per_second 665.5
t_jq out .usage.completion_tokens 3
chat "http://127.0.0.1:$PV0" "x" 3 '{"model":"Org/M"}'
t_jq out 'has("timings")' false
t_lacks "$T/vllm0.log" "FAKELLM_SPEED"
t_end

# noise: two fakes with one seed, one with another.  noisy runs in this
# shell, not in a $(...): a fake spawned in a subshell is not in this
# shell's list of pids, and its cleanup would leave it running
noisy() { # NAME SEED: the fake's port in $NOISY_PORT
    NOISY_PORT=$(free_port)
    fakellm_spawn "$1" FAKELLM_SPEED='base=1000' FAKELLM_SPEED_NOISE=0.05 FAKELLM_SEED="$2" -- \
        -m "$MODEL" --host 127.0.0.1 --port "$NOISY_PORT"
    wait_healthy "$NOISY_PORT" || t_fail "$1 never healthy"
}
speeds() { # PORT: the speed of prompts p1..p20, one a line
    local i
    for i in $(seq 1 20); do chat "http://127.0.0.1:$1" "prompt number $i" 2; pps; done
}
t_begin "noise: reproducible for the same prompt and seed (across restarts), different per prompt and seed"
noisy n1 7; N1=$NOISY_PORT; speeds "$N1" >"$T/s1"
noisy n2 7; N2=$NOISY_PORT; speeds "$N2" >"$T/s2"
noisy n3 8; N3=$NOISY_PORT; speeds "$N3" >"$T/s3"
chat "http://127.0.0.1:$N1" "prompt number 3" 2
t_eq "$(pps)" "$(sed -n 3p "$T/s1")" "the same prompt again"
cmp -s "$T/s1" "$T/s2" || { t_fail "same seed, another process: speeds differ"; paste "$T/s1" "$T/s2" | head -5 | sed 's/^/#   /'; }
cmp -s "$T/s1" "$T/s3" && t_fail "seeds 7 and 8 gave the same speeds"
t_eq "$(sort -u "$T/s1" | wc -l)" 20 "distinct speeds over 20 prompts"
# relative sd near 0.05 and the mean near 1000 (a fixed draw: no flake)
read -r mean sd < <(awk '{ s += $1; q += $1 * $1 } END { m = s / NR; printf "%.1f %.4f\n", m, sqrt(q / NR - m * m) / m }' "$T/s1")
awk -v m="$mean" -v s="$sd" 'BEGIN { exit !(m > 970 && m < 1030 && s > 0.02 && s < 0.09) }' ||
    t_fail "20 draws at noise 0.05: mean $mean, relative sd $sd"
t_end

t_begin "a bad spec or noise exits 2 before binding, naming the term"
bad() { # SPEC EXPECTED_TEXT [NOISE]
    t_run 2 env FAKELLM_SPEED="$1" FAKELLM_SPEED_NOISE="${3:-}" "$FAKELLM_BIN" -m "$MODEL" --port "$(free_port)" -t 8
    t_has err "$2"
}
bad 'base=100; thread=8:+20' "FAKELLM_SPEED: term 'thread=8:+20': 'thread' is no flag of llama-server"
bad 'base=100; threads=8' "FAKELLM_SPEED: term 'threads=8': '8' is not VALUE:DELTA"
bad 'threads=8:fast' "term 'threads=8:fast': '8:fast' is not VALUE:DELTA"
bad 'base=-3' "FAKELLM_SPEED: term 'base=-3': base must be a number above 0"
bad 'base=10; threads' "term 'threads': expected KEY=VALUE:DELTA,... or base=N"
bad 'threads=' "term 'threads=': no VALUE:DELTA after '='"
bad 'base=10; threads=8:-10' "resolves to 0 tokens/s here (base 10; threads=8 -10): it must be above 0"
bad 'base=10' "FAKELLM_SPEED_NOISE='x': expected a number from 0 to below 1" x
t_run 2 env FAKELLM_SPEED='enforce_eager=1:+5' "$FAKELLM_BIN" -m "$MODEL" --port "$(free_port)"
t_has err "'enforce_eager' is no flag of llama-server"
t_run 2 env FAKELLM_SPEED='threads=8:+5' "$FAKELLM_BIN" serve M --port "$(free_port)"
t_has err "'threads' is no flag of vllm serve"
t_end

t_done
