#!/usr/bin/env bash
# gpumod tune --engine-bench: the grid measured by llama-bench (fakellm
# under that name, beside the fakellm that plays llama-server), each run a
# POST /services/ID/engine-bench the gate admits: the scripted optimum
# found from tg's avg_ts; a variant the gate refuses SKIPPED with no
# llama-bench run for it; a failing llama-bench FAILED with its stderr
# tail; the route's bad bodies 400, no llama-bench beside the binary 422,
# a gate refusal 409.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
nvml() {
    printf '{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": %s, "memory": "ok"}], "processes": []}\n' "$1" >"$T/nvml.json"
}
nvml 300
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port)
SPEED="base=1000; threads=2:+30%,4:+10%; batch_size=1024:+15%"
{
    printf 'id: chat\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\ndevices: [0]\n' "$P1" "$MODEL"
    printf 'unit_vars:\n  threads: 1\n  parallel: 1\n'
    printf 'env:\n  FAKELLM_SPEED: "%s"\n  FAKELLM_SPEED_NOISE: "0.02"\n  FAKELLM_BENCH_COUNTER: %s\n' "$SPEED" "$T/counter"
    printf '  GPUMOD_FAKE_NVML_STATE: %s\n' "$T/nvml.json"
} >"$C/presets/chat.yaml"
preset web "$P2" 'driver: command' 'command: ["sleep", "1000"]'
sed -i 's/^driver: llamacpp$//' "$C/presets/web.yaml"
daemon_start

if runner_is systemd; then
    sd_skip "t87" "the lease restores units; covered under the spawn runner"
    t_begin "the daemon stops cleanly"
    daemon_stop
    t_end
    t_done
    exit
fi

eb() { curl -s -o "$T/eb.json" -w '%{http_code}' --unix-socket "$GPUMOD_SOCKET" -X POST \
    "http://gpumod/services/$1/engine-bench" -d "$2"; }

t_begin "POST /services/chat/engine-bench: llama-bench's pp and tg, its argv built by the daemon"
t_eq "$(eb chat '{"overrides": {"threads": 2}, "n_prompt": 64, "n_gen": 16, "repetitions": 2}')" 200 "status"
t_jq "$T/eb.json" '.exit' 0
t_jq "$T/eb.json" '.argv | join(" ") | test("llama-bench -m .* -p 64 -n 16 -r 2 -o json -t 2")' true
t_jq "$T/eb.json" '.results | length' 2
t_jq "$T/eb.json" '[.results[] | select(.n_gen == 16)][0].avg_ts > 1200' true
t_jq "$T/eb.json" '[.results[] | select(.n_prompt == 64)][0].samples_ts | length' 2
events chat
t_eq "$(jq -s '[.[] | select(.kind == "engine_bench" and .data.what == "run")] | length' "$T/ev")" 1 "run events"
t_end

t_begin "bad bodies 400; not llama.cpp, no llama-bench beside the binary 422; the gate's refusal 409"
t_eq "$(eb chat '{"n_prompt": -1}')" 400 "negative n_prompt"
t_jq "$T/eb.json" '.error.message | contains("n_prompt")' true
t_eq "$(eb chat '{"argv": ["sh"]}')" 400 "unknown key"
t_jq "$T/eb.json" '.error.message | contains("unknown key '"'"'argv'"'"'")' true
t_eq "$(eb chat '{"overrides": {"bogus": 1}}')" 400 "bad override"
t_eq "$(eb chat '[1]')" 400 "not an object"
t_eq "$(eb chat '{"n_prompt": 0, "n_gen": 0}')" 400 "nothing to measure"
t_eq "$(eb nosuch '{}')" 404 "no preset"
t_eq "$(eb web '{}')" 422 "a command preset"
nvml 24500
t_eq "$(eb chat '{}')" 409 "a full GPU"
t_jq "$T/eb.json" '.error.code' gate_refused
nvml 300
mkdir -p "$T/bin"
cp "$BUILD/fakellm" "$T/bin/fakellm"
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}" >/dev/null
printf 'drivers:\n  llamacpp: {binary: %s/bin/fakellm}\nrouter: {enabled: false}\n' "$T" >"$C/gpumod.yaml"
gpumod reload >/dev/null
t_eq "$(eb chat '{}')" 422 "no llama-bench"
t_jq "$T/eb.json" '.error.message | contains("'"$T"'/bin/llama-bench")' true
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
gpumod reload >/dev/null
t_end

LOAD=(--engine-bench --n-prompt 64 --n-gen 16 --rounds 3 --ttl 5)

t_begin "usage: --engine-bench for llama.cpp only; prefill only with it"
t_run 2 gpumod tune web --param threads=1,2 --engine-bench
t_has err "llama.cpp presets only"
t_run 2 gpumod tune chat --param threads=1,2 --objective prefill
t_has err "needs --engine-bench"
t_run 2 gpumod tune chat --param threads=1,2 --engine-bench --objective ttft
t_has err "not --objective ttft"
t_end

t_begin "the grid through llama-bench finds the scripted optimum; the service stopped, then restored"
gpumod service start chat >/dev/null
n=$(count spawn chat)
t_run 0 gpumod tune chat --param threads=1,2,4 --param batch_size=512,1024 "${LOAD[@]}" \
    --tsv "$T/grid.tsv" --json "$T/grid.json" --no-store
t_has out "winner: threads+batch_size=2+1024"
t_jq "$T/grid.json" '.winner.confirmed' true
t_eq "$(tail -n +2 "$T/grid.tsv" | wc -l)" 8 "TSV rows"
# one start: the restore at the end, no restart per variant
t_eq "$(count spawn chat)" $((n + 1)) "spawns of chat"
wait_ready() { is_state chat ready; }
t_wait 30 wait_ready || t_fail "chat is $(state_of chat) after the run"
t_end

t_begin "prefill: pp's avg_ts is the objective"
t_run 0 gpumod tune chat --param threads=1,2 "${LOAD[@]}" --objective prefill --json "$T/pp.json" --no-store
t_jq "$T/pp.json" '[.rows[] | select(.key == "threads=2")][0].outcome' IMPROVEMENT
t_jq "$T/pp.json" '[.rows[] | select(.key == "threads=2")][0].median > 20000' true
t_end

t_begin "a variant the gate refuses is SKIPPED, no llama-bench ran for it; a failing one is FAILED with stderr"
t_run 0 gpumod tune chat --param context_size=128,4000000 --env FAKELLM_BENCH_FAIL=3 "${LOAD[@]}" \
    --strategy coord --json "$T/gate.json" --no-store
t_jq "$T/gate.json" '[.rows[] | select(.value == "4000000")][0].outcome' SKIPPED
t_jq "$T/gate.json" '[.rows[] | select(.value == "4000000")][0].reason | test("gate")' true
t_jq "$T/gate.json" '[.rows[] | select(.variable == "env.FAKELLM_BENCH_FAIL")][0].outcome' FAILED
t_jq "$T/gate.json" '[.rows[] | select(.variable == "env.FAKELLM_BENCH_FAIL")][0].reason | contains("failed to load model")' true
events chat
t_eq "$(jq -s '[.[] | select(.kind == "engine_bench" and .data.what == "run") | select(.data.overrides.context_size == 4000000)] | length' "$T/ev")" 0 \
    "llama-bench runs for context_size 4000000"
t_end

t_begin "the daemon's shutdown kills a llama-bench that runs instead of waiting for its timeout"
curl -s --max-time $((60 * S)) --unix-socket "$GPUMOD_SOCKET" -o "$T/slow.out" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' \
    --data-binary '{"overrides": {"env": {"FAKELLM_BENCH_SLEEP_MS": "120000"}}, "timeout_ms": 600000}' \
    http://gpumod/services/chat/engine-bench >"$T/slow.code" 2>/dev/null &
cp=$!
bench_runs() { pgrep -f "$BUILD/llama-bench" >/dev/null; }
t_wait 20 bench_runs || t_fail "llama-bench did not start"
daemon_stop
wait "$cp" 2>/dev/null
gone() { ! pgrep -f "$BUILD/llama-bench" >/dev/null; }
t_wait 10 gone || t_fail "llama-bench outlived the daemon"
t_end
t_done
