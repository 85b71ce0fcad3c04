#!/usr/bin/env bash
# make install honours PREFIX and DESTDIR; the man page and README keep up
# with the command table.
. "$(dirname "$0")/lib.sh"

t_begin "make install PREFIX DESTDIR installs the binary and the man page"
t_run 0 make -s -C "$GPUMOD_SRC" BUILD="$BUILD" install PREFIX=/usr DESTDIR="$T/root"
t_eq "$(stat -c %a "$T/root/usr/bin/gpumod")" 755 "gpumod mode"
t_eq "$(stat -c %a "$T/root/usr/share/man/man1/gpumod.1")" 644 "man page mode"
t_run 0 "$T/root/usr/bin/gpumod" --version
t_match out "^gpumod "
t_eq "$(stat -c %a "$T/root/usr/libexec/gpumod/gpumod-exec")" 755 "gpumod-exec mode"
t_end

t_begin "every command of --help is in the man page and the README"
t_run 0 gpumod --help
for c in $(awk '/^Commands:/{f=1;next} /^$/{f=0} f{print $1}' "$T/out"); do
    grep -q "^\.B $c\b\|^\.B $c " "$GPUMOD_SRC/docs/gpumod.1" || t_fail "man page lacks command '$c'"
    grep -q "gpumod $c\|gpumod --$c\|gpumod help" "$GPUMOD_SRC/README.md" || t_fail "README lacks command '$c'"
done
t_end

t_begin "the man page documents every exit code of --help"
for code in 0 1 2 3 4; do
    grep -q "^\.B $code\$" "$GPUMOD_SRC/docs/gpumod.1" || t_fail "man page lacks exit code $code"
done
t_end

t_begin "the demo runs and says that fakellm stands in for a real engine"
t_run 0 env BUILD="$BUILD" "$GPUMOD_SRC/scripts/demo"
t_has out "fakellm (tests/fakes/fakellm) stands in for llama-server and vLLM"
t_has out "3 presets, 2 modes: 0 errors, 0 warnings"
t_has out '"argv":["fakellm","serve"'
t_end

t_begin "gpumod never writes compact_memory or drop_caches (it only reads /proc)"
# (doctor's verdicts name these files in the advice they print; its
# reader, src/doctor/doctor_probe.c, is held to the rule like the rest)
hits=$(grep -rln 'compact_memory\|drop_caches\|/proc/sys/vm' "$GPUMOD_SRC/src" | grep -v '^$' |
    grep -v '/src/doctor/doctor\.[ch]$\|/src/cli/doctor\.c$' || true)
for f in $hits; do
    # mentioned in comments is fine; an open() of them is not
    grep -n 'compact_memory\|drop_caches\|/proc/sys/vm' "$f" | grep -v '^\s*[0-9]*:\s*\(/\*\|\*\|//\)' |
        grep -q . && t_fail "$f names a /proc/sys/vm file outside a comment"
done
# and nothing in src/ opens anything for writing under the proc root
grep -rn 'O_WRONLY\|O_RDWR\|"w"' "$GPUMOD_SRC/src/host" && t_fail "src/host opens a file for writing"
t_end

t_done
