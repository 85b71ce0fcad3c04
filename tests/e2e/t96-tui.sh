#!/usr/bin/env bash
# gpumod tui, driven as a person would through tmux (its own server
# socket, an 80x24 window): the dashboard shows the services and the
# memory of the fake GPU; an event from outside (a start by the CLI)
# reaches the screen without a key; a mode switch confirmed from the
# dashboard shows its plan, then the new mode; a start the gate refuses
# shows the gate's reason; a resize to 100x30 and back redraws; ? shows
# the keys; the daemon going away is said on screen and the dashboard
# recovers when it is back; NO_COLOR draws without colours; q gives the
# terminal back with exit 0.  Usage errors exit 2.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
. "$(dirname "$0")/sup-lib.sh"

if ! command -v tmux >/dev/null; then
    t_skip "gpumod tui under tmux" "tmux is not installed (scripts/install-deps installs it)"
    t_done
    exit 0
fi

cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok"}],
 "processes": []}
JSON
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
gpu_preset() { # ID PORT MIB
    printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\ndevices: [0]\nmemory: {gpu_mb: %s, host_mb: 16}\nenv:\n  GPUMOD_FAKE_NVML_STATE: %s\n  FAKELLM_GPU_MB: "%s"\n' \
        "$1" "$2" "$FAKELLM_BIN" "$MODEL" "$3" "$T/nvml.json" "$3" >"$C/presets/$1.yaml"
}
gpu_preset alpha "$(free_port)" 1000
gpu_preset beta "$(free_port)" 2000
gpu_preset huge "$(free_port)" 30000
mkdir -p "$C/modes"
printf 'id: A\nservices: [alpha]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [alpha, beta]\n' >"$C/modes/B.yaml"
daemon_start

t_begin "usage errors: an unknown option, no terminal"
t_run 2 gpumod tui --bogus
t_has err "gpumod tui: unknown option '--bogus'"
t_run 2 gpumod tui
t_has err "gpumod tui: needs a terminal"
t_end

TM=(tmux -L "gpumod-t96-$$" -f /dev/null)
tm_cleanup() { "${TM[@]}" kill-server 2>/dev/null; }
trap 'tm_cleanup; _t_cleanup' EXIT
# the dashboard runs through the CLI (its exec of the helper) in a pane;
# its exit status is written to $T/tui.rc, stderr to $T/tui.err
cat >"$T/run-tui.sh" <<EOF
#!/bin/sh
"$GPUMOD_BIN" tui "\$@" 2>>"$T/tui.err"
echo \$? >"$T/tui.rc"
# the terminal's modes after it: curses must have put echo and canonical input back
stty -a | tr ' ;' '\n\n' | grep -xE -- '-?(echo|icanon)' | sort | tr '\n' ' ' >"$T/tui.stty"
echo "TUI EXITED rc=\$(cat "$T/tui.rc")"
exec sleep 600
EOF
chmod +x "$T/run-tui.sh"
# tm_start NAME [ENV=V...] -- ARGS: a window NAME running the dashboard
tm_start() {
    local name=$1 envs=(); shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    rm -f "$T/tui.rc"
    if ! "${TM[@]}" has-session -t t96 2>/dev/null; then
        "${TM[@]}" new-session -d -s t96 -n "$name" -x 80 -y 24 env TERM=screen "${envs[@]}" "$T/run-tui.sh" "$@"
    else
        "${TM[@]}" new-window -t t96 -n "$name" env TERM=screen "${envs[@]}" "$T/run-tui.sh" "$@"
    fi
}
W=t96:main
screen() { "${TM[@]}" capture-pane -p -t "$W"; }
has() { screen | grep -qF -- "$1"; }
lacks() { ! screen | grep -qF -- "$1"; }
matches() { screen | grep -qE -- "$1"; }
keys() { "${TM[@]}" send-keys -t "$W" "$@"; }
# expect TEXT WHAT: wait up to 10 s (scaled) for TEXT on screen, else fail showing it
expect() {
    t_wait 10 has "$1" && return 0
    t_fail "${2:-the screen} lacks: $1"
    screen | sed 's/^/#   | /'
    return 1
}
expect_re() {
    t_wait 10 matches "$1" && return 0
    t_fail "${2:-the screen} does not match /$1/"
    screen | sed 's/^/#   | /'
    return 1
}
expect_gone() {
    t_wait 10 lacks "$1" && return 0
    t_fail "still on screen: $1"
    screen | sed 's/^/#   | /'
    return 1
}
# every line of the pane at most $1 columns and the pane $2 lines
size_is() { [ "$(screen | wc -l)" -eq "$2" ] && [ "$(screen | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')" -le "$1" ]; }

t_begin "the dashboard shows the services and the memory of the host and the GPU"
tm_start main -- 
expect "SERVICE"
expect_re "^gpu0 +\[.*\] used .*Fake 24GB"
expect_re "^host +\[.*\] used "
expect_re "^[ >] alpha +down"
expect_re "^[ >] huge +down"
expect "mode none"
expect "recent events"
t_end

t_begin "an event from outside reaches the screen without a key press"
t_run 0 gpumod service start alpha
expect_re "alpha +ready +[0-9]+ MiB / [0-9]+ MiB +[0-9]+ +<1m"
expect_re "alpha state starting->ready"
expect "mode A"
t_end

t_begin "a mode switch from the dashboard: the plan, y, then the new mode with its services ready"
keys m
expect "switch to mode"
expect_re "^ *\| B "
keys Down Enter
expect "plan of the switch"
expect "starts: beta"
expect "keeps: alpha"
expect "verdict: fits"
expect "switch now? (y/n)"
keys y
expect "switched to 'B'"
expect "mode B"
expect_re "beta +ready"
expect_re "alpha +ready"
[ "$(gpumod mode current --json | jq -r .mode)" = B ] || t_fail "the daemon's mode is not B"
t_end

t_begin "a start the gate refuses shows the gate's reason"
keys j j
expect_re "^> huge"
keys s
expect "start 'huge'? (y/n)"
keys y
expect_re "start of 'huge': refused: .*GPU 0 free [0-9]+ MiB < required [0-9]+ MiB"
t_diag "$(screen | grep -F "start of 'huge'")"
expect_re "^  huge +down|^> huge +down"
t_end

t_begin "a resize to 100x30 and back to 80x24 redraws the whole screen"
"${TM[@]}" resize-window -t "$W" -x 100 -y 30
t_wait 10 size_is 100 30 || t_fail "the pane is not 100x30"
expect_re "^ gpumod  mode B {20,}.*q quit$"
t_wait 10 eval '[ "$(screen | head -1 | wc -c)" -eq 101 ]' || t_fail "the title is not 100 columns wide: $(screen | head -1)"
expect_re "^host  \[[#+.]{30}\] used"
"${TM[@]}" resize-window -t "$W" -x 80 -y 24
t_wait 10 size_is 80 24 || t_fail "the pane is not 80x24"
t_wait 10 eval '[ "$(screen | head -1 | wc -c)" -eq 81 ]' || t_fail "the title is not 80 columns wide: $(screen | head -1)"
expect_re "^> huge +down"
expect_re "^host  \[[#+.]{20}\] used"
expect "up/dn select  s start"
t_end

t_begin "? shows the keys; any key closes it"
keys '?'
expect "start the selected service"
expect "bars: # in use, + reserved"
keys Space
expect_gone "start the selected service"
t_end

t_begin "the daemon goes away: the screen says so; it comes back: the dashboard recovers"
daemon_stop
expect "daemon not reachable at $GPUMOD_SOCKET"
daemon_start
expect_gone "daemon not reachable"
expect_re "alpha +(down|ready)"
t_run 0 gpumod service start beta
expect_re "beta +ready"
t_end

t_begin "l follows the selected service's log; l again shows the events"
keys k
expect_re "^> beta"
keys l
expect "log beta"
expect "listening on"
keys l
expect "recent events"
t_end

t_begin "colours by default; none with NO_COLOR"
colours() { "${TM[@]}" capture-pane -e -p -t "$1" | grep -qE $'\e''\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5;[0-9]+)(;[0-9;]*)?m'; }
t_wait 10 colours "$W" || t_fail "no colour on the default screen"
tm_start nc NO_COLOR=1 --
W=t96:nc
expect "SERVICE"
expect_re "beta +ready"
colours "$W" && t_fail "colours with NO_COLOR=1"
keys q
t_wait 10 has "TUI EXITED rc=0" || t_fail "NO_COLOR dashboard did not end 0 on q"
tm_start nc2 -- --no-color
W=t96:nc2
expect "SERVICE"
colours "$W" && t_fail "colours with --no-color"
keys q
t_wait 10 has "TUI EXITED rc=0" || t_fail "--no-color dashboard did not end 0 on q"
W=t96:main
t_end

t_begin "q gives the terminal back: the dashboard exits 0 and its screen is gone"
keys q
expect "TUI EXITED rc=0"
lacks "SERVICE" || t_fail "the dashboard's screen was left on the terminal"
[ "$(cat "$T/tui.rc" 2>/dev/null)" = 0 ] || t_fail "exit status $(cat "$T/tui.rc" 2>/dev/null)"
t_eq "$(cat "$T/tui.stty" 2>/dev/null)" "echo icanon " "the terminal's modes after q"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T/tui.err" 2>/dev/null; then
    t_fail "a sanitizer report from gpumod-tui:"
    head -40 "$T/tui.err" | sed 's/^/#   /'
fi
t_end

# signal_ends SIG WINDOW: the dashboard in a window of its own gets SIG
# (sent to it alone: the pane's sh would take a Ctrl-\\ or Ctrl-C too) and
# must exit 0, its screen gone, echo and canonical input back
signal_ends() {
    tm_start "$2" --
    W=t96:$2
    expect "SERVICE"
    # the pane's shell runs the dashboard as its child (gpumod execs gpumod-tui)
    local pp tpid
    pp=$("${TM[@]}" display-message -p -t "$W" '#{pane_pid}')
    tpid=$(ps -o pid=,comm= --ppid "$pp" | awk '$2 == "gpumod-tui" { print $1 }')
    [ -n "$tpid" ] && kill "-$1" "$tpid" || t_fail "no gpumod-tui under the pane's shell ($pp)"
    expect "TUI EXITED rc=0"
    lacks "SERVICE" || t_fail "the dashboard's screen was left on the terminal"
    t_eq "$(cat "$T/tui.stty" 2>/dev/null)" "echo icanon " "the terminal's modes after SIG$1"
}

t_begin "SIGTERM ends the dashboard with exit 0 and gives the terminal back"
signal_ends TERM sig
t_end

t_begin "SIGQUIT (Ctrl-\\) ends it like SIGTERM"
signal_ends QUIT quit
t_end

t_begin "the daemon stops cleanly"
stop_all_clean
t_end
t_done
