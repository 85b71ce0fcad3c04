#!/usr/bin/env bash
# config check: each kind of bad input exits 2 and names file:line:col and
# what was expected; every error is reported, not only the first.
. "$(dirname "$0")/lib.sh"

C=$T/cfg
reset_cfg() { rm -rf "$C"; mkdir -p "$C/presets" "$C/modes"; }
preset() { cat >"$C/presets/$1.yaml"; }
check() { t_run "$1" gpumod --config-dir "$C" config check --no-files; }

# a valid base preset, written by each case that needs one
good() {
    preset "${1:-good}" <<YAML
id: ${1:-good}
driver: llamacpp
port: ${2:-7070}
model_path: /models/m.gguf
YAML
}

t_begin "a valid minimal preset passes"
reset_cfg; good
check 0
t_has out "1 preset, 0 modes: 0 errors, 0 warnings"
t_end

t_begin "unknown key is an error with did-you-mean and file:line:col"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/m.gguf
contxt_size: 4096
YAML
check 2
t_has err "$C/presets/bad.yaml:5:1: error: preset 'bad': unknown key 'contxt_size' (did you mean 'context_size'?)"
t_end

t_begin "unknown key far from any known key has no suggestion"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/m.gguf
zzzqqq: 1
YAML
check 2
t_has err "bad.yaml:5:1: error: preset 'bad': unknown key 'zzzqqq'"
t_lacks err "did you mean"
t_end

t_begin "wrong type: a list where an integer is expected"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: [1, 2]
model_path: /models/m.gguf
YAML
check 2
t_has err "bad.yaml:3:7: error: preset 'bad': port: expected an integer in 1..65535, found a list"
t_end

t_begin "port outside 1..65535"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 70700
model_path: /models/m.gguf
YAML
check 2
t_has err "bad.yaml:3:7: error: preset 'bad': port: 70700 is out of range: expected an integer in 1..65535"
t_end

t_begin "port 0 is out of range too"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 0
model_path: /models/m.gguf
YAML
check 2
t_has err "port: 0 is out of range"
t_end

t_begin "unknown driver names the choices"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacp
port: 7070
model_path: /models/m.gguf
YAML
check 2
t_has err "bad.yaml:2:9: error: preset 'bad': driver: expected one of llamacpp, vllm, fastapi, docker, command, remote, found 'llamacp' (did you mean 'llamacpp'?)"
t_end

t_begin "control character in a string that reaches an argv"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: "/models/m.gguf\n--evil"
YAML
check 2
t_has err "bad.yaml:4:13: error: preset 'bad': model_path: control character in string"
t_end

t_begin "control character in an args element and in env"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/m.gguf
args: ["--x", "a\tb"]
env: {FOO: "x\ry"}
YAML
check 2
t_has err "bad.yaml:5:15: error: preset 'bad': args[1]: control character in string"
t_has err "bad.yaml:6:12: error: preset 'bad': env.FOO: control character in string"
t_end

t_begin "duplicate key is an error naming the first"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
port: 7071
model_path: /models/m.gguf
YAML
check 2
t_has err "bad.yaml:4:1: error: duplicate key 'port' (first at line 3)"
t_end

t_begin "invalid YAML reports the parser's position"
reset_cfg
preset bad <<'YAML'
id: bad
driver: [llamacpp
port: 7070
YAML
check 2
t_match err "bad.yaml:[0-9]+:[0-9]+: error: invalid YAML"
t_end

t_begin "missing required keys"
reset_cfg
preset bad <<'YAML'
id: bad
model_path: /models/m.gguf
YAML
check 2
t_has err "bad.yaml:1:1: error: preset 'bad': required key 'driver' is missing"
t_end

t_begin "every error is reported, not only the first"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: abc
model_path: /models/m.gguf
context_size: -5
startup_timeout: soon
YAML
check 2
t_has err "bad.yaml:3:7: error: preset 'bad': port: expected an integer in 1..65535, found 'abc'"
t_has err "bad.yaml:5:15: error: preset 'bad': context_size: -5 is out of range"
t_has err "bad.yaml:6:18: error: preset 'bad': startup_timeout: expected a duration"
t_has out "3 errors"
t_end

t_begin "misspelt unit_vars key is an error with did-you-mean"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/m.gguf
unit_vars:
  n_gpu_layer: 10
YAML
check 2
t_has err "bad.yaml:6:3: error: preset 'bad': unit_vars: unknown key 'n_gpu_layer' (did you mean 'n_gpu_layers'?)"
t_end

t_begin "unit_vars value of the wrong type"
reset_cfg
preset bad <<'YAML'
id: bad
driver: vllm
port: 8000
model_id: org/model
unit_vars:
  gpu_mem_util: 1.5
YAML
check 2
t_has err "bad.yaml:6:17: error: preset 'bad': unit_vars: gpu_mem_util: 1.5 is out of range: expected a number in 0.01..1"
t_end

t_begin "extra_args with an unterminated quote"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/m.gguf
unit_vars:
  extra_args: "--foo 'bar"
YAML
check 2
t_has err "bad.yaml:6:15: error: preset 'bad': unit_vars: extra_args: unterminated single quote at offset 6"
t_end

t_begin "model_path and unit_vars.model_path must agree"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/a.gguf
unit_vars:
  model_path: /models/b.gguf
YAML
check 2
t_has err "bad.yaml:6:15: error: preset 'bad': unit_vars.model_path '/models/b.gguf' disagrees with model_path '/models/a.gguf' (line 4)"
t_end

t_begin "context_size and unit_vars.ctx_size must agree"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 7070
model_path: /models/a.gguf
context_size: 8192
unit_vars:
  ctx_size: 4096
YAML
check 2
t_has err "bad.yaml:7:13: error: preset 'bad': unit_vars.ctx_size 4096 disagrees with context_size 8192"
t_end

t_begin "bad id and reserved names"
reset_cfg
preset bad <<'YAML'
id: "bad id"
driver: llamacpp
port: 7070
model_path: /models/a.gguf
aliases: [default]
YAML
check 2
t_has err "bad.yaml:1:5: error: preset 'bad id': id 'bad id' is not valid"
t_has err "aliases[0]: 'default' is reserved"
t_end

t_begin "driver-specific requirements"
reset_cfg
preset a <<'YAML'
id: a
driver: llamacpp
port: 7070
YAML
preset b <<'YAML'
id: b
driver: vllm
port: 8000
YAML
preset c <<'YAML'
id: c
driver: docker
port: 9000
YAML
preset d <<'YAML'
id: d
driver: command
port: 9001
YAML
preset e <<'YAML'
id: e
driver: remote
remote: {base_url: "ftp://x"}
YAML
preset f <<'YAML'
id: f
driver: fastapi
YAML
check 2
t_has err "a.yaml:1:1: error: preset 'a': driver llamacpp needs model_path (single model) or unit_vars.models_dir (router mode)"
t_has err "b.yaml:1:1: error: preset 'b': driver vllm needs model_id or model_path"
t_has err "c.yaml:1:1: error: preset 'c': driver docker needs unit_vars.image"
t_has err "d.yaml:1:1: error: preset 'd': driver command needs command: [program, args...]"
t_has err "e.yaml:3:20: error: preset 'e': remote.base_url 'ftp://x' must start with http:// or https://"
t_has err "f.yaml:1:1: error: preset 'f': required key 'port' is missing"
t_end

t_begin "remote.base_url is checked whole: userinfo, port, query, fragment, host; a remote key with a space"
reset_cfg
n=0
for u in "https://user@api.x/v1" "http://api.x:80x/v1" "http://api.x:+80" "http://api.x:99999" "http://api.x/v1?k=1" \
    "http://api.x/v1#f" "http://:80/v1" "http://a b/v1" "http://[::1/v1"; do
    n=$((n + 1))
    printf 'id: r%s\ndriver: remote\nremote:\n  base_url: "%s"\n' "$n" "$u" >"$C/presets/r$n.yaml"
done
printf 'id: good\ndriver: remote\nremote:\n  base_url: "https://[::1]:8443/api/v1/"\n' >"$C/presets/good.yaml"
printf 'id: k\ndriver: remote\nremote:\n  base_url: "https://api.x/v1"\n  api_key_env: T10_KEY\n' >"$C/presets/k.yaml"
T10_KEY="sk-abc def" t_run 2 gpumod --config-dir "$C" config check --no-files
t_has err "r1.yaml:4:13: error: preset 'r1': remote.base_url 'https://user@api.x/v1' has user information"
t_has err "r2.yaml:4:13: error: preset 'r2': remote.base_url 'http://api.x:80x/v1' has a port that is not all digits"
t_has err "r3.yaml:4:13: error: preset 'r3': remote.base_url 'http://api.x:+80' has a port that is not all digits"
t_has err "r4.yaml:4:13: error: preset 'r4': remote.base_url 'http://api.x:99999' has a port that is not 1..65535"
t_has err "r5.yaml:4:13: error: preset 'r5': remote.base_url 'http://api.x/v1?k=1' has a query"
t_has err "r6.yaml:4:13: error: preset 'r6': remote.base_url 'http://api.x/v1#f' has a fragment"
t_has err "r7.yaml:4:13: error: preset 'r7': remote.base_url 'http://:80/v1' has no host"
t_has err "r8.yaml:4:13: error: preset 'r8': remote.base_url 'http://a b/v1' contains a space"
t_has err "r9.yaml:4:13: error: preset 'r9': remote.base_url 'http://[::1/v1' has an IPv6 literal without its ']'"
t_has err "k.yaml:5:16: error: preset 'k': remote.api_key_env: the variable 'T10_KEY' holds a key with a space or a control character"
t_lacks err "sk-abc"
t_lacks err "good.yaml"
t_has out "11 presets, 0 modes: 10 errors"
t_end

t_begin "a command preset with an unknown placeholder"
reset_cfg
preset cmd <<'YAML'
id: cmd
driver: command
port: 9000
command: [/usr/bin/server, --listen, "{host}:{port}", --name, "{nmae}"]
YAML
check 2
t_match err "cmd.yaml:1:1: error: preset 'cmd': .*\{nmae\}"
t_end

t_begin "duplicate preset ids across files"
reset_cfg; good one 7070
preset two <<'YAML'
id: one
driver: llamacpp
port: 7071
model_path: /models/m.gguf
YAML
check 2
t_has err "$C/presets/two.yaml:1:5: error: preset id 'one' is also defined at $C/presets/one.yaml:1"
t_end

t_begin "an alias that collides with another preset's id or alias"
reset_cfg
preset a <<'YAML'
id: a
driver: llamacpp
port: 7070
model_path: /models/m.gguf
aliases: [chat]
YAML
preset b <<'YAML'
id: b
driver: llamacpp
port: 7071
model_path: /models/m.gguf
aliases: [chat, a]
YAML
check 2
t_has err "b.yaml:5:10: error: preset 'b': alias 'chat' is also an alias of preset 'a' ($C/presets/a.yaml:5)"
t_has err "b.yaml:5:10: error: preset 'b': alias 'a' is the id of preset 'a' ($C/presets/a.yaml:1)"
t_end

t_begin "a mode naming an unknown preset"
reset_cfg; good qwen3-coder 7070
cat >"$C/modes/code.yaml" <<'YAML'
id: code
name: Code
services:
  - qwen3-codr
YAML
check 2
t_has err "$C/modes/code.yaml:4:5: error: mode 'code': unknown preset 'qwen3-codr' (did you mean 'qwen3-coder'?)"
t_end

t_begin "two services of one mode on one port"
reset_cfg; good a 7070; good b 7070
cat >"$C/modes/m.yaml" <<'YAML'
id: m
name: M
services: [a, b]
YAML
check 2
t_has err "$C/modes/m.yaml:3:15: error: mode 'm': 'a' and 'b' both use port 7070 ($C/presets/a.yaml:3, $C/presets/b.yaml:3)"
t_end

t_begin "the same port in different modes is fine"
reset_cfg; good a 7070; good b 7070
printf 'id: m1\nname: M1\nservices: [a]\n' >"$C/modes/m1.yaml"
printf 'id: m2\nname: M2\nservices: [b]\n' >"$C/modes/m2.yaml"
check 0
t_end

t_begin "the mode id none is reserved"
reset_cfg; good
printf 'id: none\nname: N\nservices: []\n' >"$C/modes/n.yaml"
check 2
t_has err "n.yaml:1:5: error: mode 'none': mode id 'none' is reserved"
t_end

t_begin "memory.pins_host: a boolean, else an error with its place"
reset_cfg; good
printf 'id: pin\ndriver: command\nport: 7300\ncommand: [/bin/true]\nmemory: {host_mb: 10, pins_host: sometimes}\n' \
    >"$C/presets/pin.yaml"
check 2
t_has err "pin.yaml:5:34: error: preset 'pin': memory: pins_host: expected true or false, found 'sometimes'"
printf 'id: pin\ndriver: command\nport: 7300\ncommand: [/bin/true]\nmemory: {host_mb: 10, pins_host: false}\n' \
    >"$C/presets/pin.yaml"
check 0
t_run 0 gpumod --config-dir "$C" config show pin --json
t_jq out .preset.memory.pins_host false
t_end

t_begin "settings: unknown key, bad duration, bad nested value"
reset_cfg; good
cat >"$C/gpumod.yaml" <<'YAML'
memory:
  host_margin: 512
supervisor:
  stop_timeout: forever
router:
  max_connections: 0
YAML
check 2
t_has err "$C/gpumod.yaml:2:3: error: memory: unknown key 'host_margin' (did you mean 'host_margin_mb'?)"
t_has err "$C/gpumod.yaml:4:17: error: supervisor: stop_timeout: expected a duration"
t_has err "$C/gpumod.yaml:6:20: error: router: max_connections: 0 is out of range: expected an integer in 1..1000000"
t_end

t_begin "settings: router.default and switch.startup_mode must name what exists"
reset_cfg; good
printf 'router: {default: nope}\nswitch: {startup_mode: nomode}\n' >"$C/gpumod.yaml"
check 2
t_has err "router.default: unknown service 'nope'"
t_has err "switch.startup_mode: unknown mode 'nomode'"
t_end

t_begin "a configuration directory that does not exist"
t_run 2 gpumod --config-dir "$T/nope" config check --no-files
t_has err "$T/nope: error: configuration directory does not exist"
t_end

t_begin "--json lists errors with file, line, col"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: 99999
model_path: /models/m.gguf
YAML
t_run 2 gpumod --config-dir "$C" config check --no-files --json
t_jq out '.ok' false
t_jq out '.errors[0].line' 3
t_jq out '.errors[0].col' 7
t_jq out '.errors[0].file' "$C/presets/bad.yaml"
t_end

t_begin "nothing is dropped: a broken preset still counts and modes still see it"
reset_cfg
preset bad <<'YAML'
id: bad
driver: llamacpp
port: nope
model_path: /models/m.gguf
YAML
printf 'id: m\nname: M\nservices: [bad]\n' >"$C/modes/m.yaml"
check 2
t_has out "1 preset, 1 mode"
t_lacks err "unknown preset 'bad'"
t_end

t_done
