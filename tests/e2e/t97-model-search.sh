#!/usr/bin/env bash
# gpumod model search and model config against the fake Hugging Face Hub
# (tests/fakes/fakehf.py over the repositories tests/fakes/hfgen.py
# builds): a substring, an author, --limit (and a wrong one), --task, the
# --json shape, --fit (each result's best file on one fake 24 GiB GPU),
# an HTTP error and no server at all; config.json summed up, and a
# repository without one.
. "$(dirname "$0")/lib.sh"

fake_gpu_24g
fake_hub

t_begin "search: a substring of the id, most downloaded first, as a table"
t_run 0 gpumod model search tiny
t_has out "test/tiny-GGUF"
t_has out "DOWNLOADS"
t_lacks out "synth/"
t_run 0 gpumod model search GGUF
first=$(sed -n 2p "$T/out" | awk '{print $1}')
t_eq "$first" "synth/Big-70B-GGUF" "the most downloaded first"
t_end

t_begin "search: --author alone lists an author's repositories; --limit cuts"
t_run 0 gpumod --json model search --author synth
t_jq out '.count' 2
t_jq out '[.models[].author] | unique | join(",")' synth
t_run 0 gpumod --json model search GGUF --limit 3
t_jq out '.count' 3
t_jq out '.models[0].id' synth/Big-70B-GGUF
t_end

t_begin "search: a wrong --limit, no QUERY, a wrong --task are usage errors"
t_run 2 gpumod model search tiny --limit 0
t_has err "--limit: expected an integer from 1 to 100, found '0'"
t_run 2 gpumod model search tiny --limit 101
t_run 2 gpumod model search
t_has err "give a QUERY (or --author A"
t_run 2 gpumod model search tiny --task poetry
t_has err "expected code, chat, embed or reasoning"
t_run 2 gpumod model search tiny --ctx 4096
t_has err "go with --fit"
t_end

t_begin "search --task: chat is text-generation; embed asks for embedding models (none here)"
t_run 0 gpumod --json model search tiny --task chat
t_jq out '.models[0].id' test/tiny-GGUF
t_jq out '.task' chat
t_run 0 gpumod --json model search GGUF --task embed
t_jq out '.count' 0
t_run 0 gpumod model search GGUF --task code
t_has out "no GGUF repository matches"
t_end

t_begin "search --json: the query, the endpoint, each model's fields"
t_run 0 gpumod --json model search tiny
t_jq out '.query' tiny
t_jq out '.endpoint' "$HF_ENDPOINT"
t_jq out '.models[0] | keys | join(",")' "author,downloads,gated,id,last_modified,likes,pipeline_tag,tags"
t_jq out '.models[0].pipeline_tag' text-generation
t_jq out '.models[0].downloads > 0' true
t_jq out '.models[0].tags | index("gguf") != null' true
t_run 0 gpumod --json model search gated
t_jq out '.models[0].gated' auto
t_end

t_begin "search --fit: each result's best file that fits alone, or why none"
t_run 0 gpumod --json model search GGUF --fit
t_jq out '.models[] | select(.id == "test/tiny-GGUF") | .fit.file | type' string
t_jq out '.models[] | select(.id == "test/tiny-GGUF") | .fit.max_ctx > 0' true
t_jq out '.models[] | select(.id == "synth/Big-70B-GGUF") | .fit.reason' "none fits this host alone"
t_jq out '.models[] | select(.id == "test/gated-GGUF") | .fit.error | test("401")' true
t_run 0 gpumod model search tiny --fit
t_has out "BEST FIT (ALONE)"
t_has out "ctx up to"
t_end

t_begin "search: an HTTP error and no server are errors that say what and where"
t_run 1 gpumod model search tiny --endpoint "$HF_ENDPOINT/nothere"
t_has err "HTTP 404"
t_has err "/nothere/api/models?search=tiny"
t_run 1 env HF_ENDPOINT="http://127.0.0.1:$(free_port)" "$GPUMOD_BIN" model search tiny
t_has err "searching the Hub"
t_run 2 gpumod model search tiny --endpoint http://10.1.2.3
t_has err "only for loopback"
t_end

t_begin "model config: config.json summed up (text and --json)"
t_run 0 gpumod model config hf:test/tiny-GGUF
t_match out "^context_length +[0-9]+"
t_has out "architectures"
t_run 0 gpumod --json model config hf:test/tiny-GGUF
t_jq out '.repo_id' test/tiny-GGUF
t_jq out '.architectures | length > 0' true
t_jq out '.context_length > 0' true
t_jq out '.is_moe' false
t_jq out 'keys | map(select(IN("total_params","num_experts","vocab_size","hidden_size","num_hidden_layers","num_attention_heads","num_key_value_heads","torch_dtype"))) | length' 8
t_end

t_begin "model config: no config.json, no repository, a bad id"
t_run 1 gpumod model config hf:test/split-GGUF
t_has err "has no config.json"
t_run 1 gpumod model config hf:test/nope-GGUF
t_has err "no such repository"
t_run 2 gpumod model config hf:a/../b
t_has err "expected hf:ORG/REPO"
t_run 2 gpumod model config test/tiny-GGUF
t_end

t_done
