#!/usr/bin/env bash
# Who may use the control socket: the daemon's user, root, members of
# socket_group.  The socket's file mode is the first fence; this test
# opens it (0666 in a world-reachable directory) to prove the daemon's own
# peer-credential check refuses another uid (403 forbidden, exit 1), and
# that socket_group admits a member (primary or supplementary group).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    t_skip "peer credentials" "needs root and setpriv"
    t_done; exit
fi
NOBODY=65534
# a directory every uid can traverse, outside the 0700 test dir
D=$(mktemp -d /tmp/gpumod-peer.XXXXXX)
chmod 0711 "$D"
trap 'rm -rf "$D"; _t_cleanup' EXIT
SOCK=$D/gpumod.sock
export GPUMOD_SOCKET=$SOCK
C=$T/config
mkdir -p "$C/presets"
printf 'router:\n  enabled: false\n' >"$C/gpumod.yaml"
as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
# the binary must be reachable by nobody (the build tree usually is)
if ! as_nobody test -x "$GPUMOD_BIN"; then
    t_skip "peer credentials" "$GPUMOD_BIN is not executable by uid $NOBODY"
    t_done; exit
fi

t_begin "another uid is refused by the daemon itself: 403 forbidden, exit 1"
t_spawn daemon "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod status || t_fail "the daemon never answered"
t_eq "$(stat -c %a "$SOCK")" 600 "socket mode as created"
chmod 0666 "$SOCK" # open the file-mode fence on purpose
t_run 1 as_nobody "$GPUMOD_BIN" --socket "$SOCK" status
t_has err "peer not allowed"
t_run 1 as_nobody "$GPUMOD_BIN" --socket "$SOCK" service start x
t_has "$T/daemon.log" "refused a client with uid $NOBODY"
# a client refused in a loop is logged once per 10 s, not once per try
for i in 1 2 3 4 5; do as_nobody "$GPUMOD_BIN" --socket "$SOCK" status >/dev/null 2>&1; done
t_eq "$(grep -c "refused a client with uid $NOBODY" "$T/daemon.log")" 1 "refused-client lines in the log"
t_run 0 gpumod status
t_end

t_begin "a socket in a directory the user cannot enter: 'permission denied on socket', exit 3"
t_run 3 as_nobody "$GPUMOD_BIN" --socket "$T/x/gpumod.sock" status
t_has err "gpumod: permission denied on socket $T/x/gpumod.sock"
t_lacks err "no daemon is running"
t_end

t_begin "root (and the daemon's own uid) are admitted"
t_run 0 gpumod status --json
t_jq out .daemon.pid "$DPID"
kill -TERM "$DPID"; reap "$DPID" 10; t_eq "$rc" 0 "daemon exit"
t_end

t_begin "socket_group: the socket is 0660 in that group; a member is admitted, others are not"
GROUP=$(getent group $NOBODY | cut -d: -f1)
printf 'router:\n  enabled: false\nsocket_group: %s\n' "$GROUP" >"$C/gpumod.yaml"
t_spawn daemon2 "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod status || t_fail "the daemon never answered"
t_eq "$(stat -c '%a %g' "$SOCK")" "660 $NOBODY" "socket mode and group"
t_run 0 as_nobody "$GPUMOD_BIN" --socket "$SOCK" status --json
t_jq out .daemon.pid "$DPID"
# a member through a supplementary group only
t_run 0 setpriv --reuid=$NOBODY --regid=1 --groups=$NOBODY "$GPUMOD_BIN" --socket "$SOCK" status --json
# not a member: file mode opened again, the daemon still refuses
chmod 0666 "$SOCK"
t_run 1 setpriv --reuid=$NOBODY --regid=1 --clear-groups "$GPUMOD_BIN" --socket "$SOCK" status
t_has err "peer not allowed"
t_end

t_begin "socket_group: the socket's own directory, when gpumod creates it, is 0750 in that group"
kill -TERM "$DPID"; reap "$DPID" 10
SOCK2=$D/run/sub/gpumod.sock
GPUMOD_SOCKET=$SOCK2 t_spawn daemon3 "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod --socket "$SOCK2" status || t_fail "the daemon never answered"
t_eq "$(stat -c '%a %g' "$D/run/sub")" "750 $NOBODY" "socket directory mode and group"
t_run 0 as_nobody "$GPUMOD_BIN" --socket "$SOCK2" status --json
t_jq out .daemon.pid "$DPID"
kill -TERM "$DPID"; reap "$DPID" 10; t_eq "$rc" 0 "daemon exit"
t_end

t_begin "socket_group with a socket its members cannot reach: a warning at start-up names the directory"
GPUMOD_SOCKET=$T/gpumod.sock t_spawn daemon4 "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod --socket "$T/gpumod.sock" status || t_fail "the daemon never answered"
t_has "$T/daemon4.log" "members of socket_group '$GROUP' cannot reach it: directory '$T'"
kill -TERM "$DPID"; reap "$DPID" 10; t_eq "$rc" 0 "daemon exit"
t_end

t_begin "socket_group naming no group: serve exits 2 and says so"
printf 'router:\n  enabled: false\nsocket_group: no-such-group-gpumod\n' >"$C/gpumod.yaml"
t_run 2 gpumod serve --foreground
t_has err "socket_group 'no-such-group-gpumod' is not a group on this host"
t_end

t_done
