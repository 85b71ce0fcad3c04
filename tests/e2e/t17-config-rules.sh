#!/usr/bin/env bash
# config check applies the rule table (src/core/rules.c): a refuse rule is
# an error, a warn rule a warning, each naming the preset file and the
# rule id; the GPU rules see the compute capability the fake NVML reports
# (12.0: SM_120, 12.1: GB10) and fire only when it is known; --no-files
# (or no NVML) leaves only the GPU-independent rules.  `config rules`
# prints the table and docs/rules.md embeds the current one.
. "$(dirname "$0")/lib.sh"

C=$T/cfg
mkdir -p "$C/presets" "$T/models"
: >"$T/models/m.gguf"
: >"$T/models/draft.gguf"
cat >"$C/gpumod.yaml" <<EOF
drivers:
  llamacpp: {binary: $FAKELLM_BIN}
  vllm: {binary: $FAKELLM_BIN}
EOF
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json GPUMOD_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1
# nvml CC: one GPU of that compute capability ("" : the key left out)
nvml() {
    local cc=""
    [ -n "$1" ] && cc=", \"compute_capability\": \"$1\""
    printf '{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake", "total_mb": 24576, "memory": "%s"%s}], "processes": []}\n' \
        "${2:-ok}" "$cc" >"$T/nvml.new"
    mv "$T/nvml.new" "$T/nvml.json"
}
preset() { cat >"$C/presets/$1.yaml"; }

# mtp: refused anywhere; kvq: q8_0 KV (SM_120 warns); vl: vLLM on GB10
# without the Triton backend, an NVFP4 model without Marlin, the removed
# flag (refused anywhere)
preset mtp <<YAML
id: mtp
driver: llamacpp
port: 7070
model_path: $T/models/m.gguf
unit_vars:
  spec_type: draft-mtp
  parallel: 2
YAML
preset kvq <<YAML
id: kvq
driver: llamacpp
port: 7071
model_path: $T/models/m.gguf
unit_vars:
  cache_type_k: q8_0
  cache_type_v: q8_0
YAML
preset vl <<YAML
id: vl
driver: vllm
port: 7072
model_id: nvidia/Qwen3-30B-A3B-NVFP4
unit_vars:
  max_num_seqs: 8
args: [--disable-log-requests]
YAML

t_begin "cc 12.0: the MTP and the removed-flag rules refuse, the SM_120 KV rule warns, no GB10 rule"
nvml 12.0
t_run 2 gpumod --config-dir "$C" config check
t_has err "$C/presets/mtp.yaml:1:1: error: preset 'mtp': rule llama-mtp-parallel: spec_type draft-mtp with parallel 2: MTP speculative decoding supports one slot only"
t_has err "$C/presets/vl.yaml:1:1: error: preset 'vl': rule vllm-disable-log-requests: --disable-log-requests in args/extra_args:"
t_has err "$C/presets/kvq.yaml:1:1: warning: preset 'kvq': rule llama-kv-quant-sm120: cache_type_k q8_0, cache_type_v q8_0: on SM_120"
t_lacks err "vllm-gb10"
t_has out "3 presets, 0 modes: 2 errors, 1 warning"
t_end

t_begin "cc 12.1 (GB10): the GB10 vLLM rules warn, the SM_120 rule does not"
nvml 12.1 not_supported
t_run 2 gpumod --config-dir "$C" config check --json
t_jq out '[.errors[].message | capture("rule (?<id>[a-z0-9-]+)").id] | sort | join(",")' \
    "llama-mtp-parallel,vllm-disable-log-requests"
t_jq out '[.warnings[].message | capture("rule (?<id>[a-z0-9-]+)").id] | sort | join(",")' \
    "vllm-gb10-attention,vllm-gb10-nvfp4-marlin"
t_jq out '[.warnings[] | select(.message | contains("vllm-gb10-nvfp4-marlin"))][0].file' "$C/presets/vl.yaml"
t_jq out '[.warnings[] | select(.message | contains("vllm-gb10-attention"))][0].message' \
    "preset 'vl': rule vllm-gb10-attention: no attention backend chosen (neither VLLM_ATTENTION_BACKEND nor --attention-backend): on GB10 (sm_121) vLLM needs the Triton attention backend: set VLLM_ATTENTION_BACKEND=TRITON_ATTN (or --attention-backend TRITON_ATTN)"
t_end

t_begin "GB10 fixed as the seed did: Triton attention, Marlin NVFP4, no removed flag; the MTP preset at one slot"
preset vl <<YAML
id: vl
driver: vllm
port: 7072
model_id: nvidia/Qwen3-30B-A3B-NVFP4
env:
  VLLM_ATTENTION_BACKEND: TRITON_ATTN
  VLLM_NVFP4_GEMM_BACKEND: marlin
YAML
sed -i 's/parallel: 2/parallel: 1/' "$C/presets/mtp.yaml"
t_run 0 gpumod --config-dir "$C" config check
t_has out "3 presets, 0 modes: 0 errors, 0 warnings"
t_end

t_begin "GB10 refuses an explicit FlashInfer backend"
sed -i 's/TRITON_ATTN/FLASHINFER/' "$C/presets/vl.yaml"
t_run 2 gpumod --config-dir "$C" config check
t_has err "$C/presets/vl.yaml:1:1: error: preset 'vl': rule vllm-gb10-flashinfer: VLLM_ATTENTION_BACKEND FLASHINFER:"
t_end

t_begin "unified memory of unknown cc counts as GB10; an unknown discrete GPU runs no GPU rule"
nvml "" not_supported
t_run 2 gpumod --config-dir "$C" config check
t_has err "rule vllm-gb10-flashinfer"
nvml ""
t_run 0 gpumod --config-dir "$C" config check
t_lacks err "rule "
t_end

t_begin "--no-files or no NVML: only the rules for any GPU"
nvml 12.0
sed -i 's/parallel: 1/parallel: 3/' "$C/presets/mtp.yaml"
t_run 2 gpumod --config-dir "$C" config check --no-files
t_has err "rule llama-mtp-parallel: spec_type draft-mtp with parallel 3"
t_lacks err "llama-kv-quant-sm120"
t_lacks err "vllm-gb10"
GPUMOD_NVML_LIB=/nonexistent/libnvidia-ml.so.1 t_run 2 gpumod --config-dir "$C" config check
t_has err "rule llama-mtp-parallel"
t_lacks err "llama-kv-quant-sm120"
t_lacks err "vllm-gb10"
t_end

t_begin "config rules prints the table; docs/rules.md embeds the current one (scripts/update-docs)"
t_run 0 gpumod config rules
t_has out "| id | engine | GPU | severity | when | text | source |"
t_has out '| `llama-kv-quant-sm120` | llamacpp | cc 12.0 (consumer Blackwell, SM_120) | warn |'
t_run 2 gpumod config rules --json-please
t_has err "config rules: unexpected argument '--json-please'"
gpumod config rules >"$T/rules.md"
awk '/<!-- rules:begin -->/{f=1;next}/<!-- rules:end -->/{f=0}f' "$GPUMOD_SRC/docs/rules.md" >"$T/doc.md"
if ! diff -u "$T/doc.md" "$T/rules.md" >"$T/diff"; then
    t_fail "docs/rules.md is stale: run scripts/update-docs"
    head -20 "$T/diff" | sed 's/^/#   /'
fi
t_end

t_done
