#!/usr/bin/env bash
# config check looks at the machine: model files, driver binaries in PATH,
# and every flag against the installed binary's own --help (cached by path
# and mtime).  --no-files skips all of it.
. "$(dirname "$0")/lib.sh"

C=$T/cfg
mkdir -p "$C/presets" "$T/bin" "$T/models/router"
: >"$T/models/m.gguf"
# a stand-in llama-server: prints the real b10587 help text, counts its runs
cat >"$T/bin/llama-server" <<SH
#!/bin/sh
echo run >>"$T/help-runs"
[ "\$1" = "--help" ] && exec cat "$FIXTURES/llama-server-help.txt"
exit 1
SH
chmod +x "$T/bin/llama-server"
OLDPATH=$PATH

preset() { cat >"$C/presets/$1.yaml"; }

t_begin "missing model file, missing models_dir, binary not in PATH"
preset a <<YAML
id: a
driver: llamacpp
port: 7070
model_path: $T/models/nope.gguf
YAML
preset b <<YAML
id: b
driver: llamacpp
port: 7071
unit_vars: {models_dir: $T/models/nodir}
YAML
PATH=/usr/bin:/bin t_run 2 gpumod --config-dir "$C" config check
t_has err "$C/presets/a.yaml:1:1: error: preset 'a': model_path '$T/models/nope.gguf' does not exist"
t_has err "$C/presets/b.yaml:1:1: error: preset 'b': models_dir '$T/models/nodir' does not exist"
t_has err "preset 'a': llamacpp binary 'llama-server' is not found in PATH"
t_end

t_begin "--no-files skips file and binary checks"
PATH=/usr/bin:/bin t_run 0 gpumod --config-dir "$C" config check --no-files
t_end

t_begin "a valid preset against the real llama-server help passes"
rm -f "$C/presets/"*.yaml "$T/help-runs"
preset a <<YAML
id: a
driver: llamacpp
port: 7070
model_path: $T/models/m.gguf
aliases: [chat]
unit_vars: {threads: 4, flash_attn: on, cache_type_k: q8_0, spec_type: ngram-simple, spec_draft_n_max: 8}
YAML
preset r <<YAML
id: r
driver: llamacpp
port: 7071
unit_vars: {models_dir: $T/models/router, models_max: 1, no_models_autoload: true}
YAML
PATH=$T/bin:$OLDPATH t_run 0 gpumod --config-dir "$C" config check
t_has out "2 presets, 0 modes: 0 errors"
t_end

t_begin "the help text is cached: a second check does not run the binary"
runs1=$(wc -l <"$T/help-runs")
PATH=$T/bin:$OLDPATH t_run 0 gpumod --config-dir "$C" config check
runs2=$(wc -l <"$T/help-runs")
t_eq "$runs2" "$runs1" "help runs"
t_eq "$runs1" 1 "first runs"
t_end

t_begin "a rebuilt binary (new mtime) is read again"
touch -d '2020-01-01' "$T/bin/llama-server"
PATH=$T/bin:$OLDPATH t_run 0 gpumod --config-dir "$C" config check
t_eq "$(wc -l <"$T/help-runs")" 2 "help runs"
t_end

t_begin "a flag the installed binary does not know is an error"
preset a <<YAML
id: a
driver: llamacpp
port: 7070
model_path: $T/models/m.gguf
args: [--no-such-flag, "1"]
YAML
PATH=$T/bin:$OLDPATH t_run 2 gpumod --config-dir "$C" config check
t_has err "preset 'a': flag '--no-such-flag' is not known to $T/bin/llama-server (not in its --help)"
t_end

t_begin "a flag the binary lists as removed is an error"
preset a <<YAML
id: a
driver: llamacpp
port: 7070
model_path: $T/models/m.gguf
unit_vars: {extra_args: "--draft-max 4"}
YAML
PATH=$T/bin:$OLDPATH t_run 2 gpumod --config-dir "$C" config check
t_has err "preset 'a': flag '--draft-max' has been removed from $T/bin/llama-server"
t_end

t_begin "a binary given by absolute path in gpumod.yaml"
printf 'drivers:\n  llamacpp: {binary: %s}\n' "$T/bin/llama-server" >"$C/gpumod.yaml"
rm -f "$C/presets/r.yaml"
preset a <<YAML
id: a
driver: llamacpp
port: 7070
model_path: $T/models/m.gguf
YAML
PATH=/usr/bin:/bin t_run 0 gpumod --config-dir "$C" config check
printf 'drivers:\n  llamacpp: {binary: %s}\n' "$T/bin/nope" >"$C/gpumod.yaml"
PATH=/usr/bin:/bin t_run 2 gpumod --config-dir "$C" config check
t_has err "llamacpp binary '$T/bin/nope' is not an executable file"
t_end

t_done
