#!/usr/bin/env bash
# Bench results kept by the daemon (docs/api.md "Results"): POST /results
# stores a result document without its raw requests and answers 201 with
# its id; GET /results lists them newest first (filter by service, n);
# GET /results/ID is the document; bad bodies are 400 saying what, where
# and what was expected; a body over 16 MiB is 413 naming the limit (other
# routes keep 1 MiB); results survive a daemon restart; gpumod-bench's
# bstore_post stores through the same route (gpumod bench switch, and
# gpumod bench URL once it runs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s}"
daemon_start

# api METHOD PATH [curl args...]: body in $T/out, status in $T/status
api() {
    local m=$1 p=$2; shift 2
    curl -s -S -o "$T/out" -w '%{http_code}' -X "$m" --max-time $((20 * S)) --unix-socket "$GPUMOD_SOCKET" \
        "$@" "http://gpumod$p" >"$T/status" 2>"$T/err"
}
post() { api POST /results -H 'Content-Type: application/json' --data-binary "$1"; }
status() { cat "$T/status"; }

# a load result with raw requests, as gpumod bench --json --raw writes it
cat >"$T/load.json" <<'EOF'
{"schema": "gpumod.bench/1", "kind": "load", "started": "2026-01-02T03:04:05.000Z",
 "target": {"spec": "chat", "via": "router", "service": "chat", "config_hash": "c0ffee", "model": "chat"},
 "settings": {"shape": "closed", "concurrency": [1, 8]},
 "points": [
  {"x_name": "concurrency", "x": 1,
   "iterations": [{"sent": 2, "completed": 2, "requests": [{"t_send": 1, "events": [1, 2, 3]}, {"t_send": 2}]}],
   "summary": {"out_tput": {"median": 50.5, "lo": 49, "hi": 52, "n": 3}}},
  {"x_name": "concurrency", "x": 8,
   "iterations": [{"sent": 16, "completed": 16, "requests": [{"t_send": 5}]}],
   "summary": {"out_tput": {"median": 310, "lo": 300, "hi": 320, "n": 3}}}],
 "warnings": []}
EOF

t_begin "POST /results stores a load result (raw requests dropped) and answers 201 with its id"
post "@$T/load.json"
t_eq "$(status)" 201 "status"
t_jq out .id 1
api GET /results/1
t_eq "$(status)" 200 "GET /results/1"
t_jq out .kind load
t_jq out .target.config_hash c0ffee
t_jq out '.points | length' 2
t_jq out '.points[0].iterations[0].completed' 2
t_jq out '[.points[].iterations[] | has("requests")] | any' false
t_jq out '.points[1].summary.out_tput.median' 310
t_end

t_begin "a URL target and a switch result; GET /results lists newest first with their summaries"
post '{"schema":"gpumod.bench/1","kind":"ctx_sweep","target":{"spec":"http://127.0.0.1:9/","service":null},"points":[{"x_name":"depth","x":512,"iterations":[],"summary":{"prefill_tps":{"median":900}}}]}'
t_eq "$(status)" 201 "ctx_sweep"
post '{"schema":"gpumod.bench/1","kind":"switch","modes":["a","b"],"n":1,"failed":0,"phases":{"stop_ms":{"median":40,"lo":39,"hi":41,"n":1,"values":[40]}},"switches":[]}'
t_eq "$(status)" 201 "switch"
t_jq out .id 3
api GET /results
t_eq "$(status)" 200 "GET /results"
t_jq out '[.results[].id] | join(",")' "3,2,1"
t_jq out '.results[0].kind' switch
t_jq out '.results[0].target' "a,b"
t_jq out '.results[0].service' null
t_jq out '.results[0].summary.phases.stop_ms.median' 40
t_jq out '.results[0].summary.phases.stop_ms | has("values")' false
t_jq out '.results[1].target' "http://127.0.0.1:9/"
t_jq out '.results[1].summary[0].summary.prefill_tps.median' 900
t_jq out '.results[2].service' chat
t_jq out '.results[2].config_hash' c0ffee
t_jq out '.results[2].summary | map(.x) | join(",")' "1,8"
t_jq out '.results[2].ts | test("^20[0-9-]+T[0-9:.]+Z$")' true
t_jq out '.results[2] | has("doc")' false
t_end

t_begin "GET /results?service=&n= filters; an unknown id is 404; a bad id or n is 400"
api GET '/results?service=chat'
t_jq out '[.results[].id] | join(",")' 1
api GET '/results?n=1'
t_jq out '[.results[].id] | join(",")' 3
api GET /results/99
t_eq "$(status)" 404 "unknown id"
t_jq out .error.code not_found
t_has out "no result 99"
api GET /results/abc
t_eq "$(status)" 400 "id abc"
t_has out "'abc' is not a result id"
api GET '/results?n=0'
t_eq "$(status)" 400 "n=0"
t_has out "n must be an integer from 1 to 1000"
api DELETE /results
t_eq "$(status)" 405 "DELETE"
t_has out "allowed: POST, GET"
t_end

t_begin "bad bodies are 400 with what, where and what was expected"
post '{"schema": '
t_eq "$(status)" 400 "bad JSON"
t_jq out .error.code bad_request
t_has out "results: the body must be a JSON object: not JSON (at byte 10)"
post '[1]'
t_eq "$(status)" 400 "an array"
post '{"schema":"gpumod.bench/2","kind":"load","points":[]}'
t_eq "$(status)" 400 "schema"
t_jq out .error.message 'results: $.schema is '"'"'gpumod.bench/2'"'"', expected "gpumod.bench/1", "gpumod.eval/1" or "gpumod.tune/1"'
t_jq out .error.detail.where '$.schema'
t_jq out .error.detail.expected '"gpumod.bench/1", "gpumod.eval/1" or "gpumod.tune/1"'
post '{"kind":"load","points":[]}'
t_jq out .error.message 'results: $.schema is missing, expected "gpumod.bench/1", "gpumod.eval/1" or "gpumod.tune/1"'
post '{"schema":"gpumod.bench/1","kind":"speed","points":[]}'
t_eq "$(status)" 400 "kind"
t_jq out .error.detail.where '$.kind'
t_has out "is 'speed', expected one of"
post '{"schema":"gpumod.bench/1","kind":"load"}'
t_jq out .error.message 'results: $.points is missing, expected an array (a load or ctx_sweep result)'
post '{"schema":"gpumod.bench/1","kind":"load","points":[],"target":"chat"}'
t_jq out .error.detail.where '$.target'
post '{"schema":"gpumod.bench/1","kind":"switch","modes":["a"]}'
t_jq out .error.detail.where '$.modes'
post '{"schema":"gpumod.bench/1","kind":"eval","points":[]}'
t_jq out .error.detail.where '$.kind'
post '{"schema":"gpumod.eval/1","kind":"load","items":[],"summary":{}}'
t_jq out .error.message 'results: $.kind is '"'"'load'"'"', expected "eval" (a gpumod.eval/1 result)'
post '{"schema":"gpumod.eval/1","kind":"eval","summary":{}}'
t_jq out .error.message 'results: $.items is missing, expected an array (an eval result)'
post '{"schema":"gpumod.eval/1","kind":"eval","items":[]}'
t_jq out .error.detail.where '$.summary'
api GET /results
t_jq out '.results | length' 3
t_end

t_begin "a 2 MiB result is taken, chunked too (the control API's 1 MiB is for the other routes); over 16 MiB is 413"
# 2 MiB of raw requests: stored without them
python3 - "$T/big.json" <<'EOF'
import json, sys
reqs = [{"t_send": i, "pad": "x" * 1000} for i in range(2100)]
doc = {"schema": "gpumod.bench/1", "kind": "load", "target": {"spec": "chat", "service": "chat"},
       "points": [{"x_name": "concurrency", "x": 1, "iterations": [{"sent": 2100, "requests": reqs}], "summary": {}}]}
open(sys.argv[1], "w").write(json.dumps(doc))
EOF
t_eq "$(($(stat -c %s "$T/big.json") > 2 * 1024 * 1024))" 1 "the document is over 2 MiB"
post "@$T/big.json"
t_eq "$(status)" 201 "2 MiB"
api GET /results?n=1
t_jq out '.results[0].bytes < 1000' true
# the same 2 MiB chunked: gathered per route and stored
api POST /results -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary "@$T/big.json"
t_eq "$(status)" 201 "2 MiB chunked"
# 18 MiB declared: the documented message, whatever the size
head -c $((18 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$T/huge.json"
post "@$T/huge.json"
t_eq "$(status)" 413 "18 MiB"
t_jq out .error.code too_large
t_has out "POST /results: the body is 18874368 bytes, over the limit of 16777216 bytes"
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$T/pf.json"
api POST /preflight -H 'Content-Type: application/json' --data-binary "@$T/pf.json"
t_eq "$(status)" 413 "a 2 MiB preflight"
t_has out "over the limit of 1048576 bytes"
# chunked (no Content-Length): judged once buffered
api POST /preflight -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary "@$T/pf.json"
t_eq "$(status)" 413 "a chunked 2 MiB preflight"
t_has out "over the limit of 1048576 bytes"
# a chunked body to any other route is refused once past 1 MiB, not
# buffered up to the results limit: 18 MiB chunked to /reload is the
# documented 413 (not the parser's generic one), within a few seconds
api POST /reload -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary "@$T/pf.json" \
    --max-time $((5 * S))
t_eq "$(status)" 413 "a chunked 2 MiB reload"
t_has out "POST /reload: the body is at least"
t_has out "over the limit of 1048576 bytes"
api POST /reload -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary "@$T/huge.json" \
    --max-time $((5 * S))
t_eq "$(status)" 413 "a chunked 18 MiB reload"
t_has out "over the limit of 1048576 bytes"
# the daemon still answers
api GET /results
t_eq "$(status)" 200 "after the 413s"
t_end

t_begin "results survive a daemon restart"
daemon_stop
daemon_start
api GET /results/1
t_eq "$(status)" 200 "after the restart"
t_jq out .target.service chat
post '{"schema":"gpumod.bench/1","kind":"load","points":[]}'
t_jq out .id 6 # five stored above (the 2 MiB one twice)
t_end

t_begin "gpumod bench switch stores its result through bstore_post"
if [ -x "$BUILD/gpumod-bench" ] && "$BUILD/gpumod-bench" switch --help >/dev/null 2>&1; then
    P1=$(free_port) P2=$(free_port)
    preset s1 "$P1" 'env: {FAKELLM_LOAD_MS: "50"}'
    preset s2 "$P2" 'env: {FAKELLM_LOAD_MS: "50"}'
    mkdir -p "$C/modes"
    printf 'id: m1\nservices: [s1]\n' >"$C/modes/m1.yaml"
    printf 'id: m2\nservices: [s2]\n' >"$C/modes/m2.yaml"
    t_run 0 gpumod reload
    t_run 0 "$BUILD/gpumod-bench" switch m1 m2 -n 1
    t_has err "stored as result 7"
    api GET /results/7
    t_jq out .kind switch
    t_jq out '.modes | join(",")' m1,m2
    t_jq out '.phases.total_ms.n' 2
else
    t_diag "gpumod-bench switch not built yet"
    t_fail "$BUILD/gpumod-bench switch --help does not run"
fi
t_end

t_begin "gpumod bench URL stores its load result (without --raw requests) through bstore_post"
PF=$(free_port)
fakellm_spawn fk -- -m "$MODEL" --port "$PF" -np 4 -c 2048
wait_healthy "$PF" || t_fail "fakellm never came up on $PF"
t_run 0 timeout $((120 * S)) gpumod bench "http://127.0.0.1:$PF" --requests 4 --iterations 1 --gen-tokens 4 \
    --prompt-tokens 8 --raw --json "$T/lr.json" -q
t_jq "$T/lr.json" '.points[0].iterations[0].requests | length' 4
api GET '/results?n=1'
t_jq out '.results[0].kind' load
t_jq out '.results[0].target' "http://127.0.0.1:$PF"
t_jq out '.results[0].service' null
ID=$(jq -r '.results[0].id' "$T/out")
api GET "/results/$ID"
t_jq out '.points[0].iterations[0] | has("requests")' false
t_jq out '.points[0].iterations[0].completed' 4
t_end

t_begin "gpumod bench --no-store stores nothing"
api GET '/results?n=1'
before=$(jq -r '.results[0].id' "$T/out")
t_run 0 timeout $((120 * S)) gpumod bench "http://127.0.0.1:$PF" --requests 2 --iterations 1 --gen-tokens 2 \
    --prompt-tokens 8 --no-store -q
api GET '/results?n=1'
t_jq out '.results[0].id' "$before"
t_end

stop_all_clean
t_done
