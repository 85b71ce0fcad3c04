#!/usr/bin/env bash
# t71-router-relay: the relay's edges, against a scripted python backend
# reached as remote services (one pool each, so every case starts on a
# FRESH backend connection).  A body whose model comes after 300 KiB of
# messages, the tail sent 0.3 s later (Content-Length and chunked): the
# held bytes go out at once on connect and the client's body must resume
# (docs/router.md "The relay").  Two pipelined requests on one client
# connection are both answered.  The backend's own CORS fields never
# reach the client: the router's replace them for an allowed origin, none
# for another.  A backend that dies in the middle of an SSE event: the
# error event is an event of its own.  /upstream/ refuses "." and ".."
# segments (also %2e) and encoded slashes, and keeps the query.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

command -v python3 >/dev/null || t_fail "python3 is needed (scripts/install-deps TEST_PKGS)"

PB=$(free_port)
cat >"$T/pyb.py" <<'PY'
import hashlib, http.server, json, signal, socketserver, sys

signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().strip(), 16)
                if n == 0:
                    self.rfile.readline()
                    return out, "chunked"
                out += self.rfile.read(n)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0"))), "length"
    def answer(self, obj):
        b = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Credentials", "true")
        self.send_header("access-control-expose-headers", "x-backend")
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        self.answer({"path": self.path})
    def do_POST(self):
        b, framing = self.body()
        if b'"cut":true' in b:
            # an SSE stream that dies inside its second event
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for ev in (b'data: {"i":0}\n\n', b'data: {"i":1,"te'):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
            self.close_connection = True
            return
        self.answer({"path": self.path, "len": len(b), "framing": framing,
                     "sha": hashlib.sha256(b).hexdigest()})

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY

# the client: python3 T/cli.py MODE PORT MODEL OUT
cat >"$T/cli.py" <<'PY'
import hashlib, json, socket, sys, time
mode, port, model, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection(("127.0.0.1", port), timeout=float(sys.argv[5]))

def read_response(f):
    line = f.readline()
    if not line:
        raise SystemExit("no response")
    status = int(line.split()[1])
    n = None
    while True:
        h = f.readline().strip()
        if not h:
            break
        k, v = h.split(b":", 1)
        if k.lower() == b"content-length":
            n = int(v)
    return status, f.read(n)

msg = b"a" * (300 * 1024)
body = b'{"messages":[{"role":"user","content":"' + msg + b'"}],"model":"' + model.encode() + b'","x":"tail"}'
head_len = len(body) - len(b'tail"}')
res = []
if mode in ("length", "chunked"):
    if mode == "length":
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body[:head_len])
        time.sleep(0.3)
        s.sendall(body[head_len:])
    else:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (body[:100000], body[100000:head_len]):
            s.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        time.sleep(0.3)
        t = body[head_len:]
        s.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(t), t))
    res.append(read_response(s.makefile("rb")))
    want = [hashlib.sha256(body).hexdigest()]
else:  # pipelined: two requests in one write
    b1 = b'{"model":"%s","n":1}' % model.encode()
    b2 = b'{"model":"%s","n":22}' % model.encode()
    req = b""
    for b in (b1, b2):
        req += b"POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b)
    s.sendall(req)
    f = s.makefile("rb")
    res.append(read_response(f))
    res.append(read_response(f))
    want = [hashlib.sha256(b1).hexdigest(), hashlib.sha256(b2).hexdigest()]
with open(out, "w") as o:
    for (st, b), w in zip(res, want):
        j = json.loads(b)
        o.write("%d %s %s %s\n" % (st, j.get("framing"), j.get("len"), "sha-ok" if j.get("sha") == w else "sha-BAD"))
PY

rsettings 'cors_origins: ["https://app.example"]'
for id in big chunk pipe cors cut far; do
    printf 'id: %s\nmodel_id: %s\ndriver: remote\nremote: {base_url: "http://127.0.0.1:%s/v1"}\n' "$id" "$id" "$PB" >"$C/presets/$id.yaml"
done
t_spawn pyb python3 "$T/pyb.py" "$PB"
t_wait 10 curl -sf -o /dev/null "http://127.0.0.1:$PB/health" || t_fail "the python backend never answered"
daemon_start
t_wait 10 curl -sf -o /dev/null "$RURL/health" || t_fail "the router never answered on $RURL"
for id in big chunk pipe cors cut far; do t_run 0 gpumod service start "$id"; done

t_begin "a body with its model after 300 KiB, the tail 0.3 s later, on a fresh backend connection: answered whole"
t_run 0 timeout $((20 * S)) python3 "$T/cli.py" length "$RP" big "$T/big.out" $((15 * S))
t_eq "$(cat "$T/big.out")" "200 length $((300 * 1024 + 68)) sha-ok" "Content-Length body"
t_run 0 timeout $((20 * S)) python3 "$T/cli.py" chunked "$RP" chunk "$T/chunk.out" $((15 * S))
t_eq "$(cat "$T/chunk.out")" "200 chunked $((300 * 1024 + 70)) sha-ok" "chunked body"
t_end

t_begin "two pipelined requests on one client connection: both answered, in order"
t_run 0 timeout $((20 * S)) python3 "$T/cli.py" pipe "$RP" pipe "$T/pipe.out" $((15 * S))
t_eq "$(cat "$T/pipe.out")" "$(printf '200 length 22 sha-ok\n200 length 23 sha-ok')" "answers"
t_match "$T/daemon.log" 'model=pipe -> pipe status=200 in=23 .* aborted=no'
t_end

t_begin "the backend's CORS fields are replaced by the router's (allowed origin) or dropped (any other)"
curl -s -o /dev/null -D "$T/h1" -H "Origin: https://app.example" "$RURL/v1/chat/completions" -d '{"model":"cors"}'
t_has "$T/h1" "HTTP/1.1 200"
t_eq "$(grep -ci '^access-control-' "$T/h1")" 1 "one Access-Control field"
t_has "$T/h1" "Access-Control-Allow-Origin: https://app.example"
t_has "$T/h1" "Vary: Origin"
curl -s -o /dev/null -D "$T/h2" -H "Origin: https://evil.example" "$RURL/v1/chat/completions" -d '{"model":"cors"}'
t_has "$T/h2" "HTTP/1.1 200"
t_eq "$(grep -ci '^access-control-' "$T/h2")" 0 "no Access-Control field for a refused origin"
curl -s -o /dev/null -D "$T/h3" "$RURL/upstream/cors/x"
t_eq "$(grep -ci '^access-control-' "$T/h3")" 0 "none without an Origin"
t_end

t_begin "a backend that dies inside an SSE event: the error event is an event of its own"
t_eq "$(rcurl "$T/cut.sse" -N "$RURL/v1/chat/completions" -d '{"model":"cut","cut":true}')" 200 "status"
t_has "$T/cut.sse" 'data: {"i":0}'
t_eq "$(grep -c '^event: error$' "$T/cut.sse")" 1 "one error event"
t_eq "$(grep -B1 '^event: error$' "$T/cut.sse" | head -1)" "" "a blank line before it"
t_has "$T/cut.sse" 'data: {"i":1,"te'
t_has "$T/cut.sse" "backend 127.0.0.1:$PB closed the connection inside the response body"
t_end

t_begin "/upstream/: '.', '..' (also %2e) and encoded slashes refused; the query kept"
for p in "../../x" "a/../../x" "./x" "%2e%2e/x" "%2E./x" "a%2Fb" "a%5c..%5cb"; do
    t_eq "$(rcurl "$T/o" --path-as-is "$RURL/upstream/far/$p")" 400 "/upstream/far/$p"
    t_jq "$T/o" .error.code bad_path
done
t_has "$T/o" "not allowed in the path"
t_eq "$(rcurl "$T/o" "$RURL/upstream/far/models?x=1&y=/z")" 200 "a query"
t_jq "$T/o" .path "/v1/models?x=1&y=/z"
t_eq "$(rcurl "$T/o" "$RURL/upstream/far?x=/y")" 200 "a query right after the service"
t_jq "$T/o" .path "/v1/?x=/y"
t_eq "$(rcurl "$T/o" "$RURL/upstream/far/a..b/.x")" 200 "dots inside a name are fine"
t_jq "$T/o" .path "/v1/a..b/.x"
t_lacks "$T/daemon.log" "y=/z"
t_end

t_begin "reload moves a remote to another base_url: the old pool is dropped, requests reach the new one"
PB2=$(free_port)
t_spawn pyb2 python3 "$T/pyb.py" "$PB2"
t_wait 10 curl -sf -o /dev/null "http://127.0.0.1:$PB2/health" || t_fail "the second python backend never answered"
t_eq "$(rcurl "$T/o" "$RURL/upstream/far/x")" 200 "before"
t_jq "$T/o" .path "/v1/x"
printf 'id: far\nmodel_id: far\ndriver: remote\nremote: {base_url: "http://127.0.0.1:%s/v2/"}\n' "$PB2" >"$C/presets/far.yaml"
t_run 0 gpumod reload
t_eq "$(rcurl "$T/o" "$RURL/upstream/far/x")" 200 "after"
t_jq "$T/o" .path "/v2/x"
t_eq "$(rcurl "$T/o" "$RURL/v1/chat/completions" -d '{"model":"far"}')" 200 "routed"
t_jq "$T/o" .path "/v2/chat/completions"
t_end

daemon_stop
stop_all_clean
t_done
