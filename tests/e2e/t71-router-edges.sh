#!/usr/bin/env bash
# t71-router-edges: three router edges against a scripted python engine
# run as a llama.cpp router-mode service (no -m, --models-dir), with API
# keys configured.  The client's Authorization and x-api-key fields are
# the router's (it consumed them): they never reach a local engine, while
# any other field does.  A router-mode service whose GET /models answer is
# over the bound (ROUTER_LIST_MAX, 1 MiB) keeps the model list it had, and
# GET /v1/models stays valid JSON.  GET /route (control API) is valid JSON
# (router_api_table skips a name whose service index is past the service
# list; no configuration reaches that: the table is rebuilt with the
# service list in the same apply_config, and is empty after a failed build).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

command -v python3 >/dev/null || t_fail "python3 is needed (scripts/install-deps TEST_PKGS)"

# the engine: GET /health 200; GET /models lists rm-a and rm-b, or (when
# $T/models.mode says "huge") 30000 names, about 1.5 MiB; POST answers the
# request's header fields as JSON {"headers": {lowercased name: value}}
cat >"$T/engine.py" <<'PY'
import http.server, json, signal, socketserver, sys

signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
MODE = sys.argv[2]

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self, b):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/models":
            mode = open(MODE).read().strip()
            if mode == "huge":
                names = ["huge-%05d-%s" % (i, "x" * 24) for i in range(30000)]
            else:
                names = ["rm-a", "rm-b"]
            self.answer(json.dumps({"object": "list", "data": [{"id": n, "object": "model"} for n in names]}).encode())
        else:
            self.answer(b'{"status":"ok"}')
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.answer(json.dumps({"headers": {k.lower(): v for k, v in self.headers.items()}}).encode())

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
echo small >"$T/models.mode"

# a stand-in llama-server: fakellm's help for --help, else the engine on --port
mkdir -p "$T/bin" "$T/models"
cat >"$T/bin/llamapy" <<SH
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = --help ] && exec "$FAKELLM_BIN" "\$@"; done
port=
while [ \$# -gt 0 ]; do [ "\$1" = --port ] && port=\$2; shift; done
exec python3 "$T/engine.py" "\$port" "$T/models.mode"
SH
chmod +x "$T/bin/llamapy"

EP=$(free_port)
export RKEYS="k1, k2"
K=(-H "Authorization: Bearer k1")
{
    printf 'drivers:\n  llamacpp: {binary: %s}\n' "$T/bin/llamapy"
    printf 'supervisor: {stop_timeout: 2s, health_interval: 1s}\n'
    printf 'router: {listen: "127.0.0.1:%s", api_keys_env: RKEYS}\n' "$RP"
} >"$C/gpumod.yaml"
printf 'id: eng\ndriver: llamacpp\nport: %s\ncontext_size: 4096\nunit_vars: {models_dir: %s, models_max: 1, default_model: rm-a}\nmemory: {host_mb: 100}\n' \
    "$EP" "$T/models" >"$C/presets/eng.yaml"

daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
t_run 0 gpumod service start eng
t_wait 20 is_state eng ready || t_fail "eng never became ready: $(state_of eng)"
listed() { t_wait 10 grep -q "router-mode service 'eng' lists $1 model(s)" "$T/daemon.log"; }
listed 2 || t_fail "the router never listed eng's models"

t_begin "API keys configured: Authorization and x-api-key never reach a local engine, other fields do"
t_eq "$(rcurl "$T/o" -H "Authorization: Bearer k1" -H "x-api-key: k2" -H "X-Trace: 1" \
    "$RURL/v1/chat/completions" -d '{"model":"eng"}')" 200 "status"
t_jq "$T/o" '.headers["x-trace"]' 1
t_jq "$T/o" '.headers | has("authorization")' false
t_jq "$T/o" '.headers | has("x-api-key")' false
t_lacks "$T/o" k1
t_lacks "$T/o" k2
t_eq "$(rcurl "$T/o" -H "x-api-key: k2" "$RURL/v1/chat/completions" -d '{"model":"rm-a"}')" 200 "by x-api-key, a listed name"
t_jq "$T/o" '.headers | has("x-api-key")' false
t_eq "$(rcurl "$T/o" -H "X-Trace: 1" "$RURL/v1/chat/completions" -d '{"model":"eng"}')" 401 "no key"
t_end

t_begin "router mode: a GET /models answer over 1 MiB keeps the list it had; /v1/models stays valid JSON"
t_eq "$(rcurl "$T/m1" "${K[@]}" "$RURL/v1/models")" 200 "before"
t_jq "$T/m1" '[.data[] | select(.kind == "listed") | .id] | sort | join(",")' "rm-a,rm-b"
echo huge >"$T/models.mode"
t_run 0 gpumod reload # a reload lists a ready router-mode service anew
t_wait 10 grep -q "router-mode service 'eng': GET /models answered more than 1048576 bytes; its model list is kept as it was" \
    "$T/daemon.log" || t_fail "no warning about the oversized list"
t_eq "$(rcurl "$T/m2" "${K[@]}" "$RURL/v1/models")" 200 "after"
jq -e . "$T/m2" >/dev/null || t_fail "GET /v1/models is not valid JSON after the oversized list"
t_jq "$T/m2" '[.data[] | select(.kind == "listed") | .id] | sort | join(",")' "rm-a,rm-b"
t_lacks "$T/m2" huge-
t_eq "$(rcurl "$T/o" "${K[@]}" "$RURL/v1/chat/completions" -d '{"model":"rm-b"}')" 200 "a kept name still routes"
echo small >"$T/models.mode"
t_run 0 gpumod reload
lists_twice() { [ "$(grep -c "router-mode service 'eng' lists 2 model(s)" "$T/daemon.log")" -ge 2 ]; }
t_wait 10 lists_twice || t_fail "a later answer within the bound is not taken: the failed fetch left state behind"
t_end

t_begin "GET /route is valid JSON naming every name and service"
t_run 0 gpumod route show --json
jq -e . "$T/out" >/dev/null || t_fail "GET /route is not valid JSON"
t_jq out '[.names[] | .name] | sort | join(",")' "eng,rm-a,rm-b"
t_jq out '[.services[] | .id] | join(",")' "eng"
t_jq out '.services[0].state' ready
t_end

daemon_stop
stop_all_clean
t_done
