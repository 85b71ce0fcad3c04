#!/usr/bin/env bash
# tests/real/tune-real.sh - gpumod tune against a real llama-server on CPU
# (opt-in: `make test-real LLAMA_SERVER=/path/to/llama-server`): a threads
# grid over the story model runs end to end — each variant admitted by the
# gate, restarted through the daemon with -t N, measured in pairs against
# the baseline — and the TSV has a row per variant, the baseline's and the
# re-verification's when one won.  The outcomes themselves depend on the
# machine; this checks that the loop holds against the real engine (its
# timings feed --objective engine_tps), not which thread count wins.
# Without LLAMA_SERVER it prints how to run it and passes as skipped.
. "$(dirname "$0")/../e2e/lib.sh"

STORY_MODEL=$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf

if [ -z "${LLAMA_SERVER:-}" ]; then
    echo "# LLAMA_SERVER is not set: nothing to run against."
    echo "# run: make test-real LLAMA_SERVER=/path/to/llama-server   (a llama.cpp build's bin/llama-server)"
    t_skip "gpumod tune against a real llama-server" "skipped: LLAMA_SERVER is not set"
    t_done
    exit
fi
[ -x "$LLAMA_SERVER" ] || { echo "Bail out! $LLAMA_SERVER is not an executable"; exit 1; }
command -v jq >/dev/null || { echo "Bail out! jq is missing (scripts/install-deps)"; exit 1; }

C=$T/config
mkdir -p "$C/presets"
export GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=/nonexistent/nvidia-smi
export LD_LIBRARY_PATH=$(dirname "$LLAMA_SERVER")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
printf 'drivers:\n  llamacpp: {binary: %s}\nrouter: {enabled: false}\nsupervisor: {startup_timeout: 120s}\n' \
    "$LLAMA_SERVER" >"$C/gpumod.yaml"
{ printf 'id: story\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 512\n' "$(free_port)" "$STORY_MODEL"
  printf 'unit_vars: {n_gpu_layers: 0, threads: 1, parallel: 1}\n'; } >"$C/presets/story.yaml"

t_spawn daemon "$GPUMOD_BIN" serve --foreground
t_wait 10 gpumod status || t_fail "the daemon never answered"
gpumod service start story --timeout 120 >/dev/null

t_begin "a threads grid on the real engine: a TSV row per variant, the service given back as configured"
t_run 0 gpumod tune story --param threads=1,2 --objective engine_tps --rounds 3 --requests 8 --warmup 1 \
    --prompt-tokens 32 --gen-tokens 32 --tsv "$T/real.tsv" --json "$T/real.json" --no-store
cat "$T/out" | sed 's/^/# /'
sed 's/^/# /' "$T/real.tsv"
# the baseline and 2 variants, plus a FINAL when one won
rows=$(tail -n +2 "$T/real.tsv" | wc -l)
want=$((3 + $(jq '.outcomes.FINAL' "$T/real.json")))
t_eq "$rows" "$want" "TSV rows"
t_eq "$(tail -n +2 "$T/real.tsv" | cut -f1,2 | head -3 | tr '\t\n' '= ')" "baseline=preset threads=1 threads=2 " "rows"
t_jq "$T/real.json" '[.rows[] | select(.variable == "threads") | .outcome] | all(. == "IMPROVEMENT" or . == "NO CHANGE" or . == "REGRESSION")' true
t_jq "$T/real.json" '[.rows[] | select(.outcome == "BASELINE")][0].median > 0' true
t_eq "$(gpumod service show story --json | jq -r '.state + " " + (.overrides | tostring)')" "ready null" "state after"
t_end

kill -TERM "$_t_last_pid" 2>/dev/null
t_done
