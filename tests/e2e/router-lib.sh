# tests/e2e/router-lib.sh - what the t71-router-* scripts share (sourced
# after lib.sh and sup-lib.sh): a gpumod.yaml with the router on a free
# port, curl through it, and a deterministic HTTP backend for byte-for-byte
# comparisons (fakellm's ids, times and timings differ per request).

RP=$(free_port)
RURL=http://127.0.0.1:$RP

# rsettings EXTRA_ROUTER_KEYS EXTRA_YAML...: the router listening on $RP
rsettings() {
    local rk=$1; shift
    {
        printf 'drivers:\n  llamacpp: {binary: fakellm}\n'
        printf 'supervisor: {stop_timeout: 2s, health_interval: 1s}\n'
        printf 'router: {listen: "127.0.0.1:%s"%s}\n' "$RP" "${rk:+, $rk}"
        printf '%s\n' "$@"
    } >"$C/gpumod.yaml"
}

# rcurl OUT ARGS...: curl through the router; body in OUT, status printed
rcurl() {
    local out=$1; shift
    curl -s -o "$out" -w '%{http_code}' --max-time $((20 * S)) "$@"
}

# chat MODEL [STREAM] [MAX_TOKENS]: a chat request body
chat() {
    printf '{"model":"%s","stream":%s,"max_tokens":%s,"ignore_eos":true,"messages":[{"role":"user","content":"hi"}]}' \
        "$1" "${2:-false}" "${3:-8}"
}

# the deterministic backend: python3 T/backend.py PORT.  /health 200;
# POST .../chat/completions: a fixed SSE stream (chunked, 40 events, each
# flushed on its own) when the body says "stream": true, else 1 MiB of
# fixed pseudo-random bytes with Content-Length.
cat >"$T/backend.py" <<'PY'
import http.server, random, socketserver, sys, time

BLOB = random.Random(7).randbytes(1 << 20)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        b = b'{"status":"ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if b'"stream":true' in body:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(40):
                ev = ('data: {"i":%d,"text":"%s"}\n\n' % (i, "x" * (i * 7 % 50))).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(0.002)
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(BLOB)))
            self.end_headers()
            self.wfile.write(BLOB)

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY

# rpreset ID PORT CTX [YAML LINE...]: a llama.cpp preset played by fakellm
rpreset() {
    local id=$1 port=$2 ctx=$3; shift 3
    {
        printf 'id: %s\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: %s\n' "$id" "$port" "$MODEL" "$ctx"
        printf '%s\n' "$@"
    } >"$C/presets/$id.yaml"
}
