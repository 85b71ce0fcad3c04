#!/usr/bin/env bash
# A configuration in the Python project's format, with its shipped quirks,
# loads with warnings only; the YAML 1.1 dialect is the one it reads.
. "$(dirname "$0")/lib.sh"

PY=$FIXTURES/config/python-compat

t_begin "the Python-format directory loads with warnings only"
HOME=/home/u t_run 0 gpumod --config-dir "$PY" config check --no-files
t_has out "9 presets, 3 modes: 0 errors"
t_lacks err "error:"
t_end

t_begin "keys the Python project ignored are listed as warnings"
HOME=/home/u t_run 0 gpumod --config-dir "$PY" config check --no-files
t_has err "vllm-tts.yaml:9:3: warning: preset 'vllm-tts': unit_vars: key 'omni' is accepted but gpumod does not act on it (the Python project ignored it too)"
t_has err "qwen3-asr.yaml:12:3: warning: preset 'qwen3-asr': unit_vars: key 'lazy_load' is accepted but gpumod does not act on it"
t_has err "qwen-2-5-72b-gguf.yaml:8:16: warning: preset 'qwen-2-5-72b-gguf': key 'unit_template' is accepted but gpumod does not act on it"
t_has err "code.yaml:5:16: warning: mode 'code': key 'total_vram_mb' is accepted but gpumod does not act on it"
t_has err "unit_vars.extra_args repeats '--parallel', which gpumod already passes as '--parallel 1'"
t_end

t_begin "--json puts them under warnings"
HOME=/home/u t_run 0 gpumod --config-dir "$PY" config check --no-files --json
t_jq out '.ok' true
t_jq out '.errors | length' 0
t_jq out '[.warnings[].message | select(test("omni"))] | length' 1
t_end

t_begin "router-mode preset: no -m, --models-dir with \$HOME expanded; only what it sets (no -c, --parallel or -fit: the router would put them over every model's own)"
HOME=/home/u t_run 0 gpumod --config-dir "$PY" config show nemotron-3-nano --json
t_jq out '.argv | join(" ")' "llama-server --models-dir /home/u/models/gguf --models-max 1 --no-models-autoload --host 127.0.0.1 --port 7070 -ngl all -fa on --jinja --metrics"
t_jq out '.env | index("GGML_CUDA_NO_PINNED=1") != null' true
t_end

t_begin "keys the Python project dropped now act: ctx_size, n_cpu_moe, threads"
t_run 0 gpumod --config-dir "$PY" config show qwen3-coder-next --json
t_jq out '.argv | join(" ")' "llama-server --models-dir /opt/models --models-max 1 --models-preset /opt/models/llama_cpp_gguf_presets.ini --host 127.0.0.1 --port 7070 -c 65536 -ngl 45 -t 16 --n-cpu-moe 20 --metrics"
t_end

t_begin "extra_args string is split into words, \${HOME} in unit_vars expanded"
HOME=/home/u t_run 0 gpumod --config-dir "$PY" config show gpt-oss-20b-multi --json
t_jq out '.argv[2]' "/home/u/models/gpt-oss-20b-mxfp4.gguf"
t_jq out '.argv[-5:] | join("|")' "--parallel|5|--cont-batching|--threads|16"
t_end

t_begin "hf_overrides JSON string becomes one compact --hf-overrides word"
t_run 0 gpumod --config-dir "$PY" config show vllm-reranker --json
t_jq out '.argv | index("--hf-overrides") as $i | .[$i+1] | fromjson | .architectures[0]' "Qwen3ForSequenceClassification"
t_jq out '.argv | index("--runner") as $i | .[$i+1]' "pooling"
t_jq out '.env | index("VLLM_SERVER_DEV_MODE=1") != null' true
t_end

t_begin "YAML 1.1: yes/no/on/off booleans and << merge keys"
C=$T/y; mkdir -p "$C/presets"
cat >"$C/presets/base.yaml" <<'YAML'
id: merged
driver: llamacpp
port: 7070
model_path: /m.gguf
unit_vars:
  <<: {jinja: yes, flash_attn: off, metrics: no, parallel: 2}
  parallel: 3
YAML
t_run 0 gpumod --config-dir "$C" config show merged --json
t_jq out '.driver_options.jinja' true
t_jq out '.driver_options.flash_attn' false
t_jq out '.driver_options.metrics' false
t_jq out '.driver_options.parallel' 3
t_end

t_begin "merge keys with anchors and aliases across the file"
cat >"$C/presets/base.yaml" <<'YAML'
id: merged
driver: llamacpp
port: 7070
model_path: /m.gguf
env: &e {A: "1", B: on}
unit_vars:
  <<: [{threads: 4}, {threads: 8, parallel: 2}]
args: [--x]
YAML
t_run 0 gpumod --config-dir "$C" config show merged --json
t_jq out '.driver_options.threads' 4
t_jq out '.driver_options.parallel' 2
t_jq out '.preset.env.B' true
t_end

t_begin "a quoted 'yes' is a string, not a boolean"
cat >"$C/presets/base.yaml" <<'YAML'
id: merged
driver: llamacpp
port: 7070
model_path: /m.gguf
unit_vars: {jinja: "maybe"}
YAML
t_run 2 gpumod --config-dir "$C" config check --no-files
t_has err "unit_vars: jinja: expected true, false or auto, found 'maybe'"
t_end

t_begin "alias expansion is bounded (billion laughs)"
{
    echo 'id: bomb'; echo 'driver: llamacpp'; echo 'port: 7070'; echo 'model_path: /m.gguf'
    echo 'a: &a ["x","x","x","x","x","x","x","x","x","x"]'
    prev=a
    for l in b c d e f g; do
        echo "$l: &$l [*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev]"; prev=$l
    done
} >"$C/presets/base.yaml"
t_run 2 gpumod --config-dir "$C" config check --no-files
t_has err "nodes after alias expansion"
t_end

t_done
