#!/usr/bin/env bash
# t71-router-budget: the router reads a JSON body whole before routing it
# and holds it until its service is ready, bounded by max_body_mb per
# request and by 256 MiB across every request (docs/router.md "Routing").
# A 257 MiB body (max_body_mb 300) passes the budget while it is read, and
# gets 503 body_budget saying so; a 200 MiB body, twice, goes to the
# backend (the held bytes are released once the upstream has them: never
# counted twice, never left counted), and one for an unknown model gets
# its 404 after being read whole.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

command -v python3 >/dev/null || t_fail "python3 is needed (scripts/install-deps TEST_PKGS)"

PB=$(free_port)
rsettings "max_body_mb: 300"
printf 'id: sink\nmodel_id: sink\ndriver: remote\nremote: {base_url: "http://127.0.0.1:%s/v1"}\n' "$PB" \
    >"$C/presets/sink.yaml"
# body MODEL MIB FILE: a chat body of about MIB MiB
body() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys
model, mib, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(out, "wb") as f:
    f.write(b'{"model":"%s","messages":[{"role":"user","content":"' % model.encode())
    chunk = b"a" * (1 << 20)
    for _ in range(mib):
        f.write(chunk)
    f.write(b'"}]}')
PY
}
post() { rcurl "$T/o" --max-time $((120 * S)) "$RURL/v1/chat/completions" -H 'Content-Type: application/json' --data-binary "@$1"; }

t_spawn backend python3 "$T/backend.py" "$PB"
t_wait 10 curl -sf -o /dev/null "http://127.0.0.1:$PB/health" || t_fail "the backend never answered"
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod service start sink

t_begin "a body over the 256 MiB budget while it is read: 503 body_budget saying why"
body sink 257 "$T/huge"
t_eq "$(post "$T/huge")" 503 "the 257 MiB body"
t_jq "$T/o" .error.code body_budget
t_has "$T/o" "the router holds 256 MiB of request bodies, its limit across all requests, being read before they are routed (a JSON body is read whole to find its model and keep_alive); retry"
rm -f "$T/huge"
t_end

t_begin "200 MiB bodies, one after the other, reach the backend: the budget is released each time"
body sink 200 "$T/big"
t_eq "$(post "$T/big")" 200 "the first 200 MiB body"
t_eq "$(post "$T/big")" 200 "the second"
sed -i 's/"model":"sink"/"model":"nope"/' "$T/big"
t_eq "$(post "$T/big")" 404 "one for an unknown model"
t_jq "$T/o" .error.code model_not_found
rm -f "$T/big"
t_end

daemon_stop
t_done
