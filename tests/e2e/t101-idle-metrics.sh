#!/usr/bin/env bash
# t101-idle-metrics: a /metrics read that fails for a reason that may pass
# (here a 500) is not the end of the engine's counters (docs/router.md
# "Idle unload").  A small Python engine (command driver, idle_timeout
# 2s) serves vLLM's request counter, or a 500 while $T/fail exists, and
# records every /metrics answer.  After a failed read, requests to the
# engine's own port still keep it awake; when every read fails the router
# retries, then (after 5 in a row) judges on its own requests and
# unloads it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

RP=$(free_port) PE=$(free_port)
R=http://127.0.0.1:$RP
{
    printf 'supervisor: {stop_timeout: 2s, health_interval: 1s}\n'
    printf 'router: {listen: "127.0.0.1:%s", queue_timeout: %ss}\n' "$RP" $((60 * S))
} >"$C/gpumod.yaml"
cat >"$T/eng.py" <<'PY'
import http.server, json, os, socketserver, sys, threading

PORT, FAIL, HITS = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lock = threading.Lock()
n = 0

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, code, b, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/health":
            self.reply(200, b'{"status":"ok"}')
        elif self.path == "/metrics":
            code = 500 if os.path.exists(FAIL) else 200
            with open(HITS, "a") as f:
                f.write("%d\n" % code)
            with lock:
                b = ("vllm:request_success_total %d\n" % n).encode()
            self.reply(code, b if code == 200 else b"busy", "text/plain")
        else:
            self.reply(404, b'{"error":{"message":"not found"}}')
    def do_POST(self):
        global n
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            n += 1
        self.reply(200, json.dumps({"id": "e", "object": "chat.completion", "model": "mx",
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": "ok"}}]}).encode())

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

S(("127.0.0.1", PORT), H).serve_forever()
PY
cat >"$C/presets/mx.yaml" <<Y
id: mx
driver: command
port: $PE
model_id: mx
command: [python3, $T/eng.py, "{port}", $T/fail, $T/hits]
idle_timeout: $((2 * S))s
memory: {host_mb: 16}
Y
: >"$T/hits"

req() {
    curl -s -o /dev/null -w '%{http_code}' --max-time $((30 * S)) "$1/v1/chat/completions" \
        -H 'Content-Type: application/json' -d '{"model":"mx","messages":[{"role":"user","content":"hi"}]}'
}
router_up() { curl -s -o /dev/null --max-time 2 "$R/health"; }
fails() { grep -c '^500$' "$T/hits"; }
failed() { [ "$(fails)" -ge "$1" ]; }

daemon_start
t_wait 10 router_up || t_fail "the router never answered on $R"

t_begin "after a failed /metrics read, direct requests to the engine's port still keep it awake"
touch "$T/fail"
t_eq "$(req "$R")" 200 "the request that starts mx"
t_wait $((20 * S)) failed 1 || t_fail "the router never read /metrics"
rm -f "$T/fail"
end=$(( $(date +%s%N) / 1000000 + 7000 * S ))
while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
    [ "$(req "http://127.0.0.1:$PE")" = 200 ] || t_fail "a direct request failed"
    is_state mx ready || { t_fail "mx became $(state_of mx) while clients used its port"; break; }
    sleep 0.2
done
t_lacks "$T/daemon.log" "gives no request counters"
t_wait $((20 * S)) is_state mx down || t_fail "mx is $(state_of mx) once the direct requests ended"
t_match "$T/daemon.log" "router: 'mx' was stopped \(idle"
t_end

t_begin "when every read fails, the router retries, then judges alone and unloads it"
touch "$T/fail"
: >"$T/hits"
t_eq "$(req "$R")" 200 "the request that starts mx again"
t_wait $((40 * S)) is_state mx down || t_fail "mx is $(state_of mx), never down"
failed 5 || t_fail "mx was unloaded after $(fails) failed reads, not 5"
t_has "$T/daemon.log" "router: 'mx': GET /metrics failed 5 times in a row (last: status 500); idle is judged on the router's requests alone until a read succeeds again"
t_end

daemon_stop
stop_all_clean
t_done
