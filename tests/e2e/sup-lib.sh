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
    [ "${GPUMOD_TEST_RUNNER:-}" = systemd ] && units_install
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

# --- GPUMOD_TEST_RUNNER=systemd: the same scripts under the systemd runner
# (tests/e2e/t94-systemd-lifecycle.sh runs them so).  A private bus with
# the fake systemd; `supervisor: {runner: systemd}` added to gpumod.yaml
# and every service's unit (re)installed, with a Reload of the fake,
# before the daemon starts and before each command that may start a
# service or reload the configuration.  Unset: nothing here runs.
RUNNER=${GPUMOD_TEST_RUNNER:-spawn}
if [ "$RUNNER" = systemd ]; then
    . "$GPUMOD_SRC/tests/e2e/systemd-lib.sh"
    if ! systemd_usable; then
        t_skip "$(basename "$0") under the systemd runner" "$SYSTEMD_WHY"
        t_done
        exit 0
    fi
    # the bus and the fake start at the first units_install (the
    # daemon's first start), so that they inherit what the script exported
    _sd_up=""
    # sd_skip NAME WHY: a case that cannot hold under the systemd runner
    sd_skip() { t_skip "$1" "cannot hold under the systemd runner: $2"; }
    # runner_config: supervisor.runner: systemd in $C/gpumod.yaml (flow or
    # block style supervisor mapping, or none)
    runner_config() {
        local f=$C/gpumod.yaml
        [ -f "$f" ] || return 0
        grep -q 'runner: systemd' "$f" && return 0
        if grep -q '^supervisor: *{' "$f"; then
            sed -i 's/^supervisor: *{/supervisor: {runner: systemd, /' "$f"
        elif grep -q '^supervisor: *$' "$f"; then
            sed -i 's/^supervisor: *$/supervisor:\n  runner: systemd/' "$f"
        else
            printf 'supervisor: {runner: systemd}\n' >>"$f"
        fi
    }
    # units_install: the configuration patched and every unit (re)written;
    # the fake reloaded (errors ignored: a test may write a broken
    # configuration on purpose)
    units_install() {
        if [ -z "$_sd_up" ]; then
            _sd_up=1
            bus_start && systemd_fake_start
        fi
        runner_config
        "$GPUMOD_BIN" template install --all --user --yes >>"$T/units-install.log" 2>&1 || true
    }
    # stop_all_clean: as lib.sh's, without the bus (dbus-daemon forked
    # itself: no child of this script, its status unknowable); the fake is
    # one of the processes stopped and must exit 0 too
    eval "$(declare -f stop_all_clean | sed '1s/stop_all_clean/_lib_stop_all_clean/')"
    stop_all_clean() {
        local keep=("${_t_pids[@]}") p
        _t_pids=()
        for p in "${keep[@]}"; do [ "$p" = "${BUS_PID:-}" ] || _t_pids+=("$p"); done
        _lib_stop_all_clean
        _t_pids=("${keep[@]}")
    }
    # gpumod: units installed first for the commands that start services
    # or read the configuration again
    gpumod() {
        case "${1:-} ${2:-}" in
        "service start" | "service restart" | "mode switch" | reload\ * | serve\ *) units_install ;;
        esac
        if [ -n "${GPUMOD_VALGRIND:-}" ]; then
            valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
                "$GPUMOD_BIN" "$@"
        else
            "$GPUMOD_BIN" "$@"
        fi
    }
fi
# runner_is NAME: the tests run under that runner (spawn unless GPUMOD_TEST_RUNNER says)
runner_is() { [ "$RUNNER" = "$1" ]; }
# sd_unit_empty UNIT: the unit is inactive or failed with no main process
# (the fake kills its whole "control group" before it gets there)
sd_unit_empty() {
    case "$(sd_prop "$1" ActiveState)" in inactive | failed) ;; *) return 1 ;; esac
    [ "$(sd_prop "$1" MainPID)" = 0 ]
}
