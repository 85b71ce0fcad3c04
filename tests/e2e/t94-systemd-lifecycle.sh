#!/usr/bin/env bash
# The daemon's lifecycle tests a second time, under the systemd runner
# (supervisor.runner: systemd) against the fake org.freedesktop.systemd1:
# each script runs as a sub-run with GPUMOD_TEST_RUNNER=systemd, which
# makes tests/e2e/sup-lib.sh start a private bus and the fake, add the
# runner to gpumod.yaml and install every service's unit.  The cases that
# cannot hold by design skip themselves with the reason; the table in
# docs/systemd.md ("Which daemon lifecycle tests hold under the systemd
# runner") says which and why.  One TAP line per script, with its counts;
# its log is $BUILD/test-logs/t94-SCRIPT.log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/systemd-lib.sh"

if ! systemd_usable; then
    t_skip "lifecycle tests under the systemd runner" "$SYSTEMD_WHY"
    t_done
    exit 0
fi

# the set (docs/systemd.md): t61-daemon-hardening and -peer do not depend
# on the runner; t61-daemon-cli, -preflight and -reload start the daemon
# themselves, without sup-lib.sh, and are not run here
SCRIPTS=(${T94_SCRIPTS:-t60-sup-admit t60-sup-lifecycle t60-sup-stop t60-sup-restart t60-sup-fixes
    t60-sup-footprint t60-sup-reconcile t62-watchdog t63-daemon-cycles t64-switch-basic
    t64-switch-failure t64-switch-memory t64-switch-review t64-switch-restart t64-switch-unified t67-canary
    t68-start-overrides})

logdir=$BUILD/test-logs
mkdir -p "$logdir"
for s in "${SCRIPTS[@]}"; do
    log=$logdir/t94-$s.log
    GPUMOD_TEST_RUNNER=systemd BUILD=$BUILD GPUMOD_SRC=$GPUMOD_SRC GPUMOD_TEST_TIME_SCALE=$GPUMOD_TEST_TIME_SCALE \
        timeout $((120 * GPUMOD_TEST_TIME_SCALE)) bash "$GPUMOD_SRC/tests/e2e/$s.sh" >"$log" 2>&1 </dev/null
    rc=$?
    p=$(grep -cE '^ok [0-9]+' "$log"); sk=$(grep -cE '^ok [0-9]+.*# SKIP' "$log"); f=$(grep -cE '^not ok [0-9]+' "$log")
    t_begin "$s under the systemd runner: $((p - sk)) passed, $sk skipped, $f failed"
    [ "$f" -eq 0 ] || t_fail "$(grep -E '^not ok' "$log" | tr '\n' ';')"
    [ "$rc" -eq 0 ] || t_fail "exited $rc (log $log)"
    [ "$p" -gt 0 ] || t_fail "ran no case (log $log)"
    [ "$_t_failed" -eq 0 ] || grep -E '^#' "$log" | head -30
    t_end
done
t_done
