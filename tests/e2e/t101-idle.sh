#!/usr/bin/env bash
# t101-idle: idle unload through the router (docs/router.md "Idle unload").
# A vLLM fake with sleep_mode l1 and idle_timeout 2s sleeps after two
# seconds without a request, a llama.cpp fake without sleep_mode stops;
# the next request wakes (or starts) it and is answered.  Requests sent to
# the engine's own port keep it awake (its /metrics counters grow).
# Ollama's keep_alive: 0 unloads after the request, a negative value and
# "5m" keep the service past its idle timeout, "1s" shortens it, a later
# request without keep_alive (or null) brings the idle timeout back, a bad
# value is a 400 that activates nothing, and the key never reaches the
# engine (a small Python engine records the bodies it gets).
. "$(dirname "$0")/lib.sh"

fake_gpu_24g
. "$(dirname "$0")/sup-lib.sh"

RP=$(free_port) PV=$(free_port) PL=$(free_port) PK=$(free_port) PE=$(free_port)
R=http://127.0.0.1:$RP
{
    printf 'drivers:\n  llamacpp: {binary: fakellm}\n  vllm: {binary: fakellm}\n'
    printf 'supervisor: {stop_timeout: 2s, health_interval: 1s}\n'
    printf 'router: {listen: "127.0.0.1:%s", queue_timeout: %ss}\n' "$RP" $((60 * S))
} >"$C/gpumod.yaml"
cat >"$C/presets/vs.yaml" <<Y
id: vs
driver: vllm
port: $PV
model_id: org/vs-7b
context_size: 128
sleep_mode: l1
idle_timeout: $((2 * S))s
devices: [0]
memory: {gpu_mb: 1000, host_mb: 100}
env: {GPUMOD_FAKE_NVML_STATE: "$T/nvml.json", FAKELLM_GPU_MB: "1000"}
Y
preset ln "$PL" "idle_timeout: $((2 * S))s"
preset ka "$PK"
# the engine that records what it is sent
cat >"$T/echo.py" <<'PY'
import http.server, json, socketserver, sys

LOG = sys.argv[2]

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        else:
            self.reply(404, {"error": {"message": "not found"}})
    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                n = int(self.rfile.readline().strip(), 16)
                chunk = self.rfile.read(n)
                self.rfile.readline()
                if n == 0:
                    break
                body += chunk
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(LOG, "ab") as f:
            f.write(body + b"\n")
        try:
            j = json.loads(body)
        except ValueError as e:
            self.reply(400, {"error": {"message": "bad json: %s" % e}})
            return
        self.reply(200, {"id": "e", "object": "chat.completion", "model": j.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": "ok"}}]})

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
printf 'id: echo\ndriver: command\nport: %s\nmodel_id: echo\ncommand: [python3, %s, "{port}", %s]\nmemory: {host_mb: 16}\n' \
    "$PE" "$T/echo.py" "$T/bodies" >"$C/presets/echo.yaml"

# ask MODEL [EXTRA_JSON]: a chat request through the router; status printed, body in $T/o
ask() {
    curl -s -o "$T/o" -w '%{http_code}' --max-time $((60 * S)) "$R/v1/chat/completions" \
        -H 'Content-Type: application/json' \
        -d "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3${2:+,$2}}"
}
# direct PORT MODEL: the same, to the engine's own port
direct() {
    curl -s -o /dev/null -w '%{http_code}' --max-time $((10 * S)) "http://127.0.0.1:$1/v1/chat/completions" \
        -H 'Content-Type: application/json' \
        -d "{\"model\":\"$2\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}"
}
router_up() { curl -s -o /dev/null --max-time 2 "$R/health"; }
# stays SECONDS SERVICE STATE: the state holds for that long (checked every 0.2 s)
stays() {
    local end=$(( $(date +%s%N) / 1000000 + $1 * 1000 * S ))
    while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
        is_state "$2" "$3" || { t_fail "$2 became $(state_of "$2") while it should have stayed $3"; return 1; }
        sleep 0.2
    done
}

daemon_start
t_wait 10 router_up || t_fail "the router never answered on $R"

t_begin "a request starts vs; two seconds without one put it to sleep (l1), not a stop"
t_eq "$(ask org/vs-7b)" 200 "the first request"
t_eq "$(state_of vs)" ready "vs after the request"
t_wait $((20 * S)) is_state vs sleeping || t_fail "vs is $(state_of vs), never sleeping"
t_has "$T/daemon.log" "router: 'vs' had no request for"
t_match "$T/daemon.log" "router: 'vs' is asleep \(idle"
t_eq "$(count sleep vs)" 1 "sleep events of vs"
pid=$(field vs .pid)
t_end

t_begin "the next request wakes vs and is answered"
t_eq "$(ask org/vs-7b)" 200 "the request to the sleeper"
t_jq "$T/o" .model org/vs-7b
t_eq "$(state_of vs)" ready "vs"
t_eq "$(count wake vs)" 1 "wake events of vs"
t_eq "$(field vs .pid)" "$pid" "the engine's pid (a wake, no new process)"
t_end

t_begin "requests to the engine's own port keep vs awake (its /metrics counters grow)"
end=$(( $(date +%s%N) / 1000000 + 6000 * S ))
while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
    [ "$(direct "$PV" org/vs-7b)" = 200 ] || t_fail "a direct request failed"
    is_state vs ready || { t_fail "vs became $(state_of vs) while clients used its port"; break; }
    sleep 0.2
done
t_wait $((20 * S)) is_state vs sleeping || t_fail "vs is $(state_of vs) once the direct requests ended"
t_eq "$(count sleep vs)" 2 "sleep events of vs"
t_end

t_begin "a llama.cpp service without sleep_mode stops after its idle timeout; a request starts it again"
t_eq "$(ask ln)" 200 "the first request"
t_wait $((20 * S)) is_state ln down || t_fail "ln is $(state_of ln), never down"
t_match "$T/daemon.log" "router: 'ln' was stopped \(idle"
t_eq "$(ask ln)" 200 "the request after the stop"
t_eq "$(count spawn ln)" 2 "spawn events of ln"
t_end

t_begin "keep_alive 0 unloads a service without idle_timeout once its request ended"
t_eq "$(ask ka '"keep_alive":0')" 200 "the request"
t_wait $((20 * S)) is_state ka down || t_fail "ka is $(state_of ka), never down"
t_match "$T/daemon.log" "router: 'ka' was stopped \(keep_alive"
t_end

t_begin "a bad keep_alive is a 400 naming the value; nothing is activated"
t_eq "$(ask ka '"keep_alive":"soon"')" 400 "a string that is no duration"
t_jq "$T/o" .error.code invalid_keep_alive
t_jq "$T/o" .error.type invalid_request_error
t_has "$T/o" 'keep_alive \"soon\": not a duration'
t_has "$T/o" 'such as \"5m\", \"1h30m\", \"10s\", \"300ms\"'
t_eq "$(ask ka '"keep_alive":"300"')" 400 "a number string without a unit"
t_has "$T/o" "needs a unit"
t_eq "$(ask ka '"keep_alive":true')" 400 "a boolean"
t_has "$T/o" "keep_alive is a boolean"
t_eq "$(state_of ka)" down "ka"
t_end

t_begin "keep_alive -1 and \"5m\" keep services loaded past their idle timeout; \"1s\" unloads"
t_eq "$(ask org/vs-7b '"keep_alive":-1')" 200 "vs with -1"
t_eq "$(ask ln '"keep_alive":"5m"')" 200 "ln with 5m"
stays 6 vs ready
is_state ln ready || t_fail "ln is $(state_of ln) before its 5 minutes"
t_eq "$(ask org/vs-7b '"keep_alive":"1s"')" 200 "vs with 1s"
t_wait $((20 * S)) is_state vs sleeping || t_fail "vs is $(state_of vs), never sleeping after keep_alive 1s"
t_eq "$(state_of ln)" ready "ln"
t_end

t_begin "a request without keep_alive drops the override (as Ollama): the idle timeout applies again"
t_eq "$(ask org/vs-7b '"keep_alive":-1')" 200 "vs with -1"
stays 4 vs ready
t_eq "$(ask org/vs-7b)" 200 "vs without keep_alive"
t_wait $((20 * S)) is_state vs sleeping || t_fail "vs is $(state_of vs), never sleeping after a request without keep_alive"
t_eq "$(ask ln '"keep_alive":null')" 200 "ln with null (its 5m override before)"
t_wait $((20 * S)) is_state ln down || t_fail "ln is $(state_of ln), never down after keep_alive null"
t_end

t_begin "keep_alive never reaches the engine (Content-Length and chunked bodies)"
t_eq "$(ask echo '"keep_alive":"10m","temperature":0')" 200 "a request with keep_alive"
t_jq "$T/o" '.choices[0].message.content' ok
: >"$T/chunked.out"
st=$(printf '{"keep_alive":"10m","model":"echo","messages":[{"role":"user","content":"hi"}]}' |
    curl -s -o "$T/chunked.out" -w '%{http_code}' --max-time $((30 * S)) "$R/v1/chat/completions" \
        -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @-)
t_eq "$st" 200 "a chunked request with keep_alive"
t_eq "$(wc -l <"$T/bodies")" 2 "bodies the engine got"
t_lacks "$T/bodies" keep_alive
t_eq "$(sed -n 1p "$T/bodies" | jq -c .)" \
    '{"model":"echo","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0}' "the first body"
t_eq "$(sed -n 2p "$T/bodies" | jq -c .)" '{"model":"echo","messages":[{"role":"user","content":"hi"}]}' \
    "the chunked body"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
stop_all_clean
t_end

t_done
