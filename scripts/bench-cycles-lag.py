#!/usr/bin/env python3
"""bench-cycles-lag.py CYCLES EVENTS TITLE - where a start's time goes, beside
the engine's own load time (called by scripts/bench-cycles).

CYCLES: one line a cycle, "c t0_ns t1_ns e0_ms e1_ms": the wall clock
before `gpumod service start` and after it returned, and fakellm's own
stamps (FAKELLM_LOG_TIMES) of its process start and of "model loaded"
(or "load done" where FAKELLM_READY_LINE=0 leaves that line out).
EVENTS: `gpumod events --service cyc --kind state,footprint --json`:
the state events, whose `ts` (1 ms resolution) of each transition to "ready" is the
moment the daemon saw the engine ready; the k-th is cycle k's.

Prints medians (p10, p90) in ms of: the engine's own load (e1 - e0), the
CLI's start to ready (t1 - t0), their difference (what gpumod adds), and
its parts: spawn (t0 to e0: CLI, request, gate, spawn, exec), readiness
(e1 to the ready event: what the daemon takes to notice) and the CLI's
return (the ready event to t1: the footprint, the answer, the exit).
Exit 1 when the inputs do not join (a cycle without stamps, fewer ready
events than cycles); never on a figure."""
import datetime
import json
import sys


def ms_of(ts):
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return d.timestamp() * 1000.0


def stats(xs):
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    return "median %6.2f ms (p10 %6.2f, p90 %6.2f)" % (med, xs[int(n * 0.1)], xs[max(0, int(n * 0.9) - 1)])


def main():
    cycles = []
    with open(sys.argv[1]) as f:
        for line in f:
            c, t0, t1, e0, e1 = line.split()
            if e0 == "-" or e1 == "-":
                print("bench-cycles: cycle %s: fakellm's log has no real_ms stamps" % c, file=sys.stderr)
                return 1
            cycles.append((int(t0) / 1e6, int(t1) / 1e6, float(e0), float(e1)))
    try:
        with open(sys.argv[2]) as f:
            events = json.load(f)["events"]
    except (OSError, ValueError, KeyError) as e:
        print("bench-cycles: cannot read the state events: %s" % e, file=sys.stderr)
        return 1
    ready, measured = [], []
    for e in events:
        if e.get("kind") == "state" and e.get("to") == "ready" and e.get("from") == "starting":
            ready.append(ms_of(e["ts"]))
        elif e.get("kind") == "footprint" and len(measured) < len(ready):
            measured.append(ms_of(e["ts"]))
    ready, measured = ready[-len(cycles):], measured[-len(cycles):]
    if len(ready) != len(cycles) or len(measured) != len(cycles):
        print("bench-cycles: %d cycles but %d starting->ready and %d footprint events" %
              (len(cycles), len(ready), len(measured)), file=sys.stderr)
        return 1
    engine = [e1 - e0 for (_, _, e0, e1) in cycles]
    cli = [t1 - t0 for (t0, t1, _, _) in cycles]
    print()
    print("%s" % sys.argv[3])
    print("where a start's time goes (%d cycles; wall clock, ms):" % len(cycles))
    print("  engine's own load (its start to ready)           %s" % stats(engine))
    print("  CLI, start to ready                              %s" % stats(cli))
    print("  gpumod's share: the two above subtracted         %s" % stats([a - b for a, b in zip(cli, engine)]))
    print("    spawn: CLI start to the engine's start         %s" % stats([e0 - t0 for (t0, _, e0, _) in cycles]))
    lag = [r - e1 for r, (_, _, _, e1) in zip(ready, cycles)]
    print("    readiness: the engine ready to the ready event %s" % stats(lag))
    if len(lag) > 1:
        print("      first start %.2f ms; the others %s" % (lag[0], stats(lag[1:])))
    print("    CLI return: the ready event to the CLI's exit  %s" % stats([t1 - r for r, (_, t1, _, _) in
                                                                           zip(ready, cycles)]))
    print("      of which the footprint (ready to measured)   %s" % stats([m - r for r, m in zip(ready, measured)]))
    print("      and the answer (measured to the CLI's exit)  %s" % stats([t1 - m for m, (_, t1, _, _) in
                                                                           zip(measured, cycles)]))
    print("  (event times have 1 ms resolution; the CLI's times are bash's EPOCHREALTIME around it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
