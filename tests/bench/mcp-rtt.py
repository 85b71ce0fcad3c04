#!/usr/bin/env python3
"""mcp-rtt.py - round trips of one `gpumod mcp` over its stdio pipe, beside
the daemon's own GET /status on its unix socket, from the same driver in
the same run (make bench-mcp; scripts/bench-mcp starts the daemon).

    mcp-rtt.py N GPUMOD SOCKET

One gpumod mcp process is spawned and initialized once; then N rounds,
each one of every kind in a rotating order (so that neither sits always
after the other):

  ping                    {"method": "ping"} over the pipe: the floor
                          (two pipe hops, both sides' JSON-RPC framing)
  GET /status             a fresh connection to the daemon's socket, the
                          request, the answer read to its end (what the
                          server's control client does per call)
  tools/call gpu_status   over the pipe: the server's GET /status and the
                          tool result it builds from it

The timer covers the write and the read of the whole answer only (a
line, or the HTTP answer to its Content-Length); parsing the answer to
check it comes after the stop.  The driver's own cost inside the timer
(a write, a buffered readline, Python's loop) is measured apart on a
pipe to `cat` (the same write and readline, no server) and printed, so
that it can be subtracted by eye.
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Pipe:
    """a line-delimited JSON-RPC peer over a child's stdin/stdout"""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, bufsize=0)
        self.w = self.p.stdin.fileno()
        self.rf = os.fdopen(os.dup(self.p.stdout.fileno()), 'rb', buffering=65536)
        self.id = 0

    def timed(self, line):
        t0 = time.perf_counter_ns()
        os.write(self.w, line)
        ans = self.rf.readline()
        t1 = time.perf_counter_ns()
        if not ans:
            sys.exit("mcp-rtt: the server closed its stdout")
        return (t1 - t0) / 1e6, ans

    def request(self, method, params=None):
        self.id += 1
        msg = {"jsonrpc": "2.0", "id": self.id, "method": method}
        if params is not None:
            msg["params"] = params
        return (json.dumps(msg, separators=(",", ":")) + "\n").encode()

    def notify(self, method):
        os.write(self.w, (json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def check_rpc(ans, want_id, what):
    m = json.loads(ans)
    if m.get("id") != want_id or "result" not in m:
        sys.exit(f"mcp-rtt: {what}: unexpected answer {ans[:300]!r}")
    return m["result"]


def http_status(path):
    req = b"GET /status HTTP/1.1\r\nHost: gpumod\r\nConnection: close\r\n\r\n"
    t0 = time.perf_counter_ns()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(req)
    chunks = []
    while True:
        b = s.recv(65536)
        if not b:
            break
        chunks.append(b)
    s.close()
    t1 = time.perf_counter_ns()
    body = b"".join(chunks)
    return (t1 - t0) / 1e6, body


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: mcp-rtt.py N GPUMOD SOCKET")
    n = int(sys.argv[1])
    gpumod, sock = sys.argv[2], sys.argv[3]

    # the driver's own cost: the same write + readline against cat
    cat = Pipe(["cat"])
    line = cat.request("ping")
    own = [cat.timed(line)[0] for _ in range(n)]
    cat.close()

    mcp = Pipe([gpumod, "--socket", sock, "mcp"])
    init = mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "mcp-rtt", "version": "1"}})
    _, ans = mcp.timed(init)
    res = check_rpc(ans, mcp.id, "initialize")
    mcp.notify("notifications/initialized")
    server = f"{res.get('serverInfo', {}).get('name')} {res.get('serverInfo', {}).get('version')}, " \
             f"protocol {res.get('protocolVersion')}"

    def ping():
        line = mcp.request("ping")
        ms, ans = mcp.timed(line)
        return ms, ans, mcp.id

    def gpu_status():
        line = mcp.request("tools/call", {"name": "gpu_status", "arguments": {}})
        ms, ans = mcp.timed(line)
        return ms, ans, mcp.id

    times = {"ping": [], "status": [], "gpu": []}
    sizes = {}
    kinds = [("ping", ping), ("status", None), ("gpu", gpu_status)]
    warm = min(50, n)
    for i in range(warm + n):
        order = kinds[i % 3:] + kinds[:i % 3]
        for name, fn in order:
            if fn is None:
                ms, body = http_status(sock)
                if not body.startswith(b"HTTP/1.1 200"):
                    sys.exit(f"mcp-rtt: GET /status: {body[:200]!r}")
                sizes[name] = len(body)
            else:
                ms, ans, want = fn()
                r = check_rpc(ans, want, name)
                if name == "gpu" and (r.get("isError") or "structuredContent" not in r):
                    sys.exit(f"mcp-rtt: tools/call gpu_status: {ans[:300]!r}")
                sizes[name] = len(ans)
            if i >= warm:
                times[name].append(ms)
    mcp.close()

    print(f"server: {server}; driver: python3 {sys.version.split()[0]}, N={n} each, interleaved, "
          f"{warm} warm-up rounds not counted")
    print(f"{'':38} {'median':>8} {'p90':>8} {'p99':>8}   (ms)   answer bytes")
    rows = [("driver alone (write + readline on cat)", own, None),
            ("ping over the pipe", times["ping"], sizes.get("ping")),
            ("GET /status on the socket (baseline)", times["status"], sizes.get("status")),
            ("tools/call gpu_status over the pipe", times["gpu"], sizes.get("gpu"))]
    for label, xs, size in rows:
        print(f"{label:38} {statistics.median(xs):8.3f} {pct(xs, 0.9):8.3f} {pct(xs, 0.99):8.3f}"
              f"          {size if size is not None else '':>6}")
    med = statistics.median(times["gpu"])
    print(f"tools/call gpu_status - GET /status (medians): {med - statistics.median(times['status']):.3f} ms; "
          f"target: gpu_status under 5 ms: {'met' if med < 5 else 'NOT met'} ({med:.3f} ms)")
    return 0 if med < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
