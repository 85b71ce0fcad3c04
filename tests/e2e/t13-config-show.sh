#!/usr/bin/env bash
# config show: the resolved configuration, what would run, secrets hidden.
. "$(dirname "$0")/lib.sh"

C=$T/cfg; mkdir -p "$C/presets" "$C/modes"
cat >"$C/presets/s.yaml" <<'YAML'
id: s
driver: vllm
port: 8000
model_id: org/model
aliases: [chat-large]
devices: [0, 1]
env:
  HF_TOKEN: hf_secret_value
  MY_API_KEY: sk-123
  PLAIN: visible
args: [--api-key, sk-cli-secret]
YAML
printf 'id: m\nname: M\ndescription: |\n  two lines\n  of text\nservices: [s]\n' >"$C/modes/m.yaml"

t_begin "settings are shown with every default"
t_run 0 gpumod --config-dir "$C" config show
t_has out "supervisor:"
t_has out "  startup_timeout: 10m"
t_has out "  listen: 127.0.0.1:8010"
t_has out "    mem_available_floor_mb: 2048"
t_has out "#   s                        vllm      port 8000"
t_run 0 gpumod --config-dir "$C" config show --json
t_jq out '.settings.supervisor.startup_timeout_ms' 600000
t_jq out '.settings.memory.watchdog.interval_ms' 500
t_jq out '.settings.drivers.llamacpp.binary' llama-server
t_jq out '.presets[0].id' s
t_end

t_begin "a preset: exact argv and environment, secrets redacted"
t_run 0 gpumod --config-dir "$C" config show s --json
t_jq out '.argv | join(" ")' "vllm serve org/model --host 127.0.0.1 --port 8000 --served-model-name s chat-large org/model --gpu-memory-utilization 0.9 --max-model-len 4096 --tensor-parallel-size 2 --api-key <redacted>"
t_jq out '.env | map(select(startswith("HF_TOKEN"))) | .[0]' "HF_TOKEN=<redacted>"
t_jq out '.env | map(select(startswith("MY_API_KEY"))) | .[0]' "MY_API_KEY=<redacted>"
t_jq out '.env | map(select(startswith("PLAIN"))) | .[0]' "PLAIN=visible"
t_jq out '.env | map(select(startswith("CUDA_VISIBLE_DEVICES"))) | .[0]' "CUDA_VISIBLE_DEVICES=0,1"
t_jq out '.preset.env.HF_TOKEN' "<redacted>"
t_lacks out "hf_secret_value"
t_lacks out "sk-cli-secret"
t_lacks out "sk-123"
t_end

t_begin "text form hides them too"
t_run 0 gpumod --config-dir "$C" config show s
t_has out "argv:"
t_has out '  - "<redacted>"'
t_lacks out "hf_secret_value"
t_lacks out "sk-cli-secret"
t_end

t_begin "a mode"
t_run 0 gpumod --config-dir "$C" config show m --json
t_jq out '.mode.services[0]' s
t_jq out '.mode.description' $'two lines\nof text'
t_end

t_begin "an unknown id exits 2 naming it"
t_run 2 gpumod --config-dir "$C" config show nope
t_has err "config show: no preset or mode 'nope'"
t_end

t_begin "config schema prints the reference tables from the parsing tables"
t_run 0 gpumod config schema
t_has out '| `memory.watchdog.interval` | duration in 0.01s..60s | 500ms |'
t_has out '| `n_gpu_layers` | llamacpp |'
t_has out '| `omni` | — | — | accepted, not acted on (warning)'
t_end

t_begin "docs/configuration.md embeds the current schema"
gpumod config schema >"$T/schema.md"
awk '/<!-- schema:begin -->/{f=1;next}/<!-- schema:end -->/{f=0}f' "$GPUMOD_SRC/docs/configuration.md" >"$T/doc.md"
if ! diff -u "$T/doc.md" "$T/schema.md" >"$T/diff"; then
    t_fail "docs/configuration.md is stale: run scripts/update-docs"; head -20 "$T/diff" | sed 's/^/#   /'
fi
t_end

t_done
