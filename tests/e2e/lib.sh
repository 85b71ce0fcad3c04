# tests/e2e/lib.sh - the small library every e2e test sources.
#
#   . "$(dirname "$0")/lib.sh"
#   t_begin "config check accepts the demo"
#   t_run 0 gpumod config check       # exit code, then the command
#   t_has out "0 errors"              # out | err: what the last t_run printed
#   t_end
#   t_done                            # at the end of the script
#
# Each script gets a private temp dir ($T) with its own state dir, config
# dir, runtime dir and socket; GPUMOD_PROC_ROOT points at a healthy /proc
# fixture.  Background processes started with t_spawn are killed by pid
# (and process group) when the script exits.  Deadlines given to t_wait
# are multiplied by GPUMOD_TEST_TIME_SCALE (sanitizer and valgrind runs).
# Output is TAP: "ok N - name" / "not ok N - name" plus "#" diagnostics.

set -u
GPUMOD_SRC=${GPUMOD_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$GPUMOD_SRC/$BUILD ;; esac
GPUMOD_BIN=$BUILD/gpumod
FAKELLM_BIN=$BUILD/fakellm
GPUMOD_TEST_TIME_SCALE=${GPUMOD_TEST_TIME_SCALE:-1}
FIXTURES=$GPUMOD_SRC/tests/fixtures

T=$(mktemp -d "${TMPDIR:-/tmp}/gpumod-e2e.XXXXXX")
mkdir -p "$T/state" "$T/config" "$T/run"
export GPUMOD_STATE_DIR=$T/state GPUMOD_CONFIG_DIR=$T/config XDG_RUNTIME_DIR=$T/run
export GPUMOD_SOCKET=$T/run/gpumod.sock
export GPUMOD_PROC_ROOT=${GPUMOD_PROC_ROOT:-$FIXTURES/proc/healthy}
unset GPUMOD_PRESETS_DIR GPUMOD_MODES_DIR NOTIFY_SOCKET

_t_n=0 _t_failed_total=0 _t_failed=0 _t_name="" _t_pids=()

_t_cleanup() {
    # only the script's own shell cleans up: a subshell that ends (a
    # watchdog killed, a background helper) must never remove $T under it
    [ "$BASHPID" = "$$" ] || return 0
    local p
    for p in "${_t_pids[@]}"; do
        kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
    done
    for p in "${_t_pids[@]}"; do
        local i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
    done
    [ -n "${GPUMOD_KEEP_TMP:-}" ] && { echo "# kept $T"; return; }
    rm -rf "$T"
}
trap _t_cleanup EXIT

# gpumod ARGS...: the binary under test (valgrind-wrapped when asked)
gpumod() {
    if [ -n "${GPUMOD_VALGRIND:-}" ]; then
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            "$GPUMOD_BIN" "$@"
    else
        "$GPUMOD_BIN" "$@"
    fi
}

t_diag() { printf '# %s\n' "$@"; }

t_begin() { _t_name=$1; _t_failed=0; }

t_fail() {
    _t_failed=1
    t_diag "$_t_name: $*"
}

t_end() {
    _t_n=$((_t_n + 1))
    if [ "$_t_failed" -eq 0 ]; then
        echo "ok $_t_n - $_t_name"
    else
        echo "not ok $_t_n - $_t_name"
        _t_failed_total=$((_t_failed_total + 1))
    fi
}

t_skip() { _t_n=$((_t_n + 1)); echo "ok $_t_n - $1 # SKIP ${2:-}"; }

t_done() {
    echo "1..$_t_n"
    [ "$_t_failed_total" -eq 0 ]
}

# t_run EXPECTED_RC CMD...: run, keep stdout/stderr in $T/out, $T/err
t_run() {
    local want=$1; shift
    "$@" >"$T/out" 2>"$T/err" </dev/null
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        t_fail "'$*' exited $rc, expected $want"
        sed 's/^/#   out: /' "$T/out" | head -20
        sed 's/^/#   err: /' "$T/err" | head -20
    fi
    return 0
}

_t_file() { case "$1" in out) echo "$T/out" ;; err) echo "$T/err" ;; *) echo "$1" ;; esac; }

# t_has out|err|FILE TEXT: fixed-string match
t_has() {
    local f; f=$(_t_file "$1")
    if ! grep -qF -- "$2" "$f"; then
        t_fail "$1 lacks: $2"
        sed 's/^/#   | /' "$f" | head -30
    fi
}

t_lacks() {
    local f; f=$(_t_file "$1")
    if grep -qF -- "$2" "$f"; then
        t_fail "$1 should not contain: $2"
        grep -F -- "$2" "$f" | head -5 | sed 's/^/#   | /'
    fi
}

# t_match out|err|FILE REGEX (extended)
t_match() {
    local f; f=$(_t_file "$1")
    if ! grep -qE -- "$2" "$f"; then
        t_fail "$1 does not match /$2/"
        sed 's/^/#   | /' "$f" | head -30
    fi
}

# t_eq ACTUAL EXPECTED [WHAT]
t_eq() {
    [ "$1" == "$2" ] || t_fail "${3:-value}: got '$1', expected '$2'"
}

# t_jq out|FILE FILTER EXPECTED: jq -r FILTER must print EXPECTED
t_jq() {
    local f got; f=$(_t_file "$1")
    got=$(jq -r "$2" "$f" 2>&1)
    [ "$got" == "$3" ] || t_fail "jq '$2' on $1: got '$got', expected '$3'"
}

# t_spawn NAME CMD...: start in the background in its own process group;
# stdout+stderr go to $T/NAME.log; the pid is in $T/NAME.pid and $_t_last_pid
t_spawn() {
    local name=$1; shift
    setsid "$@" >"$T/$name.log" 2>&1 </dev/null &
    _t_last_pid=$!
    _t_pids+=("$_t_last_pid")
    echo "$_t_last_pid" >"$T/$name.pid"
}

# t_wait SECONDS CMD...: poll CMD every 50 ms until it succeeds; the
# deadline is scaled by GPUMOD_TEST_TIME_SCALE.  Returns 1 on timeout.
t_wait() {
    local secs=$1; shift
    local deadline=$(( $(date +%s%N) / 1000000 + secs * 1000 * GPUMOD_TEST_TIME_SCALE ))
    while ! "$@" >/dev/null 2>&1; do
        [ $(( $(date +%s%N) / 1000000 )) -ge $deadline ] && return 1
        sleep 0.05
    done
    return 0
}

# free_port: a TCP port no socket uses (any state, from /proc/net/tcp{,6}),
# below the kernel's ephemeral range, so that ports left in TIME_WAIT by
# earlier connections never collide with a server's listen; random, so
# that parallel scripts rarely pick the same one
free_port() {
    local lo hi p
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
    hi=$lo
    [ "$hi" -gt 11000 ] || hi=65000
    [ "$hi" -le 20000 ] && lo=10000 || lo=20000
    [ "$hi" -le "$lo" ] && lo=$((hi / 2))
    # ports handed out earlier in this script are remembered in a file (this
    # runs in $(...) subshells), so twenty quick calls never repeat one
    while :; do
        p=$(( lo + (RANDOM * 32768 + RANDOM) % (hi - lo) ))
        grep -qx "$p" "$T/.ports" 2>/dev/null && continue
        awk -v p="$p" 'NR > 1 { split($2, a, ":"); if (strtonum("0x" a[2]) == p) f = 1 } END { exit !f }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null || { echo "$p" >>"$T/.ports"; echo "$p"; return; }
    done
}

# http METHOD URL [BODY]: curl with a deadline; body in $T/out, status in $T/status
http() {
    local m=$1 url=$2 body=${3:-}
    local args=(-s -S -o "$T/out" -w '%{http_code}' -X "$m" --max-time $((10 * GPUMOD_TEST_TIME_SCALE)))
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
    curl "${args[@]}" "$url" >"$T/status" 2>"$T/err"
    return 0
}

# promtool_check FILE: `promtool check metrics` on a Prometheus text
# exposition (exit 0 and no output when it is clean; lint problems exit 3,
# parse errors 1, both printed on stderr).  promtool comes from Debian's prometheus
# package, unpacked by `scripts/install-deps --test-cache build/cache`
# (make test does it); $PROMTOOL names another copy.
PROMTOOL=${PROMTOOL:-$GPUMOD_SRC/build/cache/prometheus/usr/bin/promtool}
promtool_check() {
    if [ ! -x "$PROMTOOL" ]; then
        echo "promtool not found at $PROMTOOL: run scripts/install-deps --test-cache build/cache (make test does)" >&2
        return 127
    fi
    "$PROMTOOL" check metrics <"$1"
}

# --- helpers for scripts that run processes such as fakellm ---------------

# fake_hub [hfgen flags]: the fake Hugging Face Hub (tests/fakes/fakehf.py)
# over the tree hfgen.py writes to $HUBDIR ($T/hf), requests logged to
# $HUBLOG ($T/hf.log); sets HP and CP (the hub's and the CDN's ports),
# HF_ENDPOINT, an empty HF_HOME and no token.  Bails out when it does not
# start (the server is spawned: the cleanup stops it).
fake_hub() {
    HUBDIR=$T/hf HUBLOG=$T/hf.log
    python3 "$GPUMOD_SRC/tests/fakes/hfgen.py" "$HUBDIR" "$@" >"$T/hfgen.log" 2>&1 ||
        { echo "Bail out! hfgen.py failed: $(tail -1 "$T/hfgen.log")"; exit 1; }
    t_spawn fakehf python3 "$GPUMOD_SRC/tests/fakes/fakehf.py" --root "$HUBDIR" \
        --port-file "$T/hub.ports" --log "$HUBLOG"
    t_wait 20 test -s "$T/hub.ports" ||
        { echo "Bail out! the fake hub did not start: $(tail -1 "$T/fakehf.log")"; exit 1; }
    read -r HP CP <"$T/hub.ports"
    unset HF_TOKEN HF_TOKEN_PATH XDG_CACHE_HOME
    export HF_ENDPOINT=http://127.0.0.1:$HP HF_HOME=$T/hfhome
}

# fake_gpu_24g: the fake NVML (tests/fakes) with one 24 GiB GPU, 300 MiB
# in use, state in $T/nvml.json; call before sourcing sup-lib.sh
fake_gpu_24g() {
    export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
    export GPUMOD_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$BUILD/fakes/nvidia-smi
    cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": []}
JSON
}

# fakellm_spawn NAME [VAR=VALUE...] -- ARGS...: t_spawn fakellm with that
# environment added; log in $T/NAME.log, pid in $_t_last_pid
fakellm_spawn() {
    local name=$1 envs=(); shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    t_spawn "$name" env "${envs[@]}" "$FAKELLM_BIN" "$@"
}

# wait_healthy PORT: GET /health answers 2xx within 10 s (scaled); else show
# the log lines that name the port or are errors, and return 1
wait_healthy() {
    t_wait 10 curl -sf -o /dev/null "http://127.0.0.1:$1/health" && return 0
    grep -h -e "$1" -e "^E " "$T"/*.log 2>/dev/null | tail -n 5 | sed 's/^/#   log: /'
    return 1
}

# alive PID: the process exists and is not a zombie
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# reap PID SECONDS: wait until PID (a child of this script) has exited, within
# the scaled deadline; its exit status in $rc ("timeout" and 1 if it did not)
reap() {
    local deadline=$(( $(date +%s%N) / 1000000 + $2 * 1000 * GPUMOD_TEST_TIME_SCALE ))
    while alive "$1"; do
        [ $(( $(date +%s%N) / 1000000 )) -ge $deadline ] && { rc=timeout; return 1; }
        sleep 0.02
    done
    wait "$1" 2>/dev/null; rc=$?
    return 0
}

# rss_mb PID: resident memory in MiB (VmRSS)
rss_mb() { awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$1/status"; }

# stop_all_clean: SIGTERM every process t_spawn started that still runs;
# each must exit 0 within 5 s (scaled), and no $T/*.log may hold a
# sanitizer report (the ASan build's leak check runs at that exit)
stop_all_clean() {
    local p
    for p in "${_t_pids[@]}"; do
        alive "$p" || continue
        kill -TERM "$p"
        reap "$p" 5 || { t_fail "pid $p still running 5 s after SIGTERM"; continue; }
        [ "$rc" -eq 0 ] || t_fail "pid $p exited $rc after SIGTERM"
    done
    if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log 2>/dev/null; then
        t_fail "a sanitizer report:"
        grep -hE -A12 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log | head -40 | sed 's/^/#   /'
    fi
}
