#!/bin/sh
# run-daemon.sh - the daemon on a real GPU (tests/device/README.md): real
# NVML in the daemon's hostmon thread, a service holding real GPU memory
# (fakellm with FAKELLM_CUDA_MB: libcuda), its footprint measured over the
# process group (a forked worker included), verify-freed after a stop, and
# kill -9 of the daemon leaving no process and no GPU memory behind.
# Binaries come prebuilt in $DEVPKG (build/devpkg: gpumod, gpumod-exec,
# fakellm, lib/ with the shared libraries the device may lack).
set -u
P=$(cd "${DEVPKG:-build/devpkg}" && pwd); O=${OUT:-/tmp/devd}; mkdir -p "$O"
export LD_LIBRARY_PATH="$P/lib"
G="$P/gpumod"
"$G" --version || { ldd "$G"; exit 1; }
T=$(mktemp -d); mkdir -p "$T/cfg/presets" "$T/cfg/models"
cp examples/demo/models/aidreams260K-f32.gguf "$T/cfg/models/m.gguf"
cat >"$T/cfg/gpumod.yaml" <<Y
state_dir: $T/state
socket: $T/gpumod.sock
drivers: {llamacpp: {binary: $P/fakellm}}
memory: {gpu_margin_mb: 512, verify_freed_timeout: 20s}
supervisor: {health_interval: 1s, stop_timeout: 5s}
router: {enabled: false}
switch: {startup_mode: none}
Y
for s in solo:18181:0 forked:18182:1; do
  id=${s%%:*}; r=${s#*:}; port=${r%%:*}; fw=${r#*:}
  cat >"$T/cfg/presets/$id.yaml" <<Y
id: $id
driver: llamacpp
port: $port
model_path: models/m.gguf
context_size: 128
env: {FAKELLM_CUDA_MB: "1024", FAKELLM_LOAD_MS: "200", FAKELLM_FORK_WORKER: "$fw"}
memory: {gpu_mb: 2048, host_mb: 256}
Y
done
g() { "$G" --config-dir "$T/cfg" "$@"; }
apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>&1; }
ms() { date +%s%3N; }
"$G" --config-dir "$T/cfg" serve --foreground >"$O/daemon.log" 2>&1 &
D=$!   # the daemon itself, not a subshell: kill -9 must hit it
i=0; while ! g status >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
echo "== gpu"; g gpu
for id in solo forked; do
  echo "== start $id"; t0=$(ms); g service start $id; echo "rc=$? in $(($(ms)-t0)) ms"
  echo "-- nvidia-smi apps"; apps
  echo "-- service"; g service show $id --json; echo
  echo "== stop $id"; t0=$(ms); g service stop $id; echo "rc=$? in $(($(ms)-t0)) ms"
  echo "-- nvidia-smi apps after stop"; apps
done
echo "== status round trip, 200 calls"; t0=$(ms); n=0
while [ $n -lt 200 ]; do g status --json >/dev/null; n=$((n+1)); done; echo "$(($(ms)-t0)) ms total"
echo "== kill -9 of the daemon with 'forked' holding memory"
g service start forked >/dev/null; apps
echo "daemon pid $D: $(cat /proc/$D/comm)"; kill -9 $D; t0=$(ms); i=0
while [ -n "$(apps | grep -v 'No running' | grep -v '^$')" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
echo "GPU processes gone after $(($(ms)-t0)) ms (polls: $i)"; apps; pgrep -a fakellm || echo "no fakellm left"
echo "== restarted daemon"
"$G" --config-dir "$T/cfg" serve --foreground >>"$O/daemon.log" 2>&1 &
D=$!; i=0; while ! g status >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
g status
echo "== events"; g events -n 60
kill $D; wait $D; echo "daemon exit $?"
cp -r "$T/state" "$O/state" 2>/dev/null; rm -rf "$T"
