# tests/e2e/systemd-lib.sh - a private D-Bus session bus with the fake
# systemd (tests/fakes/fake-systemd.py) on it, for the tests of the fake
# and of gpumod's systemd runner.  Sourced after lib.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/systemd-lib.sh"
#   systemd_usable || { t_skip "..." "$SYSTEMD_WHY"; t_done; exit; }
#   bus_start                 # exports DBUS_SESSION_BUS_ADDRESS (private)
#   systemd_fake_start        # units from $GPUMOD_UNIT_DIR (default $T/units)
#   ... gpumod serve / busctl --user ... ...
#   systemd_fake_stop         # SIGTERM: exit 0 within 5 s, children killed
#
# Both processes are killed at the script's exit if still running.  The
# fake logs every method call to $FAKE_SYSTEMD_LOG ($T/fake-systemd.calls)
# as "Method arg...", its state changes to $T/fake-systemd.log.

SYSTEMD_FAKE=$GPUMOD_SRC/tests/fakes/fake-systemd.py
# Debian's interpreter: python3-dbus and python3-gi are not in a pyenv's
SYSTEMD_PY=${SYSTEMD_PY:-/usr/bin/python3}
export GPUMOD_UNIT_DIR=${GPUMOD_UNIT_DIR:-$T/units}
export FAKE_SYSTEMD_LOG=${FAKE_SYSTEMD_LOG:-$T/fake-systemd.calls}
mkdir -p "$GPUMOD_UNIT_DIR"
SD_DEST=org.freedesktop.systemd1
SD_PATH=/org/freedesktop/systemd1
SD_MGR=org.freedesktop.systemd1.Manager

# systemd_usable: 0 when the fake can run here; else 1 with the reason
# in $SYSTEMD_WHY (for t_skip)
systemd_usable() {
    SYSTEMD_WHY=""
    command -v dbus-daemon >/dev/null || SYSTEMD_WHY="no dbus-daemon (Debian dbus-daemon; scripts/install-deps)"
    command -v dbus-send >/dev/null || SYSTEMD_WHY="no dbus-send (Debian dbus-bin; scripts/install-deps)"
    [ -z "$SYSTEMD_WHY" ] && ! "$SYSTEMD_PY" -c 'import dbus, dbus.mainloop.glib; from gi.repository import GLib' \
        2>/dev/null && SYSTEMD_WHY="$SYSTEMD_PY lacks the dbus or gi module (Debian python3-dbus python3-gi)"
    [ -z "$SYSTEMD_WHY" ]
}

# bus_start: a private session bus on a socket in $T; exports
# DBUS_SESSION_BUS_ADDRESS (so sd_bus_open_user, busctl --user, gdbus
# --session and dbus-send --session all use it); pid in $BUS_PID
bus_start() {
    local out
    unset DBUS_SESSION_BUS_ADDRESS
    out=$(timeout $((10 * GPUMOD_TEST_TIME_SCALE)) dbus-daemon --session --address="unix:path=$T/bus" \
        --fork --print-address=1 --print-pid=1 2>"$T/bus.err") || {
        t_fail "dbus-daemon --session did not start: $(head -c 300 "$T/bus.err")"
        return 1
    }
    DBUS_SESSION_BUS_ADDRESS=$(printf '%s\n' "$out" | sed -n 1p)
    BUS_PID=$(printf '%s\n' "$out" | sed -n 2p)
    export DBUS_SESSION_BUS_ADDRESS
    _t_pids+=("$BUS_PID")
}

# name_owned [NAME]: the bus has an owner for NAME (default the fake's)
name_owned() {
    timeout $((5 * GPUMOD_TEST_TIME_SCALE)) dbus-send --session --print-reply --dest=org.freedesktop.DBus \
        /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner "string:${1:-$SD_DEST}" 2>/dev/null |
        grep -q 'boolean true'
}

# systemd_fake_start: the fake on the bus, waits (10 s, scaled) until it
# owns org.freedesktop.systemd1; pid in $SYSTEMD_PID
systemd_fake_start() {
    t_spawn fake-systemd "$SYSTEMD_PY" "$SYSTEMD_FAKE"
    SYSTEMD_PID=$_t_last_pid
    if ! t_wait 10 name_owned; then
        t_fail "the fake systemd never owned $SD_DEST"
        sed 's/^/#   fake-systemd: /' "$T/fake-systemd.log" | tail -20
        return 1
    fi
}

# systemd_fake_stop: SIGTERM; it must exit 0 within 5 s (scaled)
systemd_fake_stop() {
    kill -TERM "$SYSTEMD_PID" 2>/dev/null
    reap "$SYSTEMD_PID" 5 || { t_fail "the fake systemd did not exit 5 s after SIGTERM"; return 1; }
    [ "$rc" = 0 ] || t_fail "the fake systemd exited $rc after SIGTERM"
}

# gone PID: the process no longer runs (zombies count as gone)
gone() { ! alive "$1"; }

# unit_path NAME: the unit's object path (systemd's bus_label_escape)
unit_path() {
    local LC_ALL=C s=$1 out="" i c
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        if [[ $c == [A-Za-z] ]] || { [ "$i" -gt 0 ] && [[ $c == [0-9] ]]; }; then
            out+=$c
        else
            out+=$(printf '_%02x' "'$c")
        fi
    done
    echo "$SD_PATH/unit/${out:-_}"
}

# sd_call METHOD SIGNATURE ARGS...: busctl --user call on the Manager;
# the answer in $T/out, errors in $T/err; returns busctl's status
sd_call() {
    local m=$1; shift
    busctl --user --timeout=$((10 * GPUMOD_TEST_TIME_SCALE)) call "$SD_DEST" "$SD_PATH" "$SD_MGR" "$m" "$@" \
        >"$T/out" 2>"$T/err"
}

# sd_prop UNIT PROP: the value of a Unit or Service property (quotes off)
sd_prop() {
    local iface=org.freedesktop.systemd1.Service
    case "$2" in
    Id | Names | Description | LoadState | ActiveState | SubState | FragmentPath | NeedDaemonReload | Job | LoadError | \
        *Timestamp | *TimestampMonotonic | StartLimit*) iface=org.freedesktop.systemd1.Unit ;;
    esac
    busctl --user --timeout=$((10 * GPUMOD_TEST_TIME_SCALE)) get-property "$SD_DEST" "$(unit_path "$1")" \
        "$iface" "$2" 2>&1 | sed -E 's/^[a-z()]+ //; s/^"(.*)"$/\1/'
}

# sd_state UNIT: "ActiveState/SubState"
sd_state() { echo "$(sd_prop "$1" ActiveState)/$(sd_prop "$1" SubState)"; }
sd_is() { [ "$(sd_state "$1")" = "$2" ]; }

# sd_wait UNIT ACTIVE/SUB [SECONDS]: until the unit is in that state (10 s
# default, scaled); a failure names the state it was in
sd_wait() {
    t_wait "${3:-10}" sd_is "$1" "$2" && return 0
    t_fail "$1 never reached $2 (it is $(sd_state "$1"), Result $(sd_prop "$1" Result))"
    tail -5 "$T/fake-systemd.log" | sed 's/^/#   fake-systemd: /'
    return 1
}

# sd_subscribe_hold: a client that calls Manager.Subscribe and stays on
# the bus (systemd sends unit and job signals only while someone is
# subscribed); pid in $SUB_PID
sd_subscribe_hold() {
    t_spawn subscriber "$SYSTEMD_PY" -c '
import dbus, signal, sys, time
b = dbus.SessionBus()
b.call_blocking("org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                "Subscribe", "", [])
print("subscribed", flush=True)
time.sleep(3600)'
    SUB_PID=$_t_last_pid
    t_wait 10 grep -q subscribed "$T/subscriber.log" || t_fail "the subscriber never subscribed: $(cat "$T/subscriber.log")"
}

# sd_monitor_start: gdbus monitor of the fake's signals into $T/monitor.log
# (one line per signal); ended at the script's exit
sd_monitor_start() {
    t_spawn monitor stdbuf -oL gdbus monitor --session --dest "$SD_DEST"
    t_wait 10 grep -q 'Monitoring signals' "$T/monitor.log" || t_fail "gdbus monitor did not start"
}
