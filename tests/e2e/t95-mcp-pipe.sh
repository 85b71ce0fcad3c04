#!/usr/bin/env bash
# gpumod mcp driven over its pipe with scripted JSON-RPC (tests/mcp/pipe.py),
# for what an SDK never sends: malformed frames and their codes, a line
# over 4 MiB, CRLF and blank lines, notifications never answered, a stray
# response; every protocol version negotiated (and one it does not speak),
# a batch only in 2025-03-26, a second initialize; an unknown method,
# tool, resource and cursor, and arguments against the schemas; --read-only;
# no daemon (each tool says so, the server lives on); a daemon restarted
# mid-session (a call in the gap fails, later calls and the subscription
# work again); a switch with progress while ping is answered, a cancelled
# call never answered, wait=false and switch_status; the gate's refusal as
# a tool error, the rate limit; escapes and secrets in a log never reach
# the client.  Every line the server writes must be a JSON-RPC message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
preset a "$(free_port)"
preset slow "$(free_port)" 'env: {FAKELLM_LOAD_MS: "1500"}'
printf 'id: huge\ndriver: command\nport: %s\ncommand: [fakellm, -m, %s, --port, "{port}"]\nmemory: {host_mb: 16000000}\n' \
    "$(free_port)" "$MODEL" >"$C/presets/huge.yaml"
PN=$(free_port)
printf 'id: noisy\ndriver: command\nport: %s\nmemory: {host_mb: 16}\ncommand: [sh, -c, "printf %s; exec fakellm -m %s --port %s"]\n' \
    "$PN" "'NOISY \\\\033[31mred\\\\033[0m bell\\\\007 c1\\\\302\\\\233 --api-key sekrit\\\\n'" "$MODEL" "$PN" \
    >"$C/presets/noisy.yaml"
mkdir -p "$C/modes"
printf 'id: S\nservices: [slow]\n' >"$C/modes/S.yaml"
export GPUMOD_BIN MCP_STDERR=$T/mcp.err
pipe() { python3 "$GPUMOD_SRC/tests/mcp/pipe.py" "$1"; }

t_begin "framing: bad lines get their JSON-RPC codes, long lines are skipped, notifications are never answered"
t_run 0 pipe framing
t_end

t_begin "initialize negotiates 2025-06-18, 2025-03-26 and 2024-11-05 (else the newest); batches only in 2025-03-26"
t_run 0 pipe versions
t_end

t_begin "protocol errors: unknown method, tool, resource, cursor; arguments against the schema are -32602"
t_run 0 pipe methods
t_end

t_begin "--read-only lists no changing tool and refuses a call to one"
t_run 0 pipe readonly
t_end

t_begin "--no-events advertises no subscriptions"
t_run 0 pipe no_events
t_end

t_begin "no daemon: every tool answers an error that says so and how to start one; the server keeps running"
t_run 0 pipe daemon_down
t_end

daemon_start

t_begin "a daemon restarted mid-session: the call in the gap fails with a message, later calls and the subscription work"
rm -f "$T/sig".*
MCP_SIGNAL=$T/sig t_spawn restart python3 "$GPUMOD_SRC/tests/mcp/pipe.py" restart_wait
RPID=$_t_last_pid
t_wait 20 test -e "$T/sig.up" || t_fail "the client never said it was up"
daemon_stop
touch "$T/sig.down"
t_wait 20 test -e "$T/sig.asked" || t_fail "the client never asked while the daemon was down"
daemon_start
touch "$T/sig.again"
reap "$RPID" 60 || t_fail "the client did not end"
[ "$rc" = 0 ] || { t_fail "the restart scenario failed (exit $rc)"; sed 's/^/#   /' "$T/restart.log"; }
t_end

t_begin "switch_mode: progress notifications while ping is answered; a cancelled call is not answered; wait=false"
t_run 0 pipe switch_progress
t_end

t_begin "start_service: progress notifications while the engine loads, each larger than the last"
t_run 0 pipe start_progress
t_end

t_begin "a start the gate refuses is a tool error with its reason; the rate limit; ids that do not exist"
t_run 0 pipe refused
t_end

t_begin "service_logs: escapes and control characters are removed, secret values redacted"
t_run 0 gpumod service start noisy
t_run 0 pipe sanitized
t_run 0 gpumod service stop noisy
t_end

t_begin "stdout carries only protocol messages; stderr has the audit line of each changing call"
t_has "$T/mcp.err" 'gpumod-mcp: tool switch_mode {"mode_id":"S"}'
t_has "$T/mcp.err" 'gpumod-mcp: tool start_service {"service_id":"a"}'
t_end

t_begin "gpumod mcp: usage errors"
t_run 2 gpumod mcp --rate abc
t_has err "--rate: expected an integer from 0 to 1000, found 'abc'"
t_run 2 gpumod mcp --bogus
t_has err "unknown option '--bogus'"
t_run 0 gpumod mcp --help
t_has out "--read-only"
t_end

daemon_stop
t_done
