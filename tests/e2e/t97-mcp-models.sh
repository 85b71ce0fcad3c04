#!/usr/bin/env bash
# gpumod mcp's Hub tools (search_hf_models, list_gguf_files,
# fetch_model_config, generate_preset, pull_model) over its stdio pipe
# (tests/mcp/pipe.py hub_tools, hub_pull) against the fake Hugging Face
# Hub, HF_ENDPOINT in the environment: each tool's answer and one error
# each; arguments the schema subset cannot check are -32602; pull_model
# only with --allow-pull, which --read-only refuses at start; with it a
# pull of one file lands in models_dir with the Hub's sha256.
. "$(dirname "$0")/lib.sh"

fake_gpu_24g
fake_hub
printf 'models_dir: %s\n' "$T/models" >"$T/config/gpumod.yaml"
export GPUMOD_BIN MCP_STDERR=$T/mcp.err MODELS_DIR=$T/models
export FIXTURE_SHA_OF=$FIXTURES/models/aidreams260K-f32.gguf
pipe() { python3 "$GPUMOD_SRC/tests/mcp/pipe.py" "$1"; }

t_begin "the Hub's tools: search, files with estimates and a budget, config, preset; their errors"
t_run 0 pipe hub_tools
t_end

t_begin "--allow-pull lists pull_model; it pulls one file, verified, into models_dir; errors are tool errors"
t_run 0 pipe hub_pull
t_run 0 test -f "$T/models/test/tiny-GGUF/aidreams260K-f32.gguf"
t_run 0 cmp "$T/models/test/tiny-GGUF/aidreams260K-f32.gguf" "$FIXTURES/models/aidreams260K-f32.gguf"
t_end

t_begin "--read-only with --allow-pull is refused at start"
t_run 2 gpumod mcp --read-only --allow-pull
t_has err "--allow-pull and --read-only"
t_run 0 gpumod mcp --help
t_has out "--allow-pull"
t_end

t_done
