#!/usr/bin/env bash
# 20 start/stop cycles of one service through the daemon leave nothing
# behind: the daemon holds as many fds after the last cycle as after the
# first, has no child after each stop (gpumod-exec is its only child while
# the service runs), and its RSS grows by less than 4 MiB from the first
# cycle to the last; it then stops cleanly (under ASan or valgrind that is
# where a leak is reported).  scripts/bench-cycles is the same check with
# 100 cycles and figures (docs/startup.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

CYCLES=20
RSS_BOUND_KB=4096
settings "supervisor: {health_interval: 1s, stop_timeout: 5s}"
P=$(free_port)
preset cyc "$P" 'env: {FAKELLM_LOAD_MS: "20"}' 'memory: {gpu_mb: 0, host_mb: 16}'
daemon_start

dfds() { ls "/proc/$DPID/fd" | wc -l; }
# the pids whose parent is the daemon (zombies included), from the real /proc
dchildren() {
    local s line rest f
    for s in /proc/[0-9]*/stat; do
        { read -r line <"$s"; } 2>/dev/null || continue
        rest=${line##*) }
        read -r -a f <<<"$rest"
        [ "${f[1]}" = "$DPID" ] && { s=${s#/proc/}; echo "${s%/stat}"; }
    done
    return 0
}
no_children() { [ -z "$(dchildren)" ]; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"; }
# CLI connections the daemon still holds: its socket fds that are accepted
# connections on the control socket (/proc/net/unix lists an accepted
# socket with the listener's path, state 03 = connected).  The daemon
# closes a CLI's connection a moment after the CLI exits; the baseline is
# read only once it holds none.
cli_conns() {
    local inodes
    inodes=$(awk -v p="$GPUMOD_SOCKET" '$8 == p && $6 == "03" { print $7 }' /proc/net/unix)
    [ -n "$inodes" ] || { echo 0; return; }
    ls -l "/proc/$DPID/fd" 2>/dev/null | grep -oE 'socket:\[[0-9]+\]' | tr -dc '0-9\n' |
        grep -cxF -f <(echo "$inodes") || true
}
quiet() { [ "$(cli_conns)" = 0 ] && no_children; }
fds_are() { [ "$(dfds)" = "$1" ]; }
cycle() {
    t_run 0 gpumod service start cyc
    t_run 0 gpumod service stop cyc
    t_eq "$(state_of cyc)" down "state after stop ($1)"
    t_wait 5 no_children || t_fail "cycle $1: the daemon's children after stop: $(dchildren | tr '\n' ' ')"
}

t_begin "cycle 1: gpumod-exec is the daemon's only child while ready, none after stop"
t_run 0 gpumod service start cyc
t_eq "$(state_of cyc)" ready "state after start"
if runner_is systemd; then # the unit's processes are systemd's children, not the daemon's
    t_eq "$(dchildren | tr -d '\n')" "" "the daemon's children while ready (systemd runner: none)"
else
    t_eq "$(dchildren | tr -d '\n')" "$(field cyc .pgid)" "the daemon's children while ready (the helper = the pgid)"
fi
t_run 0 gpumod service stop cyc
t_eq "$(state_of cyc)" down "state after stop"
t_wait 5 no_children || t_fail "the daemon's children after stop: $(dchildren | tr '\n' ' ')"
t_wait 5 quiet || t_fail "the daemon still holds $(cli_conns) CLI connection(s) after cycle 1"
fds1=$(dfds) rss1=$(rss_kb)
ls -l "/proc/$DPID/fd" | awk 'NR > 1 { print $9, $10, $11 }' >"$T/fds1"
t_diag "after cycle 1: $fds1 fds, VmRSS $rss1 kB"
t_end

t_begin "cycles 2..$CYCLES: every start and stop succeeds, no child after each stop"
for c in $(seq 2 $CYCLES); do
    cycle "$c"
    [ "$_t_failed" -eq 0 ] || break
done
t_end

t_begin "after $CYCLES cycles: as many fds as after cycle 1"
# the fds come back to the baseline once the daemon has closed the last
# CLI connections (5 s x scale only proves they do not stay open)
t_wait 5 fds_are "$fds1"
fdsN=$(dfds) rssN=$(rss_kb)
t_diag "after cycle $CYCLES: $fdsN fds, VmRSS $rssN kB ($((rssN - rss1)) kB more than after cycle 1)"
if [ "$fdsN" != "$fds1" ]; then
    t_fail "$fdsN fds after cycle $CYCLES, $fds1 after cycle 1; the difference:"
    ls -l "/proc/$DPID/fd" | awk 'NR > 1 { print $9, $10, $11 }' | diff "$T/fds1" - | sed 's/^/#   /'
fi
gpumod events --json --service cyc -n 1000 >"$T/ev.json"
t_jq "$T/ev.json" '[.events[] | select(.kind == "spawn")] | length' "$CYCLES"
t_jq "$T/ev.json" '[.events[] | select(.kind == "exit")] | length' "$CYCLES"
t_end

# ASan's quarantine and valgrind's own heap grow with churn: there the tool's
# leak check at the daemon's exit (below) is the memory check
if [ -n "${GPUMOD_VALGRIND:-}" ] || grep -qaE "AddressSanitizer|__asan_init" "$GPUMOD_BIN"; then
    t_skip "VmRSS grows by less than $RSS_BOUND_KB kB from cycle 1 to $CYCLES" "sanitizer or valgrind build"
else
    t_begin "VmRSS grows by less than $RSS_BOUND_KB kB from cycle 1 to $CYCLES"
    [ $((rssN - rss1)) -lt $RSS_BOUND_KB ] ||
        t_fail "VmRSS $rss1 kB after cycle 1, $rssN kB after cycle $CYCLES"
    t_end
fi

t_begin "the daemon stops cleanly (exit 0, no sanitizer or valgrind report)"
stop_all_clean
t_end
t_done
