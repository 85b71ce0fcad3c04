#!/usr/bin/env python3
# tls-front.py CERT KEY BACKEND_PORT: a test-only TLS terminator in front
# of a plain-http backend on 127.0.0.1 (fakellm), so that the router's
# HTTPS upstream meets an OpenAI-shaped server.  Listens on 127.0.0.1 at a
# port the kernel picks and prints "ACCEPT 127.0.0.1:PORT" once it does
# (like `openssl s_server`); each connection gets its own thread that
# copies bytes both ways until either side closes.  A failed handshake
# (the client refused our certificate) is printed and the next connection
# served.  SIGTERM exits 0.  Test use only: tests/e2e/t73-router-remote.sh.
import os, select, signal, socket, ssl, sys, threading

signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
cert, key, bport = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)


def serve(raw):
    back = tls = None
    try:
        raw.settimeout(30)
        tls = ctx.wrap_socket(raw, server_side=True)
        back = socket.create_connection(("127.0.0.1", bport), timeout=30)
        while True:
            ready = [tls] if tls.pending() else select.select([tls, back], [], [], 30)[0]
            if not ready:
                return
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                (back if s is tls else tls).sendall(data)
    except (OSError, ssl.SSLError) as e:
        print("connection: %s" % e, flush=True)
    finally:
        for s in (tls, raw, back):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(64)
print("ACCEPT 127.0.0.1:%d" % lsock.getsockname()[1], flush=True)
while True:
    c, _ = lsock.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
