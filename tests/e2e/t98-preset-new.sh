#!/usr/bin/env bash
# t98-preset-new: `gpumod preset new --from FILE|SOURCE`: a preset that
# config check accepts, with a free port, the context that fits and a
# comment for each figure; --out -, the terminal rule, Ctrl-C at the prompt, an existing id, a
# --ctx that does not fit; a file of the fake Hub; the synthetic MoE on a
# GPU too small for all of it (n_cpu_moe chosen); a GGUF whose
# architecture and a file whose name hold a newline, quotes and an escape
# (no YAML key of their own: comments cleaned, values quoted); a directory
# of projectors only.
. "$(dirname "$0")/lib.sh"
fake_gpu_24g
FAKES=$GPUMOD_SRC/tests/fakes
TINY=$FIXTURES/models/llama-2-tiny-random.gguf
cat >"$T/config/gpumod.yaml" <<YAML
drivers:
  llamacpp: {binary: $FAKELLM_BIN}
models_dir: $T/models
YAML
mkdir -p "$T/config/presets"

t_begin "from a local file: written, config check passes, the port is free"
t_run 0 gpumod preset new --from "$TINY" --yes
t_has out 'id: "llama-2-tiny-random"'
t_has out "# context_size: the largest that fits alone"
t_has out "n_gpu_layers: all"
t_has out "wrote $T/config/presets/llama-2-tiny-random.yaml"
t_run 0 test -f "$T/config/presets/llama-2-tiny-random.yaml"
t_run 0 gpumod config check
t_has out "1 preset"
port=$(awk '/^port:/ {print $2}' "$T/config/presets/llama-2-tiny-random.yaml")
t_run 0 python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" "$port"
t_end

t_begin "--out - prints only; --json; no terminal without --yes is refused"
t_run 0 gpumod --json preset new --from "$TINY" --id tiny2 --out -
t_jq out '.id' tiny2
t_jq out '.written' false
t_jq out '.path' null
t_jq out '.n_gpu_layers' -1
t_jq out '.port != '"$port" true
t_jq out '.preset | contains("id: \"tiny2\"")' true
t_run 0 test ! -e "$T/config/presets/tiny2.yaml"
t_run 2 gpumod preset new --from "$TINY" --id tiny3
t_has err "not a terminal: pass --yes"
t_has out 'id: "tiny3"'
t_run 0 test ! -e "$T/config/presets/tiny3.yaml"
t_end

t_begin "Ctrl-C at the y/N prompt: interrupted, exit 130, nothing written"
cat >"$T/ctrlc.py" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
got, deadline = b"", time.time() + 60
while b"[y/N]" not in got and time.time() < deadline:
    if select.select([fd], [], [], 1)[0]:
        try:
            got += os.read(fd, 4096)
        except OSError:
            break
os.write(fd, b"\x03")  # the terminal's intr character: SIGINT to the foreground
while True:
    try:
        if not select.select([fd], [], [], 30)[0]:
            break
        b = os.read(fd, 4096)
        if not b:
            break
        got += b
    except OSError:
        break
_, st = os.waitpid(pid, 0)
sys.stdout.write(got.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
PY
t_run 130 python3 "$T/ctrlc.py" "$GPUMOD_BIN" preset new --from "$TINY" --id tiny-int
t_has out "[y/N]"
t_has out "gpumod: preset new: interrupted: not written"
t_lacks out "no answer in 5 minutes"
t_run 0 test ! -e "$T/config/presets/tiny-int.yaml"
t_end

t_begin "an existing id, an existing file, a bad id are refused"
t_run 2 gpumod preset new --from "$TINY" --yes
t_has err "a preset 'llama-2-tiny-random' exists already"
echo "x: 1" >"$T/other.yaml"
t_run 1 gpumod preset new --from "$TINY" --id tiny4 --out "$T/other.yaml" --yes
t_has err "exists: not overwritten"
t_run 2 gpumod preset new --from "$TINY" --id Bad_Id --yes
t_has err "--id 'Bad_Id'"
t_end

t_begin "an architecture with a newline, quotes, an escape; odd file names: no key of their own"
mkdir -p "$T/evil"
cat >"$T/evil/mk.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import hfgen
arch = "llama\nargs: [x]\n\"q\": \\ \x1b[31m"
g = hfgen.read_gguf(sys.argv[2])
old = g.get("general.architecture")
kv = [(arch + k[len(old):] if k.startswith(old + ".") else k, t,
       arch if k == "general.architecture" else v) for k, t, v in g.kv]
with open(sys.argv[2], "rb") as sf:
    hfgen.write_gguf(sys.argv[3], kv, g.tensors, data_src=(sf, g.data_offset), alignment=g.alignment)
PY
t_run 0 python3 "$T/evil/mk.py" "$FAKES" "$TINY" "$T/evil/arch.gguf"
t_run 0 gpumod preset new --from "$T/evil/arch.gguf" --id evil-arch --yes
t_has out "# llama?args: [x]?\"q\": \\ ?[31m, "
t_lacks out "$(printf '\033')"
odd=$T/evil/'a"b\c: [y] #d.gguf'
cp "$TINY" "$odd"
t_run 0 gpumod preset new --from "$odd" --id evil-name --yes
t_has out 'name: "a\"b\\c: [y] #d.gguf"'
t_run 0 gpumod config check
t_has out "0 errors"
t_run 0 gpumod --json config show evil-arch
t_jq out '.preset.args' '[]'
t_jq out '.preset.model_path' "$T/evil/arch.gguf"
t_run 0 gpumod --json config show evil-name
t_jq out '.preset.args' '[]'
t_jq out '.preset.name' 'a"b\c: [y] #d.gguf'
t_jq out '.preset.model_path' "$odd"
evil=$(printf '%s/evil/e\nargs: [y]\033[0m.gguf' "$T")
cp "$TINY" "$evil"
t_run 1 gpumod preset new --from "$evil" --id evil-ctl --yes
t_has err "model_path '$T/evil/e?args: [y]?[0m.gguf' holds a control character"
t_lacks err "$(printf '\033')"
t_run 0 test ! -e "$T/config/presets/evil-ctl.yaml"
rm -f "$T/config/presets/evil-arch.yaml" "$T/config/presets/evil-name.yaml"
t_end

t_begin "a directory of projectors only names no model"
mkdir -p "$T/proj"
cp "$TINY" "$T/proj/mmproj-tiny-F16.gguf"
t_run 1 gpumod preset new --from "$T/proj" --out -
t_has err "'$T/proj' names no model (skipped: $T/proj/mmproj-tiny-F16.gguf: "
t_lacks err "names 0 models"
t_end

fake_hub

t_begin "from hf:test/tiny-GGUF/FILE: model_path under models_dir, pull it first"
t_run 2 gpumod preset new --from hf:test/tiny-GGUF --out -
t_has err "names 2 models; name one"
t_has err "hf:test/tiny-GGUF/llama-2-tiny-random.gguf"
t_run 0 gpumod --json preset new --from hf:test/tiny-GGUF/llama-2-tiny-random.gguf --id hub-tiny --out -
t_jq out '.preset | contains("model_path: \"'"$T"'/models/test/tiny-GGUF/llama-2-tiny-random.gguf\"")' true
t_jq out '.preset | contains("gpumod model pull hf:test/tiny-GGUF/llama-2-tiny-random.gguf")' true
t_end

t_begin "--ctx that does not fit: refused with the largest that does"
sed -i 's/"total_mb": 24576/"total_mb": 22528/' "$T/nvml.json"
t_run 1 gpumod preset new --from hf:synth/MoE-30B-A3B-GGUF --ctx 40960 --out -
t_match err "--ctx 40960 does not fit .* the largest context that fits is [0-9]+"
t_run 1 gpumod preset new --from "$TINY" --id tiny5 --ctx 100000 --out -
t_has err "over the model's trained context (4096)"
t_end

t_begin "the MoE on a 19 GiB GPU: experts on the CPU, with the reason"
sed -i 's/"total_mb": 22528/"total_mb": 19456/' "$T/nvml.json"
t_run 0 gpumod --json preset new --from hf:synth/MoE-30B-A3B-GGUF --out -
t_jq out '.n_cpu_moe > 0' true
t_jq out '.n_gpu_layers' -1
t_jq out '.context_size' 4096
t_jq out '.preset | contains("# n_cpu_moe: the fewest of")' true
t_end

t_done
