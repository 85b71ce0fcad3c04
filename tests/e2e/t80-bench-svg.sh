#!/usr/bin/env bash
# bench's renderings read by real parsers: every SVG that test_svg and
# test_breport draw (the report fixtures of tests/fixtures/bench/report/
# and the edge cases: NaN gaps, no data, hostile text) parses with
# python3's XML parser, has an <svg> root in the SVG namespace and the
# axis labels and titles a reader needs; the CSV renderings read back
# with python3's csv module, every record as wide as its header.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/svg" "$T/report"

t_begin "the unit-test drivers write their renderings"
t_run 0 env GPUMOD_SVG_OUT="$T/svg" "$BUILD/tests/test_svg"
t_run 0 env GPUMOD_BREPORT_OUT="$T/report" "$BUILD/tests/test_breport"
n=$(ls "$T/svg"/*.svg "$T/report"/*.svg 2>/dev/null | wc -l)
[ "$n" -ge 10 ] || t_fail "expected at least 10 SVG files, found $n"
t_end

t_begin "every SVG is well-formed XML with an svg root"
for f in "$T/svg"/*.svg "$T/report"/*.svg; do
    t_run 0 python3 -c '
import sys, xml.etree.ElementTree as E
root = E.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
assert float(root.get("width")) > 0 and float(root.get("height")) > 0
' "$f"
done
t_end

# texts FILE: every <text> of an SVG, one a line
texts() {
    python3 -c '
import sys, xml.etree.ElementTree as E
for t in E.parse(sys.argv[1]).iter("{http://www.w3.org/2000/svg}text"):
    print("".join(t.itertext()))
' "$1"
}

t_begin "the load report has labelled axes, titles and legends"
texts "$T/report/load-concurrency.svg" >"$T/load.txt"
t_has "$T/load.txt" "qwen3-8b-q4: output token throughput"
t_has "$T/load.txt" "qwen3-8b-q4: time to first token"
t_has "$T/load.txt" "concurrency (requests in flight)"
t_has "$T/load.txt" "output throughput (tokens/s)"
t_has "$T/load.txt" "TTFT p99"
t_has "$T/load.txt" "1.2k"
t_end

t_begin "the switch and ctx-sweep charts name their phases and depths"
texts "$T/report/switch.svg" >"$T/switch.txt"
t_has "$T/switch.txt" "mode switch code <-> chat: time of each phase (2 per direction)"
t_has "$T/switch.txt" "verify freed"
t_has "$T/switch.txt" "time (ms)"
texts "$T/report/ctx-sweep.svg" >"$T/ctx.txt"
t_has "$T/ctx.txt" "failed at 32768"
t_end

t_begin "hostile text survives the round trip through escaping"
texts "$T/svg/svg-escape.svg" >"$T/esc.txt"
t_has "$T/esc.txt" "<script>alert('x')</script> & co"
t_has "$T/esc.txt" 'a<b>&"c"'
t_end

t_begin "the CSV renderings read back with every record as wide as the header"
for f in "$T/report"/*.csv; do
    t_run 0 python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert len(rows) >= 2, rows
assert all(len(r) == len(rows[0]) for r in rows), [len(r) for r in rows]
' "$f"
done
t_run 0 python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows[4]["reason"] == "server answered 500: \"context size exceeded\", n_ctx 32768", rows[4]
assert rows[4]["prefill_tps"] == "", rows[4]
' "$T/report/ctx-sweep.csv"
t_end

t_done
