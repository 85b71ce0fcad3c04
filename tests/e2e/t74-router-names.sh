#!/usr/bin/env bash
# t74-router-names: every name the router accepts is one the engine behind
# it accepts (docs/interfaces.md "Model names").  fakellm plays a vLLM
# service (which answers 404 for a name it does not serve), a remote (a
# vLLM-shaped fakellm serving "remote-chat"), and llama.cpp router-mode
# services (which answer 400 for a model they do not list).  A vLLM
# service is reached by its model_id; a remote by its id, an alias or
# "default" gets the remote's model_id, and one without model_id is a 400
# saying so; a router-mode service named by its id goes to its
# default_model, else its only model, else a 400 listing them.
. "$(dirname "$0")/lib.sh"
# the vLLM service needs a GPU: the fake NVML's one
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$BUILD/fakes/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": []}
JSON
PV=$(free_port) PR=$(free_port) P1=$(free_port) P2=$(free_port) P3=$(free_port)
TINY=$GPUMOD_SRC/tests/fixtures/models/llama-2-tiny-random.gguf
mkdir -p "$T/one" "$T/two"
ln -s "$MODEL" "$T/one/aidreams260K-f32.gguf"
ln -s "$MODEL" "$T/two/aidreams260K-f32.gguf"
ln -s "$TINY" "$T/two/llama-2-tiny-random.gguf"
{
    printf 'drivers:\n  llamacpp: {binary: fakellm}\n  vllm: {binary: fakellm}\n'
    printf 'supervisor: {stop_timeout: 2s, health_interval: 1s}\n'
    printf 'router: {listen: "127.0.0.1:%s"}\n' "$RP"
} >"$C/gpumod.yaml"
printf 'id: vchat\ndriver: vllm\nport: %s\nmodel_id: org/chat-7b\ncontext_size: 128\ndevices: [0]\nmemory: {gpu_mb: 100, host_mb: 100}\n' "$PV" \
    >"$C/presets/vchat.yaml"
printf 'id: far\ndriver: remote\nmodel_id: remote-chat\naliases: [cloud]\nremote: {base_url: "http://127.0.0.1:%s/v1"}\n' \
    "$PR" >"$C/presets/far.yaml"
printf 'id: bare\ndriver: remote\nremote: {base_url: "http://127.0.0.1:%s/v1"}\n' "$PR" >"$C/presets/bare.yaml"
router_preset() {
    printf 'id: %s\ndriver: llamacpp\nport: %s\nmemory: {host_mb: 100}\nunit_vars: {models_dir: %s%s}\n' "$1" "$2" "$3" \
        "${4:+, default_model: $4}" >"$C/presets/$1.yaml"
}
router_preset lr1 "$P1" "$T/one"
router_preset lr2 "$P2" "$T/two" llama-2-tiny-random
router_preset lr3 "$P3" "$T/two"

# ask MODEL: a chat request through the router; status printed, body in $T/o
ask() { rcurl "$T/o" "$RURL/v1/chat/completions" -d "$(chat "$1")"; }

fakellm_spawn remote -- serve remote/base --host 127.0.0.1 --port "$PR" --served-model-name remote-chat \
    --max-model-len 128
wait_healthy "$PR" || t_fail "the remote fake never came up"
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"

t_begin "a vLLM service is reached by its model_id (vLLM serves it among its names), its id and 'default'"
t_eq "$(ask org/chat-7b)" 200 "by model_id"
t_jq "$T/o" .model org/chat-7b
t_eq "$(ask vchat)" 200 "by id"
t_run 0 gpumod route default vchat
t_eq "$(ask default)" 200 "by default"
t_jq "$T/o" .model vchat
t_end

t_begin "a remote as the default: the remote's model_id is sent, never gpumod's id"
t_run 0 gpumod route default far
t_eq "$(ask default)" 200 "by default"
t_jq "$T/o" .model remote-chat
t_eq "$(ask far)" 200 "by id"
t_jq "$T/o" .model remote-chat
t_eq "$(ask cloud)" 200 "by alias"
t_jq "$T/o" .model remote-chat
t_eq "$(ask remote-chat)" 200 "by its model_id"
t_jq "$T/o" .model remote-chat
t_end

t_begin "a remote without model_id: a request by its id is a 400 saying what to set"
t_eq "$(ask bare)" 400 "status"
t_jq "$T/o" .error.code model_not_found
t_jq "$T/o" .error.message "service 'bare' is a remote without model_id: gpumod does not know the remote's name for its model; set model_id in its preset to that name"
t_eq "$(state_of bare)" down "refused before it was activated"
t_end

t_begin "a llama.cpp router-mode service named by its id: its only model, its default_model, else a 400 naming them"
t_eq "$(ask lr1)" 200 "its only model"
t_jq "$T/o" .model aidreams260K-f32
t_eq "$(ask lr2)" 200 "its default_model"
t_jq "$T/o" .model llama-2-tiny-random
t_run 0 gpumod route default lr2
t_eq "$(ask default)" 200 "by default"
t_jq "$T/o" .model llama-2-tiny-random
t_eq "$(ask lr3)" 400 "several models and no default_model"
t_jq "$T/o" .error.message "service 'lr3' serves several models ('aidreams260K-f32', 'llama-2-tiny-random') and sets no unit_vars.default_model: name one of them"
t_end

t_begin "gpumod route resolve: the router's own answer (service, kind, the model the engine gets)"
t_run 0 gpumod route resolve cloud
t_has out "cloud -> far (alias), sent as 'remote-chat'"
t_run 0 gpumod route resolve org/chat-7b --json
t_jq out .service vchat
t_jq out .kind model_id
t_jq out .upstream_model org/chat-7b
t_run 1 gpumod route resolve lr3
t_has out "lr3 -> lr3 (id)"
t_has err "gpumod: route resolve: service 'lr3' serves several models ('aidreams260K-f32', 'llama-2-tiny-random') and sets no unit_vars.default_model: name one of them"
t_run 2 gpumod route resolve nosuch
t_has err "gpumod: route resolve: model 'nosuch' not found; available: "
t_run 2 gpumod route resolve
t_has err "route resolve: expected one NAME"
t_end

t_begin "router mode: only what the preset sets reaches llama-server's command line"
t_run 0 gpumod config show lr2 --json
t_jq out '.argv | map(select(. == "-c" or . == "--parallel" or . == "-fit" or . == "-ngl")) | length' 0
t_end

daemon_stop
stop_all_clean
t_done
