#!/usr/bin/env bash
# Configuration files that are not plain files: a FIFO anywhere a path is
# read (a preset, a mode, gpumod.yaml, a model) is refused at once with an
# error instead of freezing the reader; symlinked presets, modes and
# directories are followed; a loop or a broken link is reported, never
# dropped in silence.  Every command runs under `timeout`, so a reader
# that blocks fails the case instead of hanging the suite.
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
C=$T/cfg
reset_cfg() { rm -rf "$C"; mkdir -p "$C/presets" "$C/modes"; }
preset() { # FILE ID PORT
    printf 'id: %s\ndriver: llamacpp\nport: %s\nmodel_path: /models/m.gguf\n' "$2" "$3" >"$1"
}
check() { t_run "$1" timeout 10 "$GPUMOD_BIN" --config-dir "$C" config check --no-files; }

t_begin "a FIFO in presets/ is an error, not a hang"
reset_cfg
preset "$C/presets/good.yaml" good 7070
mkfifo "$C/presets/x.yaml"
check 2
t_has err "$C/presets/x.yaml: error: cannot read: a FIFO, not a regular file"
t_has out "1 preset, 0 modes: 1 error"
t_end

t_begin "a FIFO in modes/ is an error, not dropped"
reset_cfg
preset "$C/presets/good.yaml" good 7070
mkfifo "$C/modes/m.yaml"
check 2
t_has err "$C/modes/m.yaml: error: cannot read: a FIFO, not a regular file"
t_end

t_begin "a FIFO as gpumod.yaml is an error, not ignored"
reset_cfg
mkfifo "$C/gpumod.yaml"
check 2
t_has err "$C/gpumod.yaml: error: cannot read: a FIFO, not a regular file"
t_end

t_begin "a FIFO as model_path: config check, model inspect and simulate refuse it"
reset_cfg
mkfifo "$T/fifo.gguf"
printf 'id: f\ndriver: llamacpp\nport: 7070\nmodel_path: %s\n' "$T/fifo.gguf" >"$C/presets/f.yaml"
t_run 2 timeout 10 "$GPUMOD_BIN" --config-dir "$C" config check
t_has err "preset 'f': model_path '$T/fifo.gguf' is a FIFO, expected a regular file"
t_run 1 timeout 10 "$GPUMOD_BIN" model inspect "$T/fifo.gguf"
t_has err "a FIFO, not a regular file"
t_run 2 timeout 10 "$GPUMOD_BIN" --config-dir "$C" simulate service f
t_has err "a FIFO, not a regular file"
t_end

t_begin "a symlinked preset file and a symlinked directory are read"
reset_cfg
mkdir -p "$T/elsewhere/dir"
preset "$T/elsewhere/linked.yaml" linked 7071
preset "$T/elsewhere/dir/indir.yaml" indir 7072
ln -s "$T/elsewhere/linked.yaml" "$C/presets/linked.yaml"
ln -s "$T/elsewhere/dir" "$C/presets/sub"
preset "$T/elsewhere/mode.yaml" unused 7073
printf 'id: both\nservices: [linked, indir]\n' >"$T/elsewhere/both.yaml"
ln -s "$T/elsewhere/both.yaml" "$C/modes/both.yaml"
check 0
t_has out "2 presets, 1 mode: 0 errors"
t_run 0 timeout 10 "$GPUMOD_BIN" --config-dir "$C" config show --json
t_jq out '[.presets[].id] | sort | join(",")' indir,linked
t_end

t_begin "a directory loop is reported once; the files are still read"
reset_cfg
mkdir -p "$C/presets/a"
preset "$C/presets/a/one.yaml" one 7070
ln -s .. "$C/presets/a/up"
check 2
t_has err "$C/presets/a/up: error: a symlink loop: it leads back to '$C/presets'; not followed"
t_has out "1 preset, 0 modes: 1 error"
t_end

t_begin "a broken symlink is reported, not dropped"
reset_cfg
preset "$C/presets/good.yaml" good 7070
ln -s "$T/nowhere.yaml" "$C/presets/gone.yaml"
ln -s "$T/nowhere" "$C/presets/gonedir"
ln -s "$T/nowhere.yaml" "$C/modes/gone.yaml"
check 2
t_has err "$C/presets/gone.yaml: error: cannot read: a broken symlink (No such file or directory)"
t_has err "$C/modes/gone.yaml: error: cannot read: a broken symlink (No such file or directory)"
t_has err "$C/presets/gonedir: warning: a broken symlink (No such file or directory); not read"
t_end

t_begin "a symlink to itself is reported"
reset_cfg
ln -s self.yaml "$C/presets/self.yaml"
check 2
t_has err "$C/presets/self.yaml: error: cannot read: Too many levels of symbolic links"
t_end

t_begin "modes/ itself a symlink is read; a directory under modes/ is reported, not read in silence"
reset_cfg
preset "$C/presets/good.yaml" good 7070
rmdir "$C/modes"
mkdir -p "$T/modes-elsewhere/old"
printf 'id: m\nservices: [good]\n' >"$T/modes-elsewhere/m.yaml"
printf 'id: o\nservices: [good]\n' >"$T/modes-elsewhere/old/o.yaml"
ln -s "$T/modes-elsewhere" "$C/modes"
check 0
t_has out "1 preset, 1 mode: 0 errors, 1 warning"
t_has err "$C/modes/old: warning: a directory: modes are read from modes/*.yaml only, nothing below it is read"
t_end

t_begin "a presets directory that is a FIFO is an error saying so"
reset_cfg
rmdir "$C/presets"
mkfifo "$C/presets"
check 2
t_has err "$C/presets: error: presets directory is a FIFO, not a directory"
t_end

t_begin "gpumod serve with a FIFO as its log: refused at once"
mkdir -p "$T/fifo-logs"
mkfifo "$T/fifo-logs/gpumod.log"
printf 'log_dir: %s\nrouter:\n  enabled: false\n' "$T/fifo-logs" >"$T/fifo-logs.yaml"
mkdir -p "$T/cfg-fifo-log"
cp "$T/fifo-logs.yaml" "$T/cfg-fifo-log/gpumod.yaml"
t_run 1 timeout 10 "$GPUMOD_BIN" --config-dir "$T/cfg-fifo-log" serve
t_has err "serve: cannot open the log '$T/fifo-logs/gpumod.log': a FIFO, not a regular file"
t_end

# the daemon: a FIFO must not stop its loop (reload, service start)
D=$T/config
P1=$(free_port)
mkdir -p "$D/presets"
cat >"$D/gpumod.yaml" <<EOF
drivers:
  llamacpp: {binary: $FAKELLM_BIN}
router:
  enabled: false
EOF
printf 'id: ok\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\nmemory: {gpu_mb: 0, host_mb: 16}\n' \
    "$P1" "$MODEL" >"$D/presets/ok.yaml"
t_begin "FIFOs in the state dir (the router's default, a pid file) do not stop the daemon's start"
mkdir -p "$GPUMOD_STATE_DIR/run"
mkfifo "$GPUMOD_STATE_DIR/route-default" "$GPUMOD_STATE_DIR/run/ghost.pid"
sed -i 's/enabled: false/enabled: true\n  listen: 127.0.0.1:'"$(free_port)"'/' "$D/gpumod.yaml"
t_spawn daemon "$GPUMOD_BIN" serve --foreground
t_wait 10 gpumod status || t_fail "the daemon never answered"
t_has "$T/daemon.log" "route-default' is not read: a FIFO, not a regular file"
t_end

t_begin "route default with a FIFO where its temporary file goes: an error, the daemon keeps answering"
mkfifo "$GPUMOD_STATE_DIR/route-default.tmp"
t_run 1 timeout 10 "$GPUMOD_BIN" route default ok
t_has err "cannot write '$GPUMOD_STATE_DIR/route-default.tmp': a FIFO, not a regular file"
t_run 0 timeout 5 "$GPUMOD_BIN" status
rm -f "$GPUMOD_STATE_DIR/route-default.tmp"
t_end

t_begin "a FIFO where a service's run file goes: the start goes on, the daemon keeps answering"
mkfifo "$GPUMOD_STATE_DIR/run/ok.pid.new"
t_run 0 timeout 20 "$GPUMOD_BIN" service start ok
t_run 0 timeout 5 "$GPUMOD_BIN" status
t_wait 5 grep -qF "cannot write run file '$GPUMOD_STATE_DIR/run/ok.pid': a FIFO, not a regular file" "$T/daemon.log" ||
    t_fail "the daemon's log does not say why the run file was not written"
t_run 0 timeout 20 "$GPUMOD_BIN" service stop ok
rm -f "$GPUMOD_STATE_DIR/run/ok.pid.new"
t_end

t_begin "reload with a FIFO preset: refused at once, the daemon keeps answering"
mkfifo "$D/presets/x.yaml"
t_run 2 timeout 10 "$GPUMOD_BIN" reload
t_has err "$D/presets/x.yaml: cannot read: a FIFO, not a regular file"
t_run 0 timeout 5 "$GPUMOD_BIN" status
rm -f "$D/presets/x.yaml"
t_end

t_begin "service start of a preset whose model is a FIFO: refused, the daemon keeps answering"
mkfifo "$T/model-fifo.gguf"
P2=$(free_port)
printf 'id: ff\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\n' "$P2" "$T/model-fifo.gguf" \
    >"$D/presets/ff.yaml"
t_run 0 timeout 10 "$GPUMOD_BIN" reload
t_run 2 timeout 10 "$GPUMOD_BIN" service start ff
t_has err "cannot tell what 'ff' needs: '$T/model-fifo.gguf': a FIFO, not a regular file"
t_run 0 timeout 5 "$GPUMOD_BIN" status
t_end

t_done
