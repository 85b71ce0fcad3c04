#!/usr/bin/env bash
# Keys that parse but are not acted on (unit_vars.sleep_level: the
# level comes from sleep_mode) warn, naming what does not happen, at config check and whenever the daemon loads the configuration
# (start and reload); kv_cache_per_1k, which nothing reads, warns as
# accepted and not acted on.  None of them is an error.  (unit_vars.
# default_model is acted on: a request naming a router-mode service goes
# to that model, docs/router.md; it does not warn; nor does canary, which
# is acted on since issue 17: docs/canary.md, tests/e2e/t67-canary.sh.)
. "$(dirname "$0")/lib.sh"

C=$T/cfg
reset_cfg() { rm -rf "$C"; mkdir -p "$C/presets"; }
check() { t_run "$1" gpumod --config-dir "$C" config check --no-files; }

t_begin "canary is acted on: no warning; expect without prompt is an error"
reset_cfg
printf 'id: x\ndriver: llamacpp\nport: 7070\nmodel_path: /m.gguf\ncanary: {prompt: "2+2=", expect: "4", max_tokens: 4}\n' \
    >"$C/presets/x.yaml"
check 0
t_has out "1 preset, 0 modes: 0 errors, 0 warnings"
printf 'id: x\ndriver: llamacpp\nport: 7070\nmodel_path: /m.gguf\ncanary: {expect: "4"}\n' >"$C/presets/x.yaml"
check 2
t_has err "$C/presets/x.yaml:5:9: error: preset 'x': canary: expect needs a prompt (the built-in prompts have their own answers)"
printf 'id: x\ndriver: llamacpp\nport: 7070\nmodel_path: /m.gguf\ncanary: {prompt: "hi", expct: "4"}\n' >"$C/presets/x.yaml"
check 2
t_has err "canary: unknown key 'expct' (did you mean 'expect'?)"
t_end

t_begin "canary: false does not warn"
printf 'id: x\ndriver: llamacpp\nport: 7070\nmodel_path: /m.gguf\ncanary: false\n' >"$C/presets/x.yaml"
check 0
t_has out "0 errors, 0 warnings"
t_end

t_begin "sleep_mode l1 on vllm is acted on: no warning; a non-loopback host is an error"
reset_cfg
printf 'id: v\ndriver: vllm\nport: 7070\nmodel_id: org/m\nsleep_mode: l1\n' >"$C/presets/v.yaml"
check 0
t_has out "0 errors, 0 warnings"
printf 'id: v\ndriver: vllm\nport: 7070\nmodel_id: org/m\nsleep_mode: l2\nunit_vars: {host: 0.0.0.0}\n' >"$C/presets/v.yaml"
check 2
t_has err "$C/presets/v.yaml:6:19: error: preset 'v': unit_vars: sleep_mode l2 uses the engine's unauthenticated sleep/load endpoints: host must be a loopback address (127.0.0.1, ::1 or localhost), not '0.0.0.0'"
t_end

t_begin "sleep_mode router on llama.cpp router mode is acted on"
reset_cfg
printf 'id: r\ndriver: llamacpp\nport: 7070\nsleep_mode: router\nunit_vars: {models_dir: /models}\n' >"$C/presets/r.yaml"
check 0
t_has out "0 errors, 0 warnings"
t_end

t_begin "the loopback rule: 127.0.0.0/8, ::1 and localhost pass; a name that begins with 127. does not"
reset_cfg
for h in 127.0.0.2 ::1 localhost ::ffff:127.0.0.1; do
    printf 'id: v\ndriver: vllm\nport: 7070\nmodel_id: org/m\nsleep_mode: l1\nunit_vars: {host: "%s"}\n' "$h" >"$C/presets/v.yaml"
    check 0
    t_has out "0 errors, 0 warnings"
done
printf 'id: v\ndriver: vllm\nport: 7070\nmodel_id: org/m\nsleep_mode: l1\nunit_vars: {host: 127.example.com}\n' >"$C/presets/v.yaml"
check 2
t_has err "sleep_mode l1 uses the engine's unauthenticated sleep/load endpoints: host must be a loopback address (127.0.0.1, ::1 or localhost), not '127.example.com'"
t_end

t_begin "llama.cpp router mode with sleep_mode none on a non-loopback host: a warning (gpumod calls /models/load)"
reset_cfg
printf 'id: r\ndriver: llamacpp\nport: 7070\nunit_vars: {models_dir: /models, host: 0.0.0.0}\n' >"$C/presets/r.yaml"
check 0
t_has err "$C/presets/r.yaml:4:40: warning: preset 'r': unit_vars: router mode (models_dir) has gpumod call the engine's unauthenticated /models/load and /models/unload: host should be a loopback address (127.0.0.1, ::1 or localhost), not '0.0.0.0'"
printf 'id: r\ndriver: llamacpp\nport: 7070\nunit_vars: {models_dir: /models}\n' >"$C/presets/r.yaml"
check 0
t_has out "0 errors, 0 warnings"
t_end

t_begin "sleep_mode l2 on fastapi warns that it cannot sleep"
reset_cfg
printf 'id: f\ndriver: fastapi\nport: 7070\nsleep_mode: l2\n' >"$C/presets/f.yaml"
check 0
t_has err "$C/presets/f.yaml:4:13: warning: preset 'f': sleep_mode l2 is a vLLM sleep level; driver fastapi cannot sleep, so a stop frees this service"
t_end

t_begin "unit_vars.sleep_level warns; default_model, which routes, does not"
reset_cfg
printf 'id: v\ndriver: vllm\nport: 7070\nmodel_id: org/m\nunit_vars: {sleep_level: 2}\n' >"$C/presets/v.yaml"
printf 'id: r\ndriver: llamacpp\nport: 7071\nunit_vars: {models_dir: /models, default_model: big}\n' >"$C/presets/r.yaml"
check 0
t_has err "$C/presets/v.yaml:5:13: warning: preset 'v': unit_vars: key 'sleep_level' is accepted but not acted on: the level of each POST /sleep comes from sleep_mode (l1 or l2)"
t_lacks err "default_model"
t_end

t_begin "kv_cache_per_1k warns: accepted, not acted on"
reset_cfg
printf 'id: k\ndriver: llamacpp\nport: 7070\nmodel_path: /m.gguf\nkv_cache_per_1k: 25\n' >"$C/presets/k.yaml"
check 0
t_has err "$C/presets/k.yaml:5:18: warning: preset 'k': key 'kv_cache_per_1k' is accepted but gpumod does not act on it"
t_end

# the daemon: the same warnings in its log at start and at reload
D=$T/config
mkdir -p "$D/presets"
cat >"$D/gpumod.yaml" <<EOF
router:
  enabled: false
EOF
printf 'id: x\ndriver: llamacpp\nport: %s\nmodel_path: /m.gguf\nkv_cache_per_1k: 25\n' "$(free_port)" >"$D/presets/x.yaml"
t_spawn daemon "$GPUMOD_BIN" serve --foreground
t_wait 10 gpumod status || t_fail "the daemon never answered"

t_begin "daemon start logs the warning"
t_wait 5 grep -qF "key 'kv_cache_per_1k' is accepted but gpumod does not act on it" "$T/daemon.log" ||
    t_fail "no kv_cache_per_1k warning in the daemon's log"
t_end

t_begin "reload logs the warning, prints it, and the reload event carries it"
printf 'id: v\ndriver: vllm\nport: %s\nmodel_id: org/m\nunit_vars: {sleep_level: 2}\n' "$(free_port)" >"$D/presets/v.yaml"
t_run 0 gpumod reload
t_has err "v.yaml:5:13: warning: preset 'v': unit_vars: key 'sleep_level' is accepted but not acted on"
t_wait 5 grep -qF "reload: $D/presets/v.yaml:5:13: preset 'v': unit_vars: key 'sleep_level' is accepted but not acted on" \
    "$T/daemon.log" || t_fail "no sleep_level warning in the daemon's log after reload"
t_run 0 gpumod events --json
t_jq out '[.events[] | select(.kind == "reload")] | last | .data.warnings | map(.message) | map(select(test("sleep_level"))) | length' 1
t_end

t_done
