#!/usr/bin/env bash
# Admission through the daemon: two starts asked at once load one after the
# other (the load slot); a port held by another process refuses the start
# before anything is spawned and names the holder; a gate refusal spawns
# nothing and shows the reason.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port)
preset one "$P1" 'env: {FAKELLM_LOAD_MS: "700"}'
preset two "$P2" 'env: {FAKELLM_LOAD_MS: "700"}'
preset taken "$P3"
printf 'id: huge\ndriver: command\nport: %s\ncommand: [fakellm, -m, %s, --port, "{port}"]\nmemory: {host_mb: 16000000}\n' \
    "$P4" "$MODEL" >"$C/presets/huge.yaml"
daemon_start

t_begin "two starts at once: the second load begins only after the first is ready"
gpumod service start one >"$T/one.out" 2>&1 & a=$!
gpumod service start two >"$T/two.out" 2>&1 & b=$!
wait $a; ra=$?; wait $b; rb=$?
t_eq "$ra $rb" "0 0" "exit codes"
events
# the order of the spawns and readies, by event id, and their timestamps
seq=$(jq -r 'select(.kind == "spawn" or (.kind == "state" and .to == "ready")) | .service + ":" + .kind' "$T/ev" | tr '\n' ' ')
first=$(jq -rs '[.[] | select(.kind == "spawn")][0].service' "$T/ev")
second=$( [ "$first" = one ] && echo two || echo one )
t_eq "$seq" "$first:spawn $first:state $second:spawn $second:state " "spawn/ready order"
ready1=$(jq -rs --arg s "$first" '[.[] | select(.kind == "state" and .to == "ready" and .service == $s)][0].ts' "$T/ev")
spawn2=$(jq -rs --arg s "$second" '[.[] | select(.kind == "spawn" and .service == $s)][0].ts' "$T/ev")
t_diag "$first ready at $ready1, $second spawned at $spawn2"
[[ "$spawn2" > "$ready1" || "$spawn2" == "$ready1" ]] || t_fail "$second spawned ($spawn2) before $first was ready ($ready1)"
t_run 0 gpumod service stop one
t_run 0 gpumod service stop two
t_end

t_begin "port held by another process: refused before spawn, naming pid and command line"
fakellm_spawn squatter -- -m "$MODEL" --port "$P3"
sq=$_t_last_pid
wait_healthy "$P3" || t_fail "the squatter never listened"
t_run 1 gpumod service start taken
t_match err "port $P3 is held by pid [0-9]+ \(.*fakellm -m .* --port $P3"
t_eq "$(state_of taken)" down "state"
t_eq "$(count spawn taken)" 0 "spawns"
t_eq "$(field taken .last_start.code)" port_held "last_start.code"
kill -TERM "$sq"; reap "$sq" 5
t_end

t_begin "gate refusal: nothing spawned, the reason shown, a gate event with the verdict"
t_run 1 gpumod service start huge
t_match err "MemAvailable [0-9]+ MiB < required [0-9]+ MiB"
t_eq "$(state_of huge)" down "state"
t_eq "$(count spawn huge)" 0 "spawns"
t_eq "$(field huge .last_start.code)" gate_refused "last_start.code"
events huge
t_eq "$(jq -rs '[.[] | select(.kind == "gate")][0].data | .ok, .via, .binding' "$T/ev" | tr '\n' ' ')" "false daemon host.mem_available " "verdict"
t_eq "$(jq -r 'select(.kind == "state") | .from + ">" + .to' "$T/ev" | tr '\n' ' ')" "down>starting starting>down " "state events"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
