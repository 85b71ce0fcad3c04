#!/usr/bin/env python3
"""pipe.py - scripted JSON-RPC over gpumod-mcp's stdin/stdout, for what an
SDK never sends (tests/e2e/t95-mcp-pipe.sh).

    pipe.py SCENARIO        runs one scenario; exit 0 when every check
                            held, else 1 after "FAIL: what" on stderr

The server is $GPUMOD_BIN mcp [args] with the test's environment (its
socket, config and state dirs).  Every line the server writes must be
one JSON-RPC message: a line that is not fails the scenario.  Waits
have deadlines scaled by GPUMOD_TEST_TIME_SCALE."""
import json
import os
import select
import subprocess
import sys
import time

SCALE = float(os.environ.get("GPUMOD_TEST_TIME_SCALE", "1"))
BIN = os.environ["GPUMOD_BIN"]


def fail(what):
    sys.stderr.write("FAIL: %s\n" % what)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


class Server:
    def __init__(self, *args):
        self.p = subprocess.Popen([BIN, "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.environ.get("MCP_STDERR", "/dev/null"), "ab"))
        self.buf = b""
        self.seen = []  # every message read, in order

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw((json.dumps(obj) + "\n").encode())

    def read(self, secs=10):
        """the next message, or None at the deadline"""
        deadline = time.time() + secs * SCALE
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            m = json.loads(line)
        except ValueError:
            fail("the server wrote a line that is not JSON: %r" % line[:200])
        ok = isinstance(m, list) or (isinstance(m, dict) and m.get("jsonrpc") == "2.0")
        check(ok, "not a JSON-RPC message: %r" % line[:200])
        self.seen.append(m)
        return m

    def answer(self, mid, secs=10, keep=None):
        """the response to id mid (notifications before it go to keep)"""
        while True:
            m = self.read(secs)
            check(m is not None, "no answer to id %r within %g s" % (mid, secs * SCALE))
            if isinstance(m, dict) and "id" in m and m["id"] == mid and "method" not in m:
                return m
            if keep is not None:
                keep.append(m)

    def call(self, mid, method, params=None, secs=10):
        msg = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.answer(mid, secs)

    def init(self, version="2025-06-18"):
        r = self.call(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "pipe.py", "version": "1"}})
        check("result" in r, "initialize failed: %r" % r)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r["result"]

    def tool(self, mid, name, args=None, secs=10, meta=None):
        params = {"name": name, "arguments": args or {}}
        if meta:
            params["_meta"] = meta
        return self.call(mid, "tools/call", params, secs)

    def close(self, secs=5):
        self.p.stdin.close()
        try:
            return self.p.wait(secs * SCALE)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("the server did not exit %g s after stdin closed" % (secs * SCALE))


def error_code(r):
    return r.get("error", {}).get("code")


def tool_error(r):
    res = r.get("result", {})
    return res.get("content", [{}])[0].get("text", "") if res.get("isError") else None


def framing():
    s = Server()
    # before initialize: only ping and initialize
    check(s.call(1, "ping").get("result") == {}, "ping before initialize")
    r = s.call(2, "tools/list")
    check(error_code(r) == -32600 and "initialize" in r["error"]["message"], "tools/list before initialize: %r" % r)
    s.send_raw(b"this is not json\n")
    r = s.read()
    check(error_code(r) == -32700 and r["id"] is None, "a line that is not JSON: %r" % r)
    s.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"ping"} trailing\n')
    check(error_code(s.read()) == -32700, "trailing bytes after the value")
    s.send_raw(b'{"jsonrpc":"1.0","id":4,"method":"ping"}\n')
    r = s.read()
    check(error_code(r) == -32600 and r["id"] == 4, "jsonrpc 1.0: %r" % r)
    s.send_raw(b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n')
    check(error_code(s.read()) == -32600, "a null id")
    s.send_raw(b'{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}\n')
    check(error_code(s.read()) == -32700, "a duplicate key")
    s.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":[1]}\n')
    check(error_code(s.read()) == -32602, "positional params")
    s.send_raw(b'[{"jsonrpc":"2.0","id":8,"method":"ping"}]\n')
    check(error_code(s.read()) == -32600, "a batch before 2025-03-26 was negotiated")
    # a CR before the newline and blank lines are tolerated
    s.send_raw(b'\n   \n{"jsonrpc":"2.0","id":9,"method":"ping"}\r\n')
    check(s.read().get("id") == 9, "CRLF")
    # a line over 4 MiB: -32700, skipped to its newline, the session goes on
    s.send_raw(b'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":"' + b"a" * (5 << 20) + b'"}}\n')
    r = s.read(20)
    check(error_code(r) == -32700 and "4 MiB" in r["error"]["message"], "a 5 MiB line: %r" % r)
    check(s.call(11, "ping").get("result") == {}, "ping after the long line")
    # notifications are never answered, not even wrong ones
    s.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}})
    check(s.call(12, "ping").get("id") == 12, "the answer after two notifications is the ping's")
    # a response from the client (we sent no request) is dropped
    s.send({"jsonrpc": "2.0", "id": 77, "result": {}})
    check(s.call(13, "ping").get("id") == 13, "a stray response")
    # a bad notification and a bad response are not answered either
    s.send({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]})
    s.send({"jsonrpc": "2.0", "method": "notifications/x", "extra": 1})
    s.send({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "x"}})
    check(s.call(14, "ping").get("id") == 14, "a bad notification or response was answered")
    check(s.close() == 0, "exit 0 at the end of stdin")


def versions():
    for asked, got in [("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"),
                       ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-06-18")]:
        s = Server()
        r = s.init(asked)
        check(r["protocolVersion"] == got, "asked %s, got %s" % (asked, r["protocolVersion"]))
        check(r["serverInfo"]["name"] == "gpumod", "serverInfo")
        check(r["capabilities"]["resources"]["subscribe"] is True, "resources.subscribe")
        tools = s.call(1, "tools/list")["result"]["tools"]
        if got == "2024-11-05":
            check(all("annotations" not in t for t in tools), "no annotations in 2024-11-05")
        else:
            sw = [t for t in tools if t["name"] == "switch_mode"][0]
            check(sw["annotations"]["destructiveHint"] is True and sw["annotations"]["readOnlyHint"] is False,
                  "switch_mode's annotations: %r" % sw)
        check(("title" in tools[0]) == (got == "2025-06-18"), "titles only in 2025-06-18")
        r = s.call(2, "initialize", {"protocolVersion": got, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})
        check(error_code(r) == -32600, "a second initialize")
        if got == "2025-03-26":  # a batch: each answered, in one array
            s.send([{"jsonrpc": "2.0", "id": 3, "method": "ping"},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 4, "method": "nope"}])
            b = s.read()
            check(isinstance(b, list) and len(b) == 2 and b[0]["id"] == 3 and error_code(b[1]) == -32601,
                  "the batch's answer: %r" % b)
            s.send([])
            check(error_code(s.read()) == -32600, "an empty batch")
        s.close()
    s = Server()
    r = s.call(1, "initialize", {"capabilities": {}})
    check(error_code(r) == -32602, "initialize without protocolVersion")
    s.close()


def methods():
    s = Server()
    s.init()
    check(error_code(s.call(1, "prompts/list")) == -32601, "prompts/list is not offered")
    check(error_code(s.call(2, "tools/list", {"cursor": "abc"})) == -32602, "an invalid cursor")
    r = s.call(3, "tools/call", {"name": "nope", "arguments": {}})
    check(error_code(r) == -32602 and "unknown tool 'nope'" in r["error"]["message"], "unknown tool: %r" % r)
    r = s.call(4, "tools/call", {"name": "service_info", "arguments": {"service_id": 5}})
    check(error_code(r) == -32602 and "expected a string" in r["error"]["message"], "wrong type: %r" % r)
    r = s.call(5, "tools/call", {"name": "service_info", "arguments": {}})
    check("'service_id' is required" in r["error"]["message"], "missing argument: %r" % r)
    r = s.call(6, "tools/call", {"name": "events", "arguments": {"limit": 0}})
    check("below the minimum" in r["error"]["message"], "out of range: %r" % r)
    r = s.call(7, "tools/call", {"name": "gpu_status", "arguments": {"verbose": True}})
    check("unknown argument 'verbose'" in r["error"]["message"], "unknown argument: %r" % r)
    r = s.call(8, "tools/call", {"name": "gpu_status", "arguments": [1]})
    check(error_code(r) == -32602, "arguments not an object")
    r = s.call(9, "resources/read", {"uri": "gpumod://nothing"})
    check(error_code(r) == -32002, "an unknown resource: %r" % r)
    r = s.call(10, "resources/subscribe", {"uri": "file:///etc/passwd"})
    check(error_code(r) == -32002, "subscribing to something that is not ours")
    r = s.call(12, "a\x1b[31mb\x07")
    check(error_code(r) == -32601 and "\x1b" not in r["error"]["message"] and "\x07" not in r["error"]["message"]
          and "'ab'" in r["error"]["message"], "an unknown method's name echoed clean: %r" % r)
    r = s.call(11, "resources/templates/list")
    check(len(r["result"]["resourceTemplates"]) == 2, "two templates")
    s.close()


def readonly():
    s = Server("--read-only")
    s.init()
    names = [t["name"] for t in s.call(1, "tools/list")["result"]["tools"]]
    for m in ("switch_mode", "start_service", "stop_service"):
        check(m not in names, "%s listed under --read-only" % m)
    check("gpu_status" in names and "simulate_mode" in names, "read tools listed")
    r = s.tool(2, "stop_service", {"service_id": "a"})
    check(error_code(r) == -32602 and "--read-only" in r["error"]["message"], "a mutating call: %r" % r)
    s.close()


def no_events():
    s = Server("--no-events")
    r = s.init()
    check(r["capabilities"]["resources"]["subscribe"] is False, "--no-events advertises no subscriptions: %r" % r)
    s.close()


def daemon_down():
    """no daemon: each tool says so, the server keeps running"""
    s = Server()
    s.init()
    r = s.tool(1, "gpu_status")
    msg = tool_error(r)
    check(msg and "no daemon is running" in msg and "gpumod serve" in msg, "gpu_status with no daemon: %r" % r)
    r = s.call(2, "resources/read", {"uri": "gpumod://status"})
    check(error_code(r) == -32603 and "no daemon" in r["error"]["message"], "a read with no daemon: %r" % r)
    check(s.call(3, "ping").get("result") == {}, "still alive")
    s.close()


def restart_wait():
    """with a daemon up: a tool works; the test then restarts the daemon
    (it waits for 'restart' on our stdout... via files); see t95"""
    s = Server()
    s.init()
    check(tool_error(s.tool(1, "gpu_status")) is None, "gpu_status with the daemon up")
    s.send({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "gpumod://services/a"}})
    s.answer(2)
    open(os.environ["MCP_SIGNAL"] + ".up", "w").close()
    # the test stops the daemon now; a call in the gap fails with a message
    deadline = time.time() + 20 * SCALE
    while not os.path.exists(os.environ["MCP_SIGNAL"] + ".down"):
        check(time.time() < deadline, "the test never said the daemon is down")
        time.sleep(0.05)
    msg = tool_error(s.tool(3, "list_services"))
    check(msg and ("no daemon" in msg or "did not answer" in msg), "a call while the daemon is down: %r" % msg)
    open(os.environ["MCP_SIGNAL"] + ".asked", "w").close()
    # the test starts a new daemon, then starts service a: a works again, and the subscription fires
    while not os.path.exists(os.environ["MCP_SIGNAL"] + ".again"):
        check(time.time() < deadline + 20 * SCALE, "the test never said the daemon is back")
        time.sleep(0.05)
    check(tool_error(s.tool(4, "list_services")) is None, "a call after the daemon came back")
    notes = []
    r = s.tool(5, "start_service", {"service_id": "a"}, secs=30, meta={"progressToken": 5})
    check(tool_error(r) is None, "start a after the restart: %r" % r)
    got = False
    deadline = time.time() + 10 * SCALE
    for m in s.seen:
        if isinstance(m, dict) and m.get("method") == "notifications/resources/updated" \
                and m["params"]["uri"] == "gpumod://services/a":
            got = True
    while not got and time.time() < deadline:
        m = s.read(1)
        if m and m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == "gpumod://services/a":
            got = True
    check(got, "no resources/updated for gpumod://services/a after the daemon's restart")
    r = s.tool(6, "stop_service", {"service_id": "a"}, secs=30)
    check(tool_error(r) is None, "stop a: %r" % r)
    s.close()


def switch_progress():
    """a switch to a slow mode: progress notifications, ping answered while
    it runs; a second switch cancelled: no answer to it"""
    s = Server()
    s.init()
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "switch_mode", "arguments": {"mode_id": "S"}, "_meta": {"progressToken": "p1"}}})
    # ping while the switch runs: answered at once
    s.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    keep = []
    s.answer(2, keep=keep)
    # the same id again while the switch runs: refused, the switch goes on
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "gpu_status", "arguments": {}}})
    r = s.answer(1, keep=keep)
    check("this id" in (tool_error(r) or ""), "a second call with an id in flight: %r" % r)
    r = s.answer(1, secs=60, keep=keep)
    check(tool_error(r) is None, "the switch to S: %r" % r)
    check(r["result"]["structuredContent"]["outcome"] == "committed", "committed: %r" % r["result"])
    prog = [m for m in keep if isinstance(m, dict) and m.get("method") == "notifications/progress"]
    check(prog and all(p["params"]["progressToken"] == "p1" for p in prog), "progress notifications: %r" % keep)
    vals = [p["params"]["progress"] for p in prog]
    check(vals == sorted(vals) and len(set(vals)) == len(vals), "progress increases: %r" % vals)
    # cancelled: the call is dropped, the switch goes on in the daemon
    s.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "switch_mode", "arguments": {"mode_id": "none"}}})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "test"}})
    check(s.call(4, "ping").get("id") == 4, "ping after a cancel")
    end = time.time() + 3 * SCALE
    while time.time() < end:
        m = s.read(0.5)
        check(not (isinstance(m, dict) and m.get("id") == 3), "a cancelled call was answered: %r" % m)
    # the cancelled switch goes on in the daemon: wait for its end
    deadline = time.time() + 30 * SCALE
    while s.tool(7, "list_modes")["result"]["structuredContent"]["switching"] is not None:
        check(time.time() < deadline, "the cancelled switch never ended")
        time.sleep(0.1)
    # wait=false: the id at once, switch_status follows it
    r = s.tool(5, "switch_mode", {"mode_id": "S", "wait": False})
    sid = r["result"]["structuredContent"]["switch_id"]
    deadline = time.time() + 30 * SCALE
    while True:
        st = s.tool(6, "switch_status", {"switch_id": sid})["result"]["structuredContent"]
        if st.get("result"):
            break
        check(time.time() < deadline, "switch %d never ended" % sid)
        time.sleep(0.2)
    check(st["outcome"] == "committed", "switch_status: %r" % st)
    s.close()


def start_progress():
    """a start with a progress token: notifications before the result, each larger"""
    s = Server()
    s.init()
    check(tool_error(s.tool(1, "stop_service", {"service_id": "slow"}, secs=30)) is None, "stop slow first")
    keep = []
    s.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "start_service", "arguments": {"service_id": "slow"}, "_meta": {"progressToken": 9}}})
    r = s.answer(2, secs=60, keep=keep)
    check(tool_error(r) is None and r["result"]["structuredContent"]["state"] == "ready", "start slow: %r" % r)
    vals = [m["params"]["progress"] for m in keep if isinstance(m, dict) and m.get("method") == "notifications/progress"]
    check(len(vals) >= 2, "a 1.5 s load told in one notification or none: %r" % keep)
    check(all(b > a for a, b in zip(vals, vals[1:])), "progress does not increase: %r" % vals)
    s.close()


def refused():
    """a start the gate refuses: isError with the gate's reason; the rate limit"""
    s = Server("--rate", "2")
    s.init()
    r = s.tool(1, "start_service", {"service_id": "huge"}, secs=30)
    msg = tool_error(r)
    check(msg and "gate_refused" in msg and "MemAvailable" in msg and "required" in msg, "the gate's refusal: %r" % r)
    r = s.tool(2, "stop_service", {"service_id": "huge"}, secs=30)
    check(tool_error(r) is None, "stop a service that is down: %r" % r)
    r = s.tool(3, "stop_service", {"service_id": "huge"})
    msg = tool_error(r)
    check(msg and "rate limit" in msg and "2 changing calls a minute" in msg, "the rate limit: %r" % r)
    check(tool_error(s.tool(4, "gpu_status")) is None, "reading is not limited")
    r = s.tool(5, "service_info", {"service_id": "nope"})
    msg = tool_error(r)
    check(msg and "no service 'nope'" in msg and "HTTP 404" in msg, "an id that does not exist: %r" % r)
    r = s.tool(6, "preflight", {"service_id": "a", "mode_id": "S"})
    check("exactly one" in (tool_error(r) or ""), "preflight with both: %r" % r)
    r = s.tool(7, "model_info", {"model_id": "/etc/passwd"})
    check("not a .gguf file" in (tool_error(r) or ""), "model_info of a file that is not GGUF: %r" % r)
    s.close()


def sanitized():
    """the service's log holds escapes and controls: none reach the client"""
    s = Server()
    s.init()
    r = s.tool(1, "service_logs", {"service_id": "noisy", "lines": 50}, secs=10)
    check(tool_error(r) is None, "logs: %r" % r)
    data = r["result"]["structuredContent"]["data"]
    check("NOISY" in data, "the log's text is there: %r" % data[:300])
    bad = [c for c in data if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    check(not bad, "control characters reached the client: %r" % bad[:5])
    check("<redacted>" in data and "sekrit" not in data, "the API key is redacted: %r" % data[:300])
    text = r["result"]["content"][0]["text"]
    check("\\u001b" not in text and "\\u0007" not in text and "\x1b" not in text,
          "an escape reached the text content: %r" % text[:300])
    check(json.loads(text)["data"] == data, "the text content is the structured content")
    s.close()


HUB_TOOLS = ("search_hf_models", "list_gguf_files", "fetch_model_config", "generate_preset")


def structured(r, what):
    check(tool_error(r) is None and "result" in r, "%s: %r" % (what, r))
    return r["result"]["structuredContent"]


def hub_tools():
    """the Hub's tools against the fake hub (HF_ENDPOINT): each works and
    each says what went wrong; arguments the schema subset cannot check
    are -32602 too (t97-mcp-models.sh)"""
    s = Server()
    s.init()
    tools = {t["name"]: t for t in s.call(1, "tools/list")["result"]["tools"]}
    for n in HUB_TOOLS:
        check(n in tools, "%s listed" % n)
        check(tools[n]["annotations"]["readOnlyHint"] is True and tools[n]["annotations"]["openWorldHint"] is True,
              "%s: read-only, open world: %r" % (n, tools[n]["annotations"]))
    check("pull_model" not in tools, "pull_model listed without --allow-pull")
    check(tools["gpu_status"]["annotations"]["openWorldHint"] is False, "the daemon's tools are not open world")
    # search_hf_models
    v = structured(s.tool(2, "search_hf_models", {"search": "tiny"}, secs=60), "search tiny")
    check(v["count"] == 1 and v["models"][0]["id"] == "test/tiny-GGUF", "search tiny: %r" % v)
    v = structured(s.tool(3, "search_hf_models", {"author": "synth", "limit": 1}, secs=60), "search --author")
    check(v["count"] == 1 and v["models"][0]["id"] == "synth/Big-70B-GGUF", "author synth, limit 1: %r" % v)
    v = structured(s.tool(4, "search_hf_models", {"search": "GGUF", "task": "embed"}, secs=60), "task embed")
    check(v["count"] == 0 and v["task"] == "embed", "task embed: %r" % v)
    r = s.tool(5, "search_hf_models", {"search": "tiny", "limit": 101})
    check(error_code(r) == -32602 and "above the maximum 100" in r["error"]["message"], "limit 101: %r" % r)
    r = s.tool(6, "search_hf_models", {"limit": 5})
    check(error_code(r) == -32602 and "give search, author or both" in r["error"]["message"], "no search: %r" % r)
    r = s.tool(7, "search_hf_models", {"search": "--json"})
    check(error_code(r) == -32602 and "must not start with '-'" in r["error"]["message"], "an option as search: %r" % r)
    r = s.tool(8, "search_hf_models", {"search": "tiny", "task": "poetry"})
    check(error_code(r) == -32602 and "is not one of" in r["error"]["message"], "task poetry: %r" % r)
    # fetch_model_config
    v = structured(s.tool(10, "fetch_model_config", {"repo_id": "test/tiny-GGUF"}, secs=60), "config tiny")
    check(v["repo_id"] == "test/tiny-GGUF" and v["context_length"] > 0 and v["is_moe"] is False
          and len(v["architectures"]) > 0, "config tiny: %r" % v)
    msg = tool_error(s.tool(11, "fetch_model_config", {"repo_id": "test/split-GGUF"}, secs=60))
    check(msg and msg.startswith("fetch_model_config: ") and "no config.json" in msg, "config split: %r" % msg)
    for i, bad in enumerate(("a/../b", "noslash", "/etc/passwd", "a/b/c", "-a/b")):
        r = s.tool(12 + i, "fetch_model_config", {"repo_id": bad})
        check(error_code(r) == -32602 and "expected ORG/REPO" in r["error"]["message"], "repo_id %r: %r" % (bad, r))
    # list_gguf_files
    v = structured(s.tool(20, "list_gguf_files", {"repo_id": "test/tiny-GGUF"}, secs=120), "files tiny")
    check(v["repo_id"] == "test/tiny-GGUF" and v["count"] == len(v["files"]) == 2, "files tiny: %r" % v)
    check(all(f["estimate"] for f in v["files"]) and "vram_budget_mb" not in v, "each file estimated: %r" % v)
    v = structured(s.tool(21, "list_gguf_files", {"repo_id": "synth/Big-70B-GGUF", "vram_budget_mb": 1024},
                          secs=120), "files big, 1 GiB")
    check(v["vram_budget_mb"] == 1024 and v["files"] and all(f["fits_budget"] is False and f["gpu_need_mb"] > 1024
                                                            for f in v["files"]), "nothing fits 1 GiB: %r" % v)
    v = structured(s.tool(22, "list_gguf_files", {"repo_id": "test/tiny-GGUF", "vram_budget_mb": 100000},
                          secs=120), "files tiny, 100 GB")
    check(all(f["fits_budget"] is True for f in v["files"]), "tiny fits 100 GB: %r" % v)
    msg = tool_error(s.tool(23, "list_gguf_files", {"repo_id": "test/nope-GGUF"}, secs=60))
    check(msg and msg.startswith("list_gguf_files: ") and "no such repository" in msg, "files nope: %r" % msg)
    r = s.tool(24, "list_gguf_files", {"repo_id": "test/tiny-GGUF", "vram_budget_mb": 0})
    check(error_code(r) == -32602, "budget 0: %r" % r)
    # generate_preset: YAML text, nothing written
    v = structured(s.tool(30, "generate_preset", {"repo_id": "test/tiny-GGUF",
                                                  "gguf_file": "llama-2-tiny-random.gguf",
                                                  "context_size": 1024, "service_id": "tiny"}, secs=120),
                   "generate_preset")
    check('id: "tiny"\n' in v["preset"] and "context_size: 1024\n" in v["preset"] and v["written"] is False
          and v["context_size"] == 1024, "generate_preset: %r" % v)
    check(not os.path.exists(os.path.join(os.environ["GPUMOD_CONFIG_DIR"], "presets", "tiny.yaml")),
          "generate_preset wrote a preset")
    msg = tool_error(s.tool(32, "generate_preset", {"repo_id": "test/tiny-GGUF", "gguf_file": "nope.gguf"},
                            secs=120))
    check(msg and msg.startswith("generate_preset: ") and "nope.gguf" in msg, "generate_preset nope: %r" % msg)
    for args, want in (({"repo_id": "test/tiny-GGUF", "gguf_file": "/etc/x.gguf"}, "not absolute"),
                       ({"repo_id": "test/tiny-GGUF", "gguf_file": "../x.gguf"}, "'..'"),
                       ({"repo_id": "test/tiny-GGUF", "gguf_file": "model.bin"}, "must end in .gguf"),
                       ({"repo_id": "test/tiny-GGUF", "gguf_file": "m.gguf", "context_size": 100}, "below the minimum"),
                       ({"repo_id": "test/tiny-GGUF", "gguf_file": "m.gguf", "service_id": "a b"}, "service_id"),
                       ({"repo_id": "test/tiny-GGUF", "gguf_file": "m.gguf", "service_id": "Tiny"}, "service_id"),
                       ({"repo_id": "test/tiny-GGUF", "gguf_file": "m.gguf", "service_id": "my_model"},
                        "expected 1 to 64 of a-z, 0-9 and '-'"),
                       ({"repo_id": "test/tiny-GGUF"}, "'gguf_file' is required")):
        r = s.tool(31, "generate_preset", args)
        check(error_code(r) == -32602 and want in r["error"]["message"], "generate_preset %r: %r" % (args, r))
    # pull_model is not offered
    r = s.tool(40, "pull_model", {"repo_id": "test/tiny-GGUF"})
    check(error_code(r) == -32602 and "--allow-pull" in r["error"]["message"], "pull without --allow-pull: %r" % r)
    check(s.call(41, "ping").get("result") == {}, "still alive")
    s.close()


def hub_pull():
    """--allow-pull lists pull_model (a changing tool); a pull of one file
    lands in models_dir ($MODELS_DIR) with the Hub's sha256; a repository
    of several models without `file`, and a missing one, are tool errors"""
    import hashlib
    s = Server("--allow-pull")
    s.init()
    tools = {t["name"]: t for t in s.call(1, "tools/list")["result"]["tools"]}
    check("pull_model" in tools, "pull_model listed with --allow-pull")
    a = tools["pull_model"]["annotations"]
    check(a["readOnlyHint"] is False and a["destructiveHint"] is False and a["openWorldHint"] is True,
          "pull_model's annotations: %r" % a)
    check("several models needs `file`" in tools["pull_model"]["description"],
          "pull_model says one model: %r" % tools["pull_model"]["description"])
    msg = tool_error(s.tool(2, "pull_model", {"repo_id": "test/nope-GGUF"}, secs=120))
    check(msg and msg.startswith("pull_model: "), "pull of a missing repository: %r" % msg)
    r = s.tool(3, "pull_model", {"repo_id": "test/tiny-GGUF", "file": "../../etc/x.gguf"})
    check(error_code(r) == -32602 and "'..'" in r["error"]["message"], "a file outside the repository: %r" % r)
    msg = tool_error(s.tool(4, "pull_model", {"repo_id": "test/tiny-GGUF"}, secs=120))
    check(msg and "holds 2 models" in msg and "aidreams260K-f32.gguf" in msg, "a repository of two: %r" % msg)
    v = structured(s.tool(5, "pull_model", {"repo_id": "test/tiny-GGUF", "file": "aidreams260K-f32.gguf"},
                          secs=120), "pull aidreams")
    want = os.path.join(os.environ["MODELS_DIR"], "test/tiny-GGUF/aidreams260K-f32.gguf")
    check(len(v["files"]) == 1 and v["files"][0]["path"] == want and v["files"][0]["verified"] is True,
          "pulled one verified file to %s: %r" % (want, v))
    with open(want, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    with open(os.environ["FIXTURE_SHA_OF"], "rb") as f:
        real = hashlib.sha256(f.read()).hexdigest()
    check(got == real == v["files"][0]["sha256"], "sha256 %s, the fixture's %s, said %s"
          % (got, real, v["files"][0]["sha256"]))
    s.close()


if __name__ == "__main__":
    globals()[sys.argv[1]]()
