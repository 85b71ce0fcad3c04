#!/usr/bin/env bash
# gpumod bench switch MODE_A MODE_B (docs/bench.md "bench switch"): no
# daemon -> exit 3; usage and an unknown mode -> exit 2; a warm-up to A,
# then B, A, B ... each direction N times, every phase's median with its
# bootstrap interval from the switch journal, the load at least what the
# fakes take to load, a first token through the router after each switch;
# --json and --svg; the result stored in the daemon; switches that fail
# are reported and two in a row end the run with exit 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

PR=$(free_port) PA=$(free_port) PB=$(free_port) PC=$(free_port)
cat >"$C/gpumod.yaml" <<EOF
drivers:
  llamacpp: {binary: fakellm}
supervisor: {stop_timeout: 2s, health_interval: 1s}
router: {listen: "127.0.0.1:$PR"}
EOF
preset sa "$PA" 'env: {FAKELLM_LOAD_MS: "200"}'
preset sb "$PB" 'env: {FAKELLM_LOAD_MS: "300"}'
preset sc "$PC" 'env: {FAKELLM_EXIT_DURING_LOAD: "1"}'
mkdir -p "$C/modes"
printf 'id: a\nservices: [sa]\n' >"$C/modes/a.yaml"
printf 'id: b\nservices: [sb]\n' >"$C/modes/b.yaml"
printf 'id: c\nservices: [sc]\n' >"$C/modes/c.yaml"

t_begin "no daemon: exit 3 with the socket named"
t_run 3 gpumod bench switch a b -n 1
t_has err "no daemon is running (socket $GPUMOD_SOCKET)"
t_end

daemon_start

t_begin "usage errors and an unknown mode exit 2"
t_run 2 gpumod bench switch a
t_has err "which two modes?"
t_has err "usage: gpumod bench switch MODE_A MODE_B"
t_run 2 gpumod bench switch a b -n 0
t_has err "-n must be an integer from 1 to 1000, not '0'"
t_run 2 gpumod bench switch a a
t_has err "the two modes are the same ('a')"
t_run 2 gpumod bench switch a b --bogus
t_has err "unknown option '--bogus'"
t_run 2 gpumod bench switch a nosuch -n 1
t_has err "no mode 'nosuch' is configured in the daemon (modes: a, b, c)"
t_end

t_begin "a b -n 3: a warm-up, 6 measured switches, each phase's median and interval"
t_run 0 gpumod bench switch a b -n 3 --json "$T/sw.json" --svg "$T/sw.svg"
J=$T/sw.json
t_jq "$J" .schema gpumod.bench/1
t_jq "$J" .kind switch
t_jq "$J" '.modes | join(",")' a,b
t_jq "$J" .n 3
t_jq "$J" .failed 0
t_jq "$J" .warmup.to a
t_jq "$J" .warmup.outcome committed
t_jq "$J" '.switches | length' 6
t_jq "$J" '[.switches[] | .from + ">" + .to] | join(",")' "a>b,b>a,a>b,b>a,a>b,b>a"
t_jq "$J" '[.switches[] | select(.outcome == "committed" and .measured)] | length' 6
t_jq "$J" '[.switches[].id] | unique | length' 6
for ph in stop_ms verify_freed_ms start_ms load_ms total_ms first_token_ms; do
    t_jq "$J" ".phases.$ph.n" 6
    case $ph in
    stop_ms | verify_freed_ms) t_jq "$J" ".phases.$ph.median >= 0" true ;; # ms-resolution: may be 0
    *) t_jq "$J" ".phases.$ph.median > 0" true ;;
    esac
    t_jq "$J" ".phases.$ph | .lo <= .median and .median <= .hi" true
    t_jq "$J" ".directions[0].phases.$ph.n" 3
    t_jq "$J" ".directions[1].phases.$ph.n" 3
done
t_jq "$J" '.phases.verify_healthy_ms.n' 6
t_jq "$J" '.phases.verify_healthy_ms.median >= 0' true
t_jq "$J" '.directions[0] | .from + ">" + .to' "a>b"
# the load is at least what fakellm is told to take: sb 300 ms, sa 200 ms
# (lower bounds only, and none under valgrind)
if [ -z "${GPUMOD_VALGRIND:-}" ]; then
    t_jq "$J" '.directions[0].phases.load_ms.values | min >= 300' true
    t_jq "$J" '.directions[1].phases.load_ms.values | min >= 200' true
fi
# a phase's time is within the switch's total
t_jq "$J" '[.switches[] | .phases.start_ms <= .total_ms and .phases.stop_ms <= .total_ms] | all' true
t_jq "$J" '.directions[0].phases.total_ms.values | length' 3
t_jq "$J" '.settings.first_token' true
t_jq "$J" '.settings.router' "http://127.0.0.1:$PR"
t_jq "$J" '.warnings | length' 0
t_has out "bench switch 'a' <-> 'b': 6 measured switches, 0 failed"
t_match out "^stop +[0-9.]+ \[[0-9.]+, [0-9.]+\] n=3 +[0-9.]+ \[[0-9.]+, [0-9.]+\] n=3"
t_match out "^first_token +[0-9.]+"
t_has err "warm-up: switching to 'a'"
t_match err "stored as result [0-9]+"
head -c 200 "$T/sw.svg" | grep -q '<svg' || t_fail "sw.svg is not an SVG"
t_run 0 gpumod mode current --json
t_jq out .mode a
t_end

t_begin "the result is stored in the daemon"
curl -s --unix-socket "$GPUMOD_SOCKET" 'http://gpumod/results' >"$T/res.json"
t_jq "$T/res.json" '.results[0].kind' switch
t_jq "$T/res.json" '.results[0].target' a,b
t_jq "$T/res.json" '.results[0].summary.phases.total_ms.n' 6
t_end

t_begin "already in A: no warm-up; --no-first-token; --json - prints the document only"
t_run 0 gpumod bench switch a b -n 1 --no-first-token --json - -q --no-store
t_jq out .warmup null
t_jq out '.switches | length' 2
t_jq out '.phases | has("first_token_ms")' false
t_jq out .settings.first_token false
t_lacks out "measured switches"
t_end

t_begin "switches that fail are reported; two in a row end the run with exit 1"
t_run 1 gpumod bench switch a c -n 2 --json "$T/fail.json" --no-store
t_jq "$T/fail.json" .failed 2
t_jq "$T/fail.json" '.switches | length' 2
t_jq "$T/fail.json" '[.switches[].outcome] | unique | join(",")' rolled_back
t_jq "$T/fail.json" '[.switches[] | .error | test("sc")] | all' true
t_jq "$T/fail.json" '[.switches[].measured] | any' false
t_jq "$T/fail.json" '.phases | length' 0
t_has err "two switches failed in a row; the run stops"
t_match out "switch [0-9]+ a -> c rolled_back: "
t_run 0 gpumod mode current --json
t_jq out .mode a
t_end

stop_all_clean
t_done
