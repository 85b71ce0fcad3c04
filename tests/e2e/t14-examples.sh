#!/usr/bin/env bash
# The shipped examples stay valid: the real-hardware ones as a config
# written for another machine (--no-files), the demo on this one, against
# fakellm's own --help.
. "$(dirname "$0")/lib.sh"

# (a directory without gpumod.yaml is not a configuration: examples/eval
# holds an eval suite, which test_eval_suite and t85 read)
for d in "$GPUMOD_SRC"/examples/*/; do
    [ -f "$d/gpumod.yaml" ] || continue
    name=$(basename "$d")
    t_begin "examples/$name passes config check --no-files without warnings"
    t_run 0 gpumod --config-dir "$d" config check --no-files
    t_has out ": 0 errors, 0 warnings"
    t_end
done

t_begin "examples/demo passes the full check on this machine (fakellm in PATH)"
PATH=$BUILD:$PATH t_run 0 gpumod --config-dir "$GPUMOD_SRC/examples/demo" config check
t_has out "3 presets, 2 modes: 0 errors, 0 warnings"
t_end

t_begin "examples/demo owns its model file"
t_run 0 gpumod --config-dir "$GPUMOD_SRC/examples/demo" config show demo-chat --json
t_jq out '.argv[2]' "$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf"
t_eq "$(sha256sum "$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf" | cut -d' ' -f1)" \
    4bce04b23b28ddcca4c273812eaf5e32a0a301411912c9663597de5e1f67e0e3 "model sha256"
t_end

t_done
