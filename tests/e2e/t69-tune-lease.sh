#!/usr/bin/env bash
# t69-tune-lease: the daemon's lease for a tune run (docs/api.md "Tune
# lease").  POST /tune records where the host was; a second lease is 409;
# while it is held a mode switch is 409 tune_in_progress naming the lease
# and how to end it, and the router answers the tuned service 503 with
# Retry-After and an OpenAI-shaped error (unless allow_traffic); a start
# with overrides stays allowed.  Heartbeats keep it; a release or an
# expiry restores the host: the service restarted as configured, then the
# mode it was in.  A lease that is gone is 404 saying how it ended; bad
# bodies are 400; GET /tune keeps the last lease and its state, across a
# daemon restart too (ended daemon_restart); `tune` events; POST /results
# takes gpumod.tune/1 documents.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

SOCK=$GPUMOD_SOCKET
# api METHOD PATH [BODY]: the daemon's answer in $T/out, its status in $T/status
api() {
    local args=(-s -S --max-time $((20 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' -X "$1")
    [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
    curl "${args[@]}" "http://gpumod$2" >"$T/status" 2>"$T/err"
}
status() { cat "$T/status"; }
# mode_now: the current mode (null when the running set is no mode)
mode_now() { gpumod mode current --json | jq -r .mode; }
last_restore() { api GET /tune; jq -r '.last.restore.state' "$T/out"; }
restored() { [ "$(last_restore)" = done ]; }
ended_as() { api GET /tune; [ "$(jq -r '.last.ended' "$T/out")" = "$1" ]; }
# through the router: body in $T/r.json, headers in $T/r.head, status printed
rchat() {
    curl -s -o "$T/r.json" -D "$T/r.head" -w '%{http_code}' --max-time $((20 * S)) \
        -H 'Content-Type: application/json' -d "$(chat "$1")" "$RURL/v1/chat/completions"
}
tune_events() { events "$1"; jq -r 'select(.kind == "tune") | .data.what' "$T/ev" | paste -sd, -; }

PC=$(free_port) PO=$(free_port) PS=$(free_port)
rsettings ''
rpreset chat "$PC" 128
rpreset other "$PO" 128
rpreset slow "$PS" 128 'env: {FAKELLM_LOAD_MS: "1500"}'
mkdir -p "$C/modes"
printf 'id: solo\nservices: [chat]\n' >"$C/modes/solo.yaml"
printf 'id: duo\nservices: [chat, other]\n' >"$C/modes/duo.yaml"
printf 'id: slowm\nservices: [slow]\n' >"$C/modes/slowm.yaml"
daemon_start

t_begin "POST /tune: 201 with the lease and where the host was; a second lease is 409 naming the first"
t_run 0 gpumod mode switch solo
api POST /tune '{"service": "chat", "ttl_ms": 60000, "state": {"round": 1, "variants": ["a", "b"]}}'
t_eq "$(status)" 201 "status"
cp "$T/out" "$T/lease.json"
ID=$(jq -r .id "$T/lease.json")
t_match <(echo "$ID") '^tune-[0-9a-f]{12}$'
t_jq "$T/lease.json" '[.service, .allow_traffic, .ttl_ms, .mode_before, (.running_before | join(",")), .service_was] | join(" ")' \
    "chat false 60000 solo chat ready"
t_jq "$T/lease.json" '.overrides_before' null
t_jq "$T/lease.json" '.state.round' 1
t_jq "$T/lease.json" '[.ended, .restore] | map(tostring) | join(",")' "null,null"
t_jq "$T/lease.json" '(.created | test("^20..-..-..T..:..:..\\.[0-9]{3}Z$")) and (.expires | length) == 24' true
api POST /tune '{"service": "other"}'
t_eq "$(status)" 409 "a second lease"
t_jq out .error.code tune_in_progress
t_has out "a tune lease is held: '$ID' for 'chat'"
t_has out 'end it with `gpumod tune --abort` (DELETE /tune/'"$ID"')'
t_jq out .error.detail.id "$ID"
t_end

t_begin "while the lease is held: a mode switch is 409 tune_in_progress (a dry run is not), the router answers chat 503"
api POST /modes/switch '{"mode": "none"}'
t_eq "$(status)" 409 "switch"
t_jq out .error.code tune_in_progress
t_has out "mode switches are refused while 'chat' is being tuned (tune lease '$ID'): end the run with \`gpumod tune --abort\` (DELETE /tune/$ID), or the lease expires in "
t_jq out .error.detail.service chat
t_run 1 gpumod mode switch duo
t_has err "mode switches are refused while 'chat' is being tuned"
t_eq "$(mode_now)" solo "mode"
api POST /modes/switch '{"mode": "duo", "dry_run": true}'
t_eq "$(status)" 200 "a dry run"
t_eq "$(rchat chat)" 503 "router status"
t_match "$T/r.head" '^[Rr]etry-[Aa]fter: 10'
t_jq "$T/r.json" '.error.code' tune_in_progress
t_jq "$T/r.json" '.error.type' server_error
t_jq "$T/r.json" '.error.message' "'chat' is being tuned (gpumod tune, lease $ID): its requests are refused until the run ends; retry later"
t_end

t_begin "a heartbeat renews the lease and replaces its state; a start with overrides stays allowed"
api PUT "/tune/$ID" '{"state": {"round": 2}}'
t_eq "$(status)" 200 "PUT"
t_jq out '.id' "$ID"
t_jq out '.state_bytes > 0 and (has("state") | not)' true
api PUT "/tune/$ID" ''
t_eq "$(status)" 200 "PUT without a body"
api GET /tune
t_jq out '.lease.state.round' 2
t_jq out '.last' null
api POST /services/chat/restart '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 200 "restart with overrides"
t_jq out .overrides.context_size 256
t_run 0 gpumod service start other
t_eq "$(mode_now)" duo "mode (both run)"
t_end

t_begin "DELETE: 200 with the restore's plan; chat restarted as configured, then the switch back to solo"
n=$(count spawn chat)
api DELETE "/tune/$ID"
t_eq "$(status)" 200 "DELETE"
t_jq out '.id' "$ID"
t_jq out '[.restoring[] | .action + " " + (.service // .mode)] | join(",")' "restart chat,switch solo"
t_wait 30 restored || t_fail "not restored: $(cat "$T/out")"
t_jq out '.last.ended' released
t_jq out '.last.state.round' 2
t_jq out '[.last.restore.steps[] | .ok] | all' true
t_jq out '.lease' null
t_eq "$(field chat .overrides)" null "chat's overrides"
t_eq "$(state_of chat)/$(state_of other)" ready/down "states"
t_eq "$(mode_now)" solo "mode"
t_eq "$(count spawn chat)" $((n + 1)) "chat spawned once more"
t_eq "$(tune_events chat)" "taken,released,restored" "events"
t_eq "$(rchat chat)" 200 "the router serves chat again"
t_end

t_begin "a lease that is gone is 404 saying how it ended"
api DELETE "/tune/$ID"
t_eq "$(status)" 404 "DELETE again"
t_jq out .error.message "tune lease '$ID' has ended (it was released; the host was restored); GET /tune shows it as last"
api PUT "/tune/$ID" '{}'
t_eq "$(status)" 404 "PUT"
api PUT /tune/tune-000000000000 '{}'
t_jq out .error.message "no tune lease 'tune-000000000000' (none is held)"
t_end

t_begin "allow_traffic: the router passes chat's requests; a release with nothing to restore does nothing"
api POST /tune '{"service": "chat", "allow_traffic": true}'
t_eq "$(status)" 201 "POST"
ID2=$(jq -r .id "$T/out")
t_jq out .ttl_ms 30000
t_eq "$(rchat chat)" 200 "router status"
n=$(count spawn chat)
api DELETE "/tune/$ID2"
t_jq out '.restoring' '[]'
t_wait 10 restored || t_fail "not done: $(cat "$T/out")"
t_eq "$(count spawn chat)" "$n" "no spawn"
t_end

t_begin "heartbeats keep a short lease; without them it expires and the host is restored"
api POST /tune "{\"service\": \"chat\", \"ttl_ms\": $((3000 * S)), \"state\": {\"round\": 7}}"
t_eq "$(status)" 201 "POST"
ID3=$(jq -r .id "$T/out")
# heartbeats every 300 ms until the file goes
touch "$T/beat"
(while [ -e "$T/beat" ]; do
    curl -s -o /dev/null --max-time 5 --unix-socket "$SOCK" -X PUT "http://gpumod/tune/$ID3"
    sleep 0.3
done) &
BEAT=$!
api POST /services/chat/restart '{"overrides": {"context_size": 384}}'
t_eq "$(status)" 200 "restart with overrides"
t_run 0 gpumod service start other
sleep $((4 * S)) # longer than the ttl: only the heartbeats keep it
api GET /tune
t_jq out .lease.id "$ID3"
rm -f "$T/beat"
wait "$BEAT"
t_wait 30 ended_as expired || t_fail "never expired: $(cat "$T/out")"
t_wait 30 restored || t_fail "not restored: $(cat "$T/out")"
t_jq out '.last.id' "$ID3"
t_jq out '.last.state.round' 7
t_eq "$(field chat .overrides)" null "chat's overrides"
t_eq "$(state_of other)" down "other"
t_eq "$(mode_now)" solo "mode"
api PUT "/tune/$ID3" '{}'
t_eq "$(status)" 404 "PUT after the expiry"
t_jq out .error.message "tune lease '$ID3' has ended (it expired: no heartbeat within $((3000 * S)) ms; the host was restored); GET /tune shows it as last"
t_eq "$(tune_events chat | sed 's/.*taken,/taken,/')" "taken,expired,restored" "events"
t_end

t_begin "a lease on a service that was down: the restore stops it"
t_run 0 gpumod service stop other
api POST /tune '{"service": "other"}'
ID4=$(jq -r .id "$T/out")
t_jq out '.service_was + " " + .mode_before' "down solo"
t_run 0 gpumod service start other
api DELETE "/tune/$ID4"
t_jq out '[.restoring[] | .action + " " + (.service // .mode)] | join(",")' "stop other"
t_wait 30 restored || t_fail "not restored: $(cat "$T/out")"
t_eq "$(state_of other)/$(mode_now)" down/solo "other, mode"
t_end

t_begin "a lease while a switch runs is 409 switch_in_progress; while a restore runs, a lease and a switch are 409"
api POST /modes/switch '{"mode": "slowm", "wait": false}'
t_eq "$(status)" 202 "switch"
api POST /tune '{"service": "slow"}'
t_eq "$(status)" 409 "a lease during the switch"
t_jq out .error.code switch_in_progress
t_jq out .error.message "tune: a switch to mode 'slowm' is in progress; try again when it ends"
t_wait 30 is_state slow ready || t_fail "slow never ready"
api POST /tune '{"service": "slow", "ttl_ms": 60000}'
ID6=$(jq -r .id "$T/out")
api POST /services/slow/restart '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 200 "restart with overrides"
api DELETE "/tune/$ID6"
t_jq out '[.restoring[] | .action] | join(",")' restart
# slow takes 1.5 s to load: its restart is still running
api POST /tune '{"service": "chat"}'
t_eq "$(status)" 409 "a lease during the restore"
t_jq out .error.message "tune: the host is being restored after tune lease '$ID6' ('slow'); try again when GET /tune shows last.restore.state done"
api POST /modes/switch '{"mode": "solo"}'
t_eq "$(status)" 409 "a switch during the restore"
t_jq out .error.message "mode switches are refused while the host is restored after tune lease '$ID6' ('slow'); try again when GET /tune shows last.restore.state done"
api PUT "/tune/$ID6" '{}'
t_jq out .error.message "tune lease '$ID6' has ended (it was released; the host is being restored); GET /tune shows it as last"
t_wait 30 restored || t_fail "not restored: $(cat "$T/out")"
t_eq "$(field slow .overrides)/$(mode_now)" null/slowm "slow's overrides, mode"
t_run 0 gpumod mode switch solo
t_end

t_begin "a restore that fails: restore_failed, the step's message, and a 404 that says so"
t_run 0 gpumod service stop chat
t_run 0 gpumod service start other
api POST /tune '{"service": "other"}'
ID7=$(jq -r .id "$T/out")
t_jq out '.mode_before' null
api POST /services/other/restart '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 200 "restart with overrides"
rpreset other "$PO" 128 'env: {FAKELLM_EXIT_DURING_LOAD: "1"}'
t_run 0 gpumod reload
api DELETE "/tune/$ID7"
t_jq out '[.restoring[] | .action] | join(",")' restart
t_wait 30 eval '[ "$(last_restore)" = failed ]' || t_fail "the restore did not fail: $(cat "$T/out")"
t_jq out '.last.restore.steps[0].ok' false
t_jq out '.last.restore.steps[0].message | startswith("'"'other' exited with code 1 during load; log tail:"'")' true
api PUT "/tune/$ID7" '{}'
t_jq out .error.message "tune lease '$ID7' has ended (it was released; restoring the host failed: restart other: 'other' exited with code 1 during load); GET /tune shows it as last"
t_eq "$(tune_events other | awk -F, '{print $NF}')" restore_failed "the last tune event"
rpreset other "$PO" 128
t_run 0 gpumod reload
t_run 0 gpumod service stop other
t_run 0 gpumod mode switch solo
t_end

t_begin "bad bodies are 400 naming what is wrong; an unknown service is 404"
bad() { # BODY MESSAGE
    api POST /tune "$1"
    t_eq "$(status)" 400 "POST $1"
    t_jq out .error.code bad_request
    t_jq out .error.message "$2"
}
bad '[1]' 'tune: the body must be a JSON object {"service": ID, "allow_traffic", "ttl_ms", "state"}: found another JSON value'
bad '{}' 'tune: "service" is missing: the service to tune (a service id)'
bad '{"service": "chat", "tll_ms": 1000}' "tune: unknown key 'tll_ms' in the body (allowed: service, allow_traffic, ttl_ms, state)"
for ttl in 999 1000.5 '"5000"' 86400001 -1; do
    bad "{\"service\": \"chat\", \"ttl_ms\": $ttl}" 'tune: "ttl_ms" must be an integer from 1000 to 86400000 (milliseconds), or null for 30000'
done
bad '{"service": "chat", "allow_traffic": 1}' 'tune: "allow_traffic" must be true or false'
bad '{"service": "", "state": {}}' 'tune: "service" must be a service id (a non-empty string)'
bad '{"service": "chat", "state": [1]}' 'tune: "state" must be an object (the run'"'"'s state, kept for --resume) or null'
api POST /tune '{"service": "chat", "service": "chat"}'
t_eq "$(status)" 400 "a key twice"
t_has out "key 'service' appears twice"
api POST /tune '{"service": "nope"}'
t_eq "$(status)" 404 "unknown service"
t_jq out .error.message "tune: no service 'nope' is configured"
api POST /tune '{"service": "chat"}'
ID5=$(jq -r .id "$T/out")
api PUT "/tune/$ID5" '{"stat": {}}'
t_eq "$(status)" 400 "PUT unknown key"
t_jq out .error.message "tune/ID: unknown key 'stat' in the body (allowed: state)"
api PUT "/tune/$ID5" '{"state": 3}'
t_eq "$(status)" 400 "PUT state not an object"
api PATCH "/tune/$ID5" '{}'
t_eq "$(status)" 405 "PATCH"
t_jq out .error.message "PATCH /tune/$ID5: method not allowed (allowed: PUT, DELETE)"
api GET /tune
t_jq out '.lease.id' "$ID5"
t_end

t_begin "a daemon restart ends the lease held (daemon_restart) and keeps its state for --resume"
api PUT "/tune/$ID5" '{"state": {"round": 9, "note": "resume me"}}'
daemon_stop
daemon_start
api GET /tune
t_eq "$(status)" 200 "GET"
t_jq out '.lease' null
t_jq out '[.last.id, .last.ended, .last.state.note] | join(" ")' "$ID5 daemon_restart resume me"
t_jq out '.last.restore' null
api PUT "/tune/$ID5" '{}'
t_jq out .error.message "tune lease '$ID5' has ended (the daemon restarted while it was held; nothing was restored); GET /tune shows it as last"
t_eq "$(tune_events chat | awk -F, '{print $NF}')" daemon_restart "the last tune event"
t_end

t_begin "POST /results takes a gpumod.tune/1 document; GET /results?kind=tune lists its summary"
doc='{"schema": "gpumod.tune/1", "kind": "tune", "summary": {"service": "chat", "objective": "throughput",
      "winner": {"threads": 8}, "outcomes": {"IMPROVEMENT": 1, "NO CHANGE": 3}, "rounds": 4, "other": 1},
      "variants": []}'
api POST /results "$doc"
t_eq "$(status)" 201 "POST"
api GET '/results?kind=tune'
t_jq out '.results[0] | [.kind, .target, .service] | join(" ")' "tune chat chat"
t_jq out '.results[0].summary | [.objective, .winner.threads, .outcomes["NO CHANGE"], .rounds] | join(" ")' "throughput 8 3 4"
t_jq out '.results[0].summary | has("other")' false
api POST /results '{"schema": "gpumod.tune/1", "kind": "eval", "summary": {}}'
t_eq "$(status)" 400 "kind eval"
t_jq out .error.message "results: \$.kind is 'eval', expected \"tune\" (a gpumod.tune/1 result)"
api POST /results '{"schema": "gpumod.tune/1", "kind": "tune"}'
t_jq out .error.message 'results: $.summary is missing, expected an object (a tune result)'
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
