#!/usr/bin/env bash
# Restart policy through the daemon: a service that crashes after each
# request is restarted with growing delays, then failed, with exactly the
# policy's number of spawns; a service whose /health starts failing goes
# unhealthy and is restarted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

# health_interval 1s: a probe's deadline is the interval, so a probe slowed
# by a busy machine never fails (and restarts) the crash service; the
# wedge's failures are answers (status 500), which a slow probe cannot fake
settings "supervisor: {stop_timeout: 2s, health_interval: 1s, health_failures: 2}"
P1=$(free_port) P2=$(free_port)
preset crash "$P1" 'env: {FAKELLM_CRASH_AFTER: "1"}' \
    'restart: {max_restarts: 2, restart_window: 10m, backoff_initial: 200ms, backoff_max: 10s}'
# 3 healthy answers: readiness probe(s) and the first health checks, then 500
preset wedge "$P2" 'env: {FAKELLM_HEALTH_FAIL_AFTER: "3"}' \
    'restart: {max_restarts: 1, restart_window: 10m, backoff_initial: 100ms, backoff_max: 1s}'
daemon_start

ask() { curl -s -o /dev/null --max-time $((5 * S)) -H 'Content-Type: application/json' \
        -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}' "http://127.0.0.1:$P1/v1/chat/completions"; }
spawns_are() { [ "$(count spawn crash)" = "$1" ]; }

if runner_is systemd; then
    # systemd restarts the crash (Restart=on-failure, RestartSec fixed: no
    # growing delays) and gives up at StartLimitBurst = 1 + max_restarts runs
    restarts_are() { [ "$(count restart crash)" = "$1" ]; }
    t_begin "crash after a request: restarted by systemd, then failed at the start limit; runs = 1 + max_restarts"
    t_run 0 gpumod service start crash
    for round in 1 2 3; do
        t_wait 10 is_state crash ready || t_fail "round $round: not ready (state $(state_of crash))"
        ask
        if [ $round -lt 3 ]; then
            t_wait 10 restarts_are $round || t_fail "round $round: no restart (restarts $(count restart crash))"
        fi
    done
    t_wait 10 is_state crash failed || t_fail "not failed at the start limit (state $(state_of crash))"
    events crash
    t_eq "$(jq -s '[.[] | select(.kind == "spawn")] | length' "$T/ev")" 1 "spawns (one StartUnit)"
    t_eq "$(jq -rs '[.[] | select(.kind == "exit" and .data.pid > 0) | .data.signal] | map(tostring) | join(" ")' "$T/ev")" \
        "6 6 6" "exits of a main process (SIGABRT)"
    t_eq "$(jq -rs '[.[] | select(.kind == "restart") | .data.by] | unique | join(" ")' "$T/ev")" systemd "restarted by"
    t_has "$T/ev" "start limit hit"
    t_eq "$(sd_prop gpumod-crash.service Result)" start-limit-hit "unit Result"
    t_eq "$(field crash .last_exit.signal)" 6 "last_exit.signal"
    sleep $((1 * S))
    t_eq "$(sd_state gpumod-crash.service)" failed/failed "unit state a second later"
    t_end
else
    t_begin "crash after a request: restarted with growing delays, then failed; spawns = 1 + max_restarts"
    t_run 0 gpumod service start crash
    for round in 1 2 3; do
        t_wait 10 is_state crash ready || t_fail "round $round: not ready (state $(state_of crash))"
        ask
        if [ $round -lt 3 ]; then
            t_wait 10 spawns_are $((round + 1)) || t_fail "round $round: no restart (spawns $(count spawn crash))"
        fi
    done
    t_wait 10 is_state crash failed || t_fail "not failed after the restarts ran out (state $(state_of crash))"
    events crash
    t_eq "$(jq -s '[.[] | select(.kind == "spawn")] | length' "$T/ev")" 3 "spawns"
    t_eq "$(jq -rs '[.[] | select(.kind == "restart") | .data.delay_ms] | map(tostring) | join(" ")' "$T/ev")" "200 400" "restart delays"
    t_eq "$(jq -rs '[.[] | select(.kind == "exit") | .data.signal] | map(tostring) | join(" ")' "$T/ev")" "6 6 6" "exit signals (SIGABRT)"
    t_has "$T/ev" "restarts exhausted"
    t_eq "$(field crash .last_exit.signal)" 6 "last_exit.signal"
    # nothing more happens: failed is sticky
    sleep $((1 * S))
    t_eq "$(count spawn crash)" 3 "spawns a second later"
    t_end
fi

t_begin "health failures in a row: unhealthy, restarted, then failed when the policy runs out"
t_run 0 gpumod service start wedge
t_wait 30 is_state wedge failed || t_fail "never failed (state $(state_of wedge))"
events wedge
t_match "$T/ev" '"from":"ready","to":"unhealthy","reason":"health_failed: 2 health probes in a row failed \(last: status 500\)"'
t_eq "$(jq -s '[.[] | select(.kind == "spawn")] | length' "$T/ev")" 2 "spawns (1 + max_restarts)"
t_eq "$(jq -s '[.[] | select(.kind == "restart")] | length' "$T/ev")" 1 "restart events"
t_eq "$(jq -r 'select(.kind == "state") | .from + ">" + .to' "$T/ev" | tr '\n' ' ')" \
    "down>starting starting>ready ready>unhealthy unhealthy>down down>starting starting>ready ready>unhealthy unhealthy>down down>failed " "state events"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
