#!/usr/bin/env bash
# The control API reads every JSON body one strict way (src/util/jstrict.c),
# as strictly as the router reads a request: a NUL in a string, data after
# the value and a key named twice are each a 400 that says what and where,
# on every route with a body (modes/switch, preflight, route/default,
# results), and nothing is done.  The case that mattered:
# {"mode":"none\u0000chat"} was read as "none" and stopped everything.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

SOCK=$GPUMOD_SOCKET
# post PATH BODY [METHOD]: the status in $T/status, the answer in $T/out
post() {
    curl -s -S --max-time $((10 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' -X "${3:-POST}" \
        -H 'Content-Type: application/json' --data-binary "$2" "http://gpumod$1" >"$T/status" 2>"$T/err"
}
status() { cat "$T/status"; }
P1=$(free_port); PR=$(free_port)
settings "router: {enabled: true, listen: \"127.0.0.1:$PR\"}"
sed -i '/router: {enabled: false}/d' "$C/gpumod.yaml"
preset chat "$P1" 'memory: {gpu_mb: 0, host_mb: 16}'
mkdir -p "$C/modes"
printf 'id: solo\nservices: [chat]\n' >"$C/modes/solo.yaml"
daemon_start

t_begin "the service runs"
t_run 0 gpumod service start chat
t_eq "$(state_of chat)" ready "chat"
t_end

t_begin "modes/switch: a NUL in the mode, data after the object, a key twice: 400, nothing stopped"
post /modes/switch '{"mode":"none\u0000chat"}'
t_eq "$(status)" 400 "NUL"
t_jq out .error.code bad_request
t_jq out .error.message 'modes/switch: the body must be a JSON object {"mode", "dry_run", "timeout"}: a string holds U+0000 (\u0000) at byte 13'
post /modes/switch '{"mode":"none"} {"mode":"solo"}'
t_eq "$(status)" 400 "trailing data"
t_has out "data after the JSON value at byte 16"
post /modes/switch '{"mode":"solo","mode":"none"}'
t_eq "$(status)" 400 "duplicate key"
t_has out "key 'mode' appears twice in the object at \$"
# the same key spelled with an escape is the same key
post /modes/switch '{"mode":"solo","mod\u0065":"none"}'
t_eq "$(status)" 400 "escaped duplicate"
t_has out "key 'mode' appears twice"
printf '{"mode":"no\001ne"}' >"$T/ctl.json"
post /modes/switch "@$T/ctl.json"
t_eq "$(status)" 400 "raw control byte"
t_has out "a string holds a raw control byte 0x01 at byte 11 (escape it)"
t_eq "$(state_of chat)" ready "chat after the bad switches"
# a well-formed body still works, with trailing whitespace
post /modes/switch $'{"mode":"solo","dry_run":true}\r\n '
t_eq "$(status)" 200 "dry run"
t_end

t_begin "preflight and route/default: the same reading"
post /preflight '{"service":"chat","service":"nope"}'
t_eq "$(status)" 400 "preflight duplicate"
t_jq out .error.message "preflight: the body must be a JSON object: key 'service' appears twice in the object at \$"
post /preflight '{"service":"chat"}x'
t_eq "$(status)" 400 "preflight trailing"
post /preflight '{"service":"chat"}'
t_eq "$(status)" 200 "preflight ok"
post /route/default '{"service":"chat\u0000x"}' PUT
t_eq "$(status)" 400 "route default NUL"
t_has out "a string holds U+0000"
post /route/default '{"service":"chat"}' PUT
t_eq "$(status)" 200 "route default ok"
t_end

t_begin "results: a key twice deep inside is named by its path"
post /results '{"schema":"gpumod.bench/1","points":[{"a":1,"a":2}]}'
t_eq "$(status)" 400 "nested duplicate"
t_has out "key 'a' appears twice in the object at \$.points[0]"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end

t_done
