#!/usr/bin/env python3
"""bench-agree-join.py - join one gpumod-bench run (--raw --json) with
fakellm's request log (FAKELLM_LOG_REQUESTS=1) on one clock
(CLOCK_MONOTONIC: the document's w_start_mono_ms + each request's
t_send_ms), request by request through the X-Request-Id bench sends.

  bench-agree-join.py [--agree] [--wait SECONDS] --prefix PREFIX FAKELLM_LOG BENCH_JSON CONCURRENCY GEN

PREFIX: the run's X-Request-Id prefix, gpumod-bench-PID-0-0- for the
first point's first iteration of the gpumod-bench process PID (the pid
makes it the run's own: earlier runs' lines in the same log are skipped).

Always checked (exit 1 when broken; what tests/e2e/t80-bench-agree.sh
asserts in make test, whatever the machine's load):
  - fakellm logged exactly this run's measured requests (the ids of the
    JSON's requests; warmups end in -wK) and each answer has GEN tokens;
  - causality, exactly: bench's t_send <= fakellm's receive, and
    fakellm's first-token and last-token writes <= bench's t_first and
    t_last (fakellm stamps those writes before making them).
fakellm logs a request only once its answer is out, so the log is read
again until every one of this run's ids is in it, for up to --wait
seconds (default 5).

--agree also judges the timing agreement (scripts/bench-agree, make
bench-agree: it depends on the machine's load, so it is never asserted
in make test): TTFT (bench t_first - t_send against fakellm first_send -
recv) and TPOT ((t_last - t_first)/(n-1) against fakellm's (last_send -
first_send)/(n-1)) within max(2 %, 2 ms) for at least 90 % of the
requests and at the median, and the output throughput within 2 % of
those requests' tokens over fakellm's span.  Without --agree the same
figures are printed, not judged.
"""
import json
import re
import sys
import time

args = sys.argv[1:]
agree = False
wait_s = 5.0
prefix = None
while args and args[0].startswith("--"):
    if args[0] == "--agree":
        agree = True
        args = args[1:]
    elif args[0] == "--prefix":
        prefix = args[1]
        args = args[2:]
    elif args[0] == "--wait":
        wait_s = float(args[1])
        args = args[2:]
    else:
        sys.exit("bench-agree-join.py: unknown option %s" % args[0])
if len(args) != 4 or not prefix:
    sys.exit(__doc__.split("\n\n")[1])
log, doc_path, conc, gen = args[0], args[1], int(args[2]), int(args[3])

doc = json.load(open(doc_path))
it = doc["points"][0]["iterations"][0]
reqs, w0 = it["requests"], it["w_start_mono_ms"]
fails = []

# this run's ids: gpumod-bench-PID-POINT-ITERATION-INDEX (PID: unique to
# the run); the prefix selects this run's lines, warmups (-wK) aside
pat = re.compile(r"log_request: id=\d+ POST /v1/chat/completions 200 recv_mono_ms=([0-9.]+) .*"
                 r"first_send_mono_ms=([0-9.]+) .*done_mono_ms=([0-9.]+) last_send_mono_ms=([0-9.]+) rid=(\S+)")


def read_log():
    fk = {}
    with open(log, "rb") as fh:
        for ln in fh.read().decode("utf-8", "replace").splitlines():
            m = pat.search(ln)
            if m and m.group(5).startswith(prefix) and not re.search(r"-w\d+$", m.group(5)):
                fk[m.group(5)] = tuple(float(x) for x in m.groups()[:4])
    return fk


deadline = time.monotonic() + wait_s
while True:
    measured = read_log()
    if len(measured) >= len(reqs) or time.monotonic() >= deadline:
        break
    time.sleep(0.05)
if len(measured) != len(reqs):
    fails.append("fakellm logged %d measured requests of this run (%s...), bench has %d" %
                 (len(measured), prefix, len(reqs)))
byidx = {}
for k in measured:
    try:
        byidx[int(k.rsplit("-", 1)[1])] = measured[k]
    except ValueError:
        fails.append("X-Request-Id %r does not end in -INDEX" % k)


def close(a, b):  # max(2 %, 2 ms) of fakellm's figure
    return abs(a - b) <= max(0.02 * abs(b), 2.0)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


EPS = 0.01  # ms: the JSON's rounding
bt, ft, bp, fp, up, down, off_t, off_p = [], [], [], [], [], [], [], []
tokens, recv0, done1, broken = 0, None, None, 0
for i, r in enumerate(reqs):
    f = byidx.get(i)
    if f is None:
        fails.append("request %d: no fakellm line with X-Request-Id %s%d" % (i, prefix, i))
        continue
    recv, first, done, last = f
    n = r["n_out"]
    if n != gen:
        fails.append("request %d: n_out %s, expected %d" % (i, n, gen))
    send = w0 + r["t_send_ms"]
    t_first, t_last = send + r["t_first_ms"], send + r["t_last_ms"]
    # one clock: the client sends before the server receives, and sees each
    # token after the server wrote it (fakellm stamps those writes before
    # making them; its done_mono_ms comes after the last one, so the client
    # may see the end first)
    for what, a, b in (("t_send <= fakellm recv", send, recv), ("fakellm first_send <= t_first", first, t_first),
                       ("fakellm last_send <= t_last", last, t_last)):
        if a > b + EPS:
            broken += 1
            fails.append("request %d: %s broken: %.3f > %.3f" % (i, what, a, b))
    up.append(recv - send)
    down.append(t_first - first)
    b_ttft, f_ttft = r["t_first_ms"], first - recv
    b_tpot, f_tpot = (r["t_last_ms"] - r["t_first_ms"]) / max(n - 1, 1), (last - first) / max(n - 1, 1)
    bt.append(b_ttft)
    ft.append(f_ttft)
    bp.append(b_tpot)
    fp.append(f_tpot)
    if not close(b_ttft, f_ttft):
        off_t.append("request %d: TTFT bench %.3f ms, fakellm %.3f ms" % (i, b_ttft, f_ttft))
    if not close(b_tpot, f_tpot):
        off_p.append("request %d: TPOT bench %.3f ms, fakellm %.3f ms" % (i, b_tpot, f_tpot))
    tokens += n
    recv0 = recv if recv0 is None else min(recv0, recv)
    done1 = done if done1 is None else max(done1, done)

judged = []  # the timing agreement: failures with --agree, figures without
# per request: at least 90 % within the bound (a machine shared with other
# work preempts a process now and then for a few ms)
for name, off in (("TTFT", off_t), ("TPOT", off_p)):
    if len(off) > 0.1 * len(reqs):
        judged.append("%s: %d of %d requests outside max(2 %%, 2 ms)" % (name, len(off), len(reqs)))
        judged.extend(off[:5])
if bt:
    m = it["metrics"]
    for name, got, want in (("median TTFT", m["ttft_ms"]["median"], median(ft)),
                            ("median TPOT", m["tpot_ms"]["median"], median(fp))):
        if not close(got, want):
            judged.append("%s: bench %.3f ms, fakellm %.3f ms" % (name, got, want))
    f_tput = tokens / ((done1 - recv0) / 1000.0) if done1 > recv0 else 0.0
    b_tput = it["out_tput"]
    if abs(b_tput - f_tput) > 0.02 * f_tput:
        judged.append("output throughput: bench %.2f tok/s, fakellm %.2f tok/s (%d tokens over %.1f ms)" %
                      (b_tput, f_tput, tokens, done1 - recv0))
    print("# c=%d: %d requests joined, %d causality breaks; TTFT median bench %.3f / fakellm %.3f ms "
          "(%d outside the bound); TPOT median bench %.3f / fakellm %.3f ms (%d outside); out_tput bench %.2f / "
          "fakellm %.2f tok/s; send->recv median %.3f max %.3f ms, first write->t_first median %.3f max %.3f ms"
          % (conc, len(bt), broken, m["ttft_ms"]["median"], median(ft), len(off_t),
             m["tpot_ms"]["median"], median(fp), len(off_p), b_tput, f_tput, median(up), max(up), median(down),
             max(down)))
if agree:
    fails.extend(judged)
    print("# c=%d: timing %s" % (conc, "agrees" if not judged else "disagrees"))
else:
    for j in judged[:3]:
        print("# not judged here (make bench-agree): " + j)
for f in fails[:15]:
    print("# " + f)
sys.exit(1 if fails else 0)
