#!/usr/bin/env bash
# t71-router-drain: a mode switch drains the leaving service through the
# router.  A stream in flight on it finishes whole before the service is
# stopped, and a request for the new service sent meanwhile is answered
# by it once the switch is done; a stream that outlives drain_timeout is
# ended with an SSE error event.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

PA=$(free_port) PB=$(free_port)
rsettings "" 'switch: {drain_timeout: 10s}'
rpreset a "$PA" 4096 'unit_vars: {parallel: 2}' 'env: {FAKELLM_TPS: "20"}'
rpreset b "$PB" 4096 'unit_vars: {parallel: 2}' 'env: {FAKELLM_TPS: "20"}'
mkdir -p "$C/modes"
printf 'id: A\nservices: [a]\n' >"$C/modes/A.yaml"
printf 'id: B\nservices: [b]\n' >"$C/modes/B.yaml"

daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod mode switch A

t_begin "a stream in flight on a leaving service finishes; a request for the new one waits for the switch"
curl -s -N --max-time $((30 * S)) -o "$T/long.sse" "$RURL/v1/chat/completions" -d "$(chat a true 30)" &
lpid=$!
t_wait 5 grep -q '"content"' "$T/long.sse" || t_fail "the stream never started"
gpumod mode switch B --json >"$T/switch.json" 2>"$T/switch.err" &
spid=$!
t_wait 5 sh -c "gpumod route show --json | jq -e '.services[] | select(.id == \"a\") | .draining' >/dev/null" ||
    t_fail "a never drained"
curl -s --max-time $((30 * S)) -o "$T/new.json" "$RURL/v1/chat/completions" -d "$(chat b false 2)" &
npid=$!
wait $lpid
t_has "$T/long.sse" "data: [DONE]"
t_lacks "$T/long.sse" "event: error"
t_eq "$(grep -c '"content":" ' "$T/long.sse")" 29 "tokens after the first"
wait $spid
t_jq "$T/switch.json" .outcome committed
t_jq "$T/switch.json" '.phases[] | select(.phase == "drain") | .ok' true
wait $npid
t_jq "$T/new.json" .model b
t_eq "$(state_of a),$(state_of b)" "down,ready" "states"
t_end

t_begin "a stream that outlives drain_timeout ends with an SSE error event"
sed -i 's/drain_timeout: 10s/drain_timeout: 300ms/' "$C/gpumod.yaml"
t_run 0 gpumod reload
curl -s -N --max-time $((30 * S)) -o "$T/cut.sse" "$RURL/v1/chat/completions" -d "$(chat b true 400)" &
cpid=$!
t_wait 5 grep -q '"content"' "$T/cut.sse" || t_fail "the stream never started"
t_run 0 gpumod mode switch A
wait $cpid
t_has "$T/cut.sse" "event: error"
t_lacks "$T/cut.sse" "[DONE]"
# the drain deadline cut it (not b's stop closing the connection), before b was stopped
t_has "$T/cut.sse" "service 'b' is being switched out and drain_timeout passed"
t_has "$T/cut.sse" '"code":"draining"'
t_lacks "$T/cut.sse" "closed the connection"
cut=$(grep -n '"POST /v1/chat/completions" model=b -> b status=200' "$T/daemon.log" | tail -1 | cut -d: -f1)
stop=$(grep -n 'state b: [a-z]* -> stopping' "$T/daemon.log" | tail -1 | cut -d: -f1)
[ -n "$cut" ] && [ -n "$stop" ] && [ "$cut" -lt "$stop" ] ||
    t_fail "the stream's access line (line ${cut:-none}) is not before b's stop (line ${stop:-none}) in the daemon log: $(sed -n "$((${stop:-1} - 5)),$((${cut:-1} + 2))p" "$T/daemon.log")"
t_eq "$(state_of a),$(state_of b)" "ready,down" "states"
t_end

daemon_stop
stop_all_clean
t_done
