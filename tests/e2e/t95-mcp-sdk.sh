#!/usr/bin/env bash
# gpumod mcp against an independent client: the official MCP TypeScript SDK
# (@modelcontextprotocol/sdk, pinned in tests/mcp/package.json, installed
# into build/cache/mcp-sdk by scripts/install-deps --test-cache; make test
# does it) spawns `gpumod mcp` over stdio and drives every tool and
# resource (tests/mcp/sdk-client.mjs): initialize and the version it
# negotiates, tools/list with schemas and annotations, each tool with valid
# arguments (structuredContent and its JSON text), an unknown tool, bad
# arguments, each resource as JSON and Markdown, a subscription that sees
# a start made with the CLI, start/stop, a switch with progress and one
# with wait false followed by switch_status, and a --read-only session.
# A daemon with three fakellm services, two modes, the fake NVML (one
# 24 GiB GPU), a load and an eval result stored; a GGUF from
# tests/fixtures/models for model_info on a path.  No SDK, no node: fail,
# never skip.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$BUILD/fakes/nvidia-smi
cat >"$T/nvml.json" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300,
              "memory": "ok", "compute_capability": "8.9"}],
 "processes": [], "release_delay_ms": 0}
EOF
SDK_DIR=${MCP_SDK_DIR:-$GPUMOD_SRC/build/cache/mcp-sdk}
CLIENT=$GPUMOD_SRC/tests/mcp/sdk-client.mjs

t_begin "node and the MCP SDK are there (scripts/install-deps --test-cache build/cache)"
command -v node >/dev/null || t_fail "no node (scripts/install-deps installs nodejs)"
[ -f "$SDK_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
    t_fail "no @modelcontextprotocol/sdk in $SDK_DIR: run scripts/install-deps --test-cache build/cache (make test does)"
want=$(jq -r '.dependencies["@modelcontextprotocol/sdk"]' "$GPUMOD_SRC/tests/mcp/package.json")
got=$(jq -r .version "$SDK_DIR/node_modules/@modelcontextprotocol/sdk/package.json" 2>/dev/null)
t_eq "$got" "$want" "the installed SDK's version"
t_end

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
preset chat "$(free_port)"
# emb loads for 400 ms: a switch to B has phases apart in time, so that
# some progress reaches the SDK before the result (see sdk-client.mjs)
preset emb "$(free_port)" 'env: {FAKELLM_LOAD_MS: "400"}'
preset spare "$(free_port)"
mkdir -p "$C/modes"
printf 'id: A\nservices: [chat]\n' >"$C/modes/A.yaml"
printf 'id: B\nname: Both\nservices: [chat, emb]\n' >"$C/modes/B.yaml"
daemon_start

t_begin "the scenario: mode A (chat ready), a load and an eval result stored"
t_run 0 gpumod mode switch A
t_eq "$(state_of chat),$(state_of emb),$(state_of spare)" "ready,down,down" "states"
results() {
    curl -s -o /dev/null -w '%{http_code}' --max-time $((10 * S)) --unix-socket "$GPUMOD_SOCKET" \
        -H 'Content-Type: application/json' --data-binary "$1" http://gpumod/results
}
t_eq "$(results '{"schema":"gpumod.bench/1","kind":"load","target":{"spec":"chat","via":"router","service":"chat","config_hash":"c0ffee","model":"chat"},"points":[{"x_name":"concurrency","x":1,"iterations":[],"summary":{"out_tput":{"median":310.5,"lo":300,"hi":320,"n":3}}}]}')" 201 "POST /results (load)"
t_eq "$(results '{"schema":"gpumod.eval/1","kind":"eval","target":{"spec":"chat","service":"chat"},"items":[],"summary":{"items":7,"pass":5,"fail":2,"error":0,"accuracy":{"est":0.7143,"lo":0.359,"hi":0.918}}}')" 201 "POST /results (eval)"
t_end

# sdk SECTION...: the SDK client on those sections; its output in $T/out
sdk() {
    GPUMOD_BIN=$GPUMOD_BIN MCP_SDK_DIR=$SDK_DIR MCP_T_SERVICES=chat,emb,spare MCP_T_SPARE=spare \
        MCP_T_MODES=A,B MCP_T_GGUF=$FIXTURES/models/llama-2-tiny-random.gguf MCP_T_GGUF_CTX=4096 \
        MCP_T_GPU_NAME="Fake 24GB" timeout $((120 * S)) node "$CLIENT" "$@"
}
section() { # NAME WHAT: one case per section of sdk-client.mjs
    t_begin "SDK client: $2"
    sdk "$1" >"$T/out" 2>&1 </dev/null
    local rc=$?
    grep -c '^  ok - ' "$T/out" | sed 's/^/# checks passed: /'
    if [ "$rc" -ne 0 ]; then
        t_fail "node sdk-client.mjs $1 exited $rc"
        # the failing check, its reason and the server's stderr (every check before it passed)
        sed -n '/^  not ok\|^Bail out/,$p' "$T/out" | head -40 | sed 's/^/#   /'
    fi
    [ "$rc" -ne 0 ] || grep -q "checks passed" "$T/out" || t_fail "no 'checks passed' line"
    t_end
}

section tools "initialize (2025-06-18 negotiated), tools/list, every tool with valid arguments"
section errors "an unknown tool is -32602; bad arguments refused naming them; daemon refusals are isError"
section resources "resources and templates listed; each read as JSON and Markdown; unknown URIs refused"
section subscribe "a subscription sees a start made with the CLI; none after unsubscribe"
section mutate "start_service (wait true, false), stop_service"
section switch "switch_mode with progress notifications; wait false, then switch_status"
section readonly "--read-only lists no mutating tool and refuses them"

t_begin "after the sessions: mode A again, spare down, the daemon answers"
t_run 0 gpumod mode current --json
t_jq out .mode A
t_eq "$(state_of spare)" down "spare"
t_end

t_begin "the daemon stops cleanly"
stop_all_clean
t_end
t_done
