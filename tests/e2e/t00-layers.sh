#!/usr/bin/env bash
# t00-layers: the floor plan holds (scripts/check-layers over src/ with
# scripts/layers.allow), and the check is not one that cannot fail: on a
# copy of src/, a planted wrong-way include, an I/O header in core, a
# planted long function, a new
# folder with no place in the table and a stale allowlist entry are each
# named with file and line, exit 1.
. "$(dirname "$0")/lib.sh"

CHECK=$GPUMOD_SRC/scripts/check-layers
ALLOW=$GPUMOD_SRC/scripts/layers.allow

t_begin "src/ keeps the layer table, with only the allowlisted exceptions"
t_run 0 python3 "$CHECK" --src "$GPUMOD_SRC/src" --allow "$ALLOW"
t_match out "^check-layers: [0-9]+ includes, [0-9]+ functions, [0-9]+ allowed, 0 violation"
t_end

t_begin "a planted wrong-way include is named with its file and line"
cp -r "$GPUMOD_SRC/src" "$T/src"
printf '#include "daemon/daemon.h"\n' >>"$T/src/core/gate.c"
n=$(wc -l <"$T/src/core/gate.c")
t_run 1 python3 "$CHECK" --src "$T/src" --allow "$ALLOW"
t_has out "src/core/gate.c:$n: 'core' (layer 2) may not include 'daemon' (layer 5)"
t_has out "1 violation(s)"
t_end

t_begin "core is pure: of host/ it may include the value types, not a header that declares I/O"
rm -rf "$T/src"; cp -r "$GPUMOD_SRC/src" "$T/src"
printf '#include "host/proctree.h"\n' >>"$T/src/core/plan.c"
n=$(wc -l <"$T/src/core/plan.c")
t_run 1 python3 "$CHECK" --src "$T/src" --allow "$ALLOW"
t_has out "src/core/plan.c:$n: 'core' is pure: of 'host/' it may include only types.h, not 'proctree.h'"
t_end

t_begin "a planted long function is named"
rm -rf "$T/src"; cp -r "$GPUMOD_SRC/src" "$T/src"
{
    printf '\nint planted_long(int x);\nint planted_long(int x)\n{\n'
    for i in $(seq 1 125); do printf '    x += %d;\n' "$i"; done
    printf '    return x;\n}\n'
} >>"$T/src/util/buf.c"
t_run 1 python3 "$CHECK" --src "$T/src" --allow "$ALLOW"
t_match out "src/util/buf.c:[0-9]+: function 'planted_long' is 128 lines \(at most 120\)"
t_end

t_begin "a folder with no place in the table, an include of one, a stale allowlist entry"
rm -rf "$T/src"; cp -r "$GPUMOD_SRC/src" "$T/src"
mkdir -p "$T/src/attic"
printf '#include "util/buf.h"\n' >"$T/src/attic/old.c"
printf '#include "attic/old.h"\n' >>"$T/src/cli/cli.h"
cp "$ALLOW" "$T/allow"
printf 'include cli/route.c -> daemon\n' >>"$T/allow"
t_run 1 python3 "$CHECK" --src "$T/src" --allow "$T/allow"
t_has out "src/attic/old.c:1: folder 'attic' has no place in the layer table"
t_match out "src/cli/cli.h:[0-9]+: includes 'attic/', which has no place in the layer table"
t_match out "allow:[0-9]+: 'include cli/route.c -> daemon' matches nothing any more: remove it"
t_end

t_done
