#!/usr/bin/env bash
# A dry run of a mode switch with a what-if (POST /modes/switch with
# add_services, remove_services, context_overrides; `gpumod mode switch M
# --dry-run --add S --remove S --ctx S=N`), planned by the daemon against
# the fake NVML (one 24 GiB GPU): an added service is planned with its
# verdict, a removed one is neither started nor kept, a context override
# changes the need (the GGUF estimate at that context) and can make the
# plan not fit; every bad input is a 400 or 404 that says what and where;
# nothing is started and nothing journaled.
. "$(dirname "$0")/lib.sh"

fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"
settings "supervisor: {stop_timeout: 2s, health_interval: 1s}"
PC=$(free_port) PE=$(free_port) PX=$(free_port) PD=$(free_port)
preset chat "$PC" 'aliases: [chat-model]'
preset emb "$PE"
preset extra "$PX"
# a command preset: no context_size to override
printf 'id: cmdsvc\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\nmemory: {host_mb: 16}\n' \
    "$PD" "$FAKELLM_BIN" "$MODEL" >"$C/presets/cmdsvc.yaml"
mkdir -p "$C/modes"
printf 'id: A\nservices: [chat, emb]\n' >"$C/modes/A.yaml"
daemon_start

SOCK=$GPUMOD_SOCKET
# post BODY: POST /modes/switch; the status in $T/status, the answer in $T/out
post() {
    curl -s -S --max-time $((10 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' --data-binary "$1" "http://gpumod/modes/switch" >"$T/status" 2>"$T/err"
}
status() { cat "$T/status"; }
# bad STATUS CODE MESSAGE BODY: the answer to BODY is STATUS with that code and message
bad() {
    post "$4"
    t_eq "$(status)" "$1" "status of $4"
    t_jq out .error.code "$2"
    t_jq out .error.message "$3"
}
njournal() { curl -s --unix-socket "$SOCK" 'http://gpumod/switches?limit=1000' | jq '.switches | length'; }
nspawn() { count spawn; }

J0=$(njournal)
SP0=$(nspawn)

t_begin "add a service: it is planned with its verdict, and echoed"
post '{"mode": "A", "dry_run": true, "add_services": ["extra", "extra"]}'
t_eq "$(status)" 200 "status"
t_jq out '.starts | sort | join(",")' "chat,emb,extra"
t_jq out '.steps[] | select(.service == "extra") | .verdict.ok' true
t_jq out '.steps[] | select(.service == "extra") | .need.source' estimate
t_jq out '.simulated.add_services | join(",")' extra
t_jq out '.simulated.remove_services | length' 0
t_jq out '.simulated.context_overrides' '{}'
t_jq out '.warnings | length' 0
t_jq out .mode A
t_end

t_begin "remove a service: it is not started"
post '{"mode": "A", "dry_run": true, "remove_services": ["emb"]}'
t_eq "$(status)" 200 "status"
t_jq out '.starts | join(",")' chat
t_jq out '.simulated.remove_services | join(",")' emb
t_end

t_begin "an add already in the mode, a remove not in it: warnings, nothing applied"
post '{"mode": "A", "dry_run": true, "add_services": ["chat"], "remove_services": ["extra"]}'
t_eq "$(status)" 200 "status"
t_jq out '.starts | sort | join(",")' "chat,emb"
t_jq out '.warnings | join("|")' \
    "add_services: 'chat' is already in mode 'A': nothing added|remove_services: 'extra' is not in mode 'A': nothing removed"
t_jq out '.simulated.add_services | length' 0
t_jq out '.simulated.remove_services | length' 0
t_end

t_begin "the mode none with add_services: just those services"
post '{"mode": "none", "dry_run": true, "add_services": ["extra"]}'
t_eq "$(status)" 200 "status"
t_jq out '.starts | join(",")' extra
t_jq out .mode none
t_end

t_begin "a context override changes the need: the estimate at that context"
post '{"mode": "A", "dry_run": true}'
small=$(jq '.steps[] | select(.service == "chat") | .need.gpus[0].bytes + .need.host_bytes' "$T/out")
post '{"mode": "A", "dry_run": true, "context_overrides": {"chat": 32768}}'
t_eq "$(status)" 200 "status"
big=$(jq '.steps[] | select(.service == "chat") | .need.gpus[0].bytes + .need.host_bytes' "$T/out")
t_diag "chat: $small bytes at -c 128, $big at -c 32768"
[ -n "$small" ] && [ -n "$big" ] && [ "$big" -gt "$small" ] ||
    t_fail "chat's need at -c 32768 ($big bytes) should be larger than at -c 128 ($small bytes)"
t_jq out '.simulated.context_overrides.chat' 32768
t_jq out .ok true
t_end

t_begin "a context that does not fit: the plan refuses it, with the binding constraint"
post '{"mode": "A", "dry_run": true, "context_overrides": {"chat": 16777216}}'
t_eq "$(status)" 200 "status"
t_jq out .ok false
t_jq out .refused chat
t_jq out '.steps[] | select(.service == "chat") | .verdict.ok' false
t_jq out '.binding | test("^(gpu|host)")' true
t_end

t_begin "every bad input: 400 or 404 that says what, where and what was expected"
bad 400 bad_request 'modes/switch: add_services, remove_services and context_overrides apply only with "dry_run": true (a simulation); nothing was changed' \
    '{"mode": "A", "add_services": ["extra"]}'
bad 400 bad_request 'modes/switch: add_services, remove_services and context_overrides apply only with "dry_run": true (a simulation); nothing was changed' \
    '{"mode": "A", "dry_run": false, "context_overrides": {"chat": 512}}'
bad 400 bad_request 'modes/switch: "add_services" must be an array of service ids (strings), found "extra"' \
    '{"mode": "A", "dry_run": true, "add_services": "extra"}'
bad 400 bad_request 'modes/switch: remove_services[1] must be a service id (a non-empty string of at most 200 bytes without control characters), found 5' \
    '{"mode": "A", "dry_run": true, "remove_services": ["emb", 5]}'
bad 400 bad_request 'modes/switch: add_services[0] must be a service id (a non-empty string of at most 200 bytes without control characters), found ""' \
    '{"mode": "A", "dry_run": true, "add_services": [""]}'
bad 400 bad_request 'modes/switch: add_services[0] must be a service id (a non-empty string of at most 200 bytes without control characters), found "a\nb"' \
    '{"mode": "A", "dry_run": true, "add_services": ["a\nb"]}'
many=$(jq -cn '[range(65) | "s\(.)"]')
bad 400 bad_request 'modes/switch: "add_services" has 65 entries: at most 64' \
    "{\"mode\": \"A\", \"dry_run\": true, \"add_services\": $many}"
bad 400 bad_request 'modes/switch: "context_overrides" must be an object of service id -> context size, found [1]' \
    '{"mode": "A", "dry_run": true, "context_overrides": [1]}'
for v in 0 16777217 1.5 '"8192"' -4; do
    bad 400 bad_request "modes/switch: context_overrides.chat must be an integer from 1 to 16777216 (a context size in tokens), found $v" \
        "{\"mode\": \"A\", \"dry_run\": true, \"context_overrides\": {\"chat\": $v}}"
done
bad 404 not_found "add_services: no service 'nosuch' in $C (service ids, not aliases)" \
    '{"mode": "A", "dry_run": true, "add_services": ["nosuch"]}'
bad 404 not_found "remove_services: no service 'chat-model' in $C ('chat-model' is an alias of 'chat': give the service id)" \
    '{"mode": "A", "dry_run": true, "remove_services": ["chat-model"]}'
bad 404 not_found "context_overrides: no service 'nosuch' in $C (service ids, not aliases)" \
    '{"mode": "A", "dry_run": true, "context_overrides": {"nosuch": 512}}'
bad 400 bad_request "context_overrides: 'extra' is not in the target set (mode 'A', plus add_services, less remove_services)" \
    '{"mode": "A", "dry_run": true, "context_overrides": {"extra": 512}}'
bad 400 bad_request "context_overrides: 'emb' is not in the target set (mode 'A', plus add_services, less remove_services)" \
    '{"mode": "A", "dry_run": true, "remove_services": ["emb"], "context_overrides": {"emb": 512}}'
bad 400 bad_request "'emb' is in both add_services and remove_services" \
    '{"mode": "none", "dry_run": true, "add_services": ["emb"], "remove_services": ["emb"]}'
post '{"mode": "none", "dry_run": true, "add_services": ["cmdsvc"], "context_overrides": {"cmdsvc": 512}}'
t_eq "$(status)" 400 "a context override for a command service"
t_has out 'context_overrides.cmdsvc: '
t_has out 'the command driver takes no context_size'
post '{"mode": "nosuch", "dry_run": true, "add_services": ["extra"]}'
t_eq "$(status)" 404 "an unknown mode"
t_has out "no mode 'nosuch'"
t_end

t_begin "nothing was started, nothing journaled"
t_eq "$(njournal)" "$J0" "journal entries"
t_eq "$(nspawn)" "$SP0" "spawn events"
for s in chat emb extra cmdsvc; do t_eq "$(state_of $s)" down "$s"; done
t_end

t_begin "from mode A: a removed service is stopped, an overridden one restarted, in the plan only"
t_run 0 gpumod mode switch A
J1=$(njournal)
SP1=$(nspawn)
pid_chat=$(field chat .pid)
post '{"mode": "A", "dry_run": true, "remove_services": ["emb"], "add_services": ["extra"]}'
t_jq out '.stops | join(",")' emb
t_jq out '.keeps | join(",")' chat
t_jq out '.starts | join(",")' extra
post '{"mode": "A", "dry_run": true, "context_overrides": {"chat": 4096}}'
t_jq out '.stops | join(",")' chat
t_jq out '.keeps | join(",")' emb
t_jq out '.starts | join(",")' chat
t_jq out .from A
t_eq "$(njournal)" "$J1" "journal entries"
t_eq "$(nspawn)" "$SP1" "spawn events"
t_eq "$(field chat .pid)" "$pid_chat" "chat's pid"
t_eq "$(state_of extra)" down "extra"
t_end

t_begin "the CLI: mode switch --dry-run --add --remove --ctx"
t_run 0 gpumod mode switch A --dry-run --add extra --remove emb --ctx chat=4096
t_has out "plan: 'A' -> 'A': fits"
t_match out "stop +emb +-"
t_match out "start +extra +ok"
t_has out "simulated: add extra; remove emb; context chat=4096"
t_has out "(dry run: nothing was changed)"
t_run 0 gpumod mode switch A --dry-run --json --add=extra --ctx=chat=4096
t_jq out '.simulated.add_services | join(",")' extra
t_jq out '.simulated.context_overrides.chat' 4096
t_run 0 gpumod mode switch A --dry-run --add chat
t_has out "warning: add_services: 'chat' is already in mode 'A': nothing added"
t_has out "simulated: nothing applied (see the warnings)"
t_run 0 gpumod mode switch A --dry-run --ctx chat=16777216
t_has out "plan: 'A' -> 'A': refused"
t_run 2 gpumod mode switch A --add extra
t_has err "mode switch: --add, --remove and --ctx simulate: they need --dry-run"
t_run 2 gpumod mode switch A --dry-run --remove
t_has err "mode switch: option '--remove' needs a value"
t_run 2 gpumod mode switch A --dry-run --ctx chat
t_has err "--ctx takes SERVICE=TOKENS"
t_run 2 gpumod mode switch A --dry-run --ctx chat=0
t_has err "--ctx"
t_run 2 gpumod mode switch A --dry-run --ctx chat=1 --ctx chat=2
t_has err "--ctx 'chat' is given twice"
t_run 2 gpumod mode switch A --dry-run --add nosuch
t_has err "add_services: no service 'nosuch'"
t_run 2 gpumod mode switch A --dry-run --ctx extra=512
t_has err "context_overrides: 'extra' is not in the target set"
t_eq "$(njournal)" "$J1" "journal entries"
t_eq "$(state_of extra)" down "extra"
t_end

t_begin "a measured footprint stands for chat's need, but not under a context override"
t_run 0 gpumod mode switch none
post '{"mode": "A", "dry_run": true}'
t_jq out '.steps[] | select(.service == "chat") | .need.source' measured
post '{"mode": "A", "dry_run": true, "context_overrides": {"chat": 128}}'
t_jq out '.steps[] | select(.service == "chat") | .need.source' estimate
t_jq out '.steps[] | select(.service == "emb") | .need.source' measured
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end
t_done
