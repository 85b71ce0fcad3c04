#!/usr/bin/env python3
"""old-daemon.py SOCKET LOG - a control API without the event stream, for
tests/e2e/t66-cli-waits.sh: what an older daemon answers to a CLI that
waits on GET /events?follow=1 (the plain list, at once).  One service,
"x": POST .../start answers a pending ticket; the first five reads of
GET /services/x?daemon=1 say pending, the sixth ready.  Every request
is appended to LOG as "METHOD PATH"."""
import http.server
import json
import os
import socketserver
import sys

sock, log = sys.argv[1], sys.argv[2]
reads = {"n": 0}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b)
    def svc(self, outcome):
        return {"id": "x", "state": "ready" if outcome == "ready" else "starting", "pid": 42, "port": 9,
                "last_start": {"seq": 1, "origin": "cli", "outcome": outcome}}
    def do_POST(self):
        with open(log, "a") as f: f.write("POST %s\n" % self.path)
        self.reply(202, {"service": self.svc("pending"), "start_seq": 1,
                         "daemon": {"pid": 1, "started": "2026-01-01T00:00:00.000Z"}, "wait_ms": 20000})
    def do_GET(self):
        with open(log, "a") as f: f.write("GET %s\n" % self.path)
        if self.path.startswith("/events"):
            return self.reply(200, {"events": []})  # an older daemon: follow= is not known
        reads["n"] += 1
        self.reply(200, {"daemon": {"pid": 1, "started": "2026-01-01T00:00:00.000Z"},
                         "service": self.svc("ready" if reads["n"] > 5 else "pending")})
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    def get_request(self):
        r, _ = self.socket.accept()
        return r, ["local", 0]
if os.path.exists(sock): os.unlink(sock)
S(sock, H).serve_forever()
