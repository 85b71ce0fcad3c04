# tests/e2e/sup-lib.sh - what the t60-sup-* scripts share (sourced after
# lib.sh): a config dir whose presets run fakellm, the daemon started in
# the foreground, events and process-group helpers.

MODEL=$GPUMOD_SRC/examples/demo/models/aidreams260K-f32.gguf
S=$GPUMOD_TEST_TIME_SCALE
C=$T/config
mkdir -p "$C/presets"
export PATH=$BUILD:$PATH
# no NVML, no nvidia-smi: host memory only (a test that wants the fake NVML sets these itself)
export GPUMOD_NVML_LIB=${GPUMOD_NVML_LIB:-/nonexistent/libnvidia-ml.so.1}
export GPUMOD_NVIDIA_SMI=${GPUMOD_NVIDIA_SMI:-/nonexistent/nvidia-smi}

# settings EXTRA_YAML...: gpumod.yaml with fakellm as llama-server
settings() {
    {
        printf 'drivers:\n  llamacpp: {binary: fakellm}\nrouter: {enabled: false}\n'
        printf '%s\n' "$@"
    } >"$C/gpumod.yaml"
}

# preset ID PORT [YAML LINE...]: a llama.cpp preset played by fakellm
preset() {
    local id=$1 port=$2; shift 2
    {
        printf 'id: %s\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\n' "$id" "$port" "$MODEL"
        printf '%s\n' "$@"
    } >"$C/presets/$id.yaml"
}

sock_up() { gpumod status --json >/dev/null 2>&1; }

# daemon_start: gpumod serve --foreground, waits until the socket answers; pid in $DPID
daemon_start() {
    if [ -n "${GPUMOD_VALGRIND:-}" ]; then
        t_spawn daemon valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            --track-fds=no "$GPUMOD_BIN" serve --foreground
    else
        t_spawn daemon "$GPUMOD_BIN" serve --foreground
    fi
    DPID=$_t_last_pid
    t_wait 10 sock_up || { t_fail "the daemon never answered"; sed 's/^/#   daemon: /' "$T/daemon.log" | tail -20; }
}

# daemon_stop: SIGTERM, exit 0 within 10 s (scaled)
daemon_stop() {
    kill -TERM "$DPID" 2>/dev/null
    reap "$DPID" 10 || t_fail "the daemon did not exit 10 s after SIGTERM"
    [ "$rc" = 0 ] || t_fail "the daemon exited $rc after SIGTERM"
}

# events [SERVICE]: the event list as JSON lines in $T/ev (one event a line)
events() {
    if [ -n "${1:-}" ]; then gpumod events --json --service "$1"; else gpumod events --json; fi |
        jq -c '.events[]' >"$T/ev"
}
# count KIND [SERVICE]: how many events of that kind
count() { events "${2:-}"; jq -s --arg k "$1" '[.[] | select(.kind == $k)] | length' "$T/ev"; }
state_of() { gpumod service show "$1" --json 2>/dev/null | jq -r .state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }
field() { gpumod service show "$1" --json 2>/dev/null | jq -r "$2"; }

# the live (not zombie) pids of process group $1
group_live() { ps -e -o pgid=,stat=,pid= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { print $3 }'; }
group_gone() { [ -z "$(group_live "$1")" ]; }
gone() { ! alive "$1"; }
