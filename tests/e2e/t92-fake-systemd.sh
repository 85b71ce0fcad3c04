#!/usr/bin/env bash
# The fake systemd (tests/fakes/fake-systemd.py) against systemd's own
# client, busctl, and gdbus monitor, on a private session bus: it must
# behave as org.freedesktop.systemd1(5) says before gpumod's systemd runner
# is tested against it.  Load and not-found; start -> active with MainPID,
# argv and environment unquoted as systemd does; KillUnit; stop kills the
# whole group; Restart=on-failure counted in NRestarts; the start limit ->
# failed start-limit-hit; RestartPreventExitStatus; a failing ExecStartPre
# fails the job; JobNew/JobRemoved and PropertiesChanged reach a
# subscriber; Reload picks up a changed unit; SIGTERM ends it cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/systemd-lib.sh"

if ! systemd_usable; then
    t_skip "the fake systemd" "$SYSTEMD_WHY"
    t_done
    exit
fi
command -v busctl >/dev/null || { t_skip "the fake systemd" "no busctl (Debian systemd)"; t_done; exit; }
command -v gdbus >/dev/null || { t_skip "the fake systemd" "no gdbus (Debian libglib2.0-bin)"; t_done; exit; }

U=$GPUMOD_UNIT_DIR
CALLS=$FAKE_SYSTEMD_LOG
mkdir -p "$T/bin"
# svc NAME MODE [N]: appends its pid to $T/NAME.runs, then
#   run       forks a worker (pid in $T/NAME.worker) and waits
#   exit N    exits N
#   once N    the first run exits N, every later run runs
#   stubborn  ignores SIGTERM (and so does its worker)
cat >"$T/bin/svc" <<'EOF'
#!/bin/sh
echo $$ >>"$SVC_DIR/$1.runs"
case "$2" in
run) sleep 300 & echo $! >"$SVC_DIR/$1.worker"; wait ;;
exit) exit "$3" ;;
once) [ "$(wc -l <"$SVC_DIR/$1.runs")" -gt 1 ] || exit "$3"; sleep 300 & wait ;;
stubborn) trap '' TERM; sleep 300 & echo $! >"$SVC_DIR/$1.worker"; while :; do wait; done ;;
esac
EOF
chmod +x "$T/bin/svc"
export SVC_DIR=$T

# unit NAME MODE [N] [EXTRA SERVICE LINES...]
unit() {
    local name=$1 mode=$2 n=${3:-}; shift 3 2>/dev/null || shift $#
    {
        printf '[Unit]\nStartLimitIntervalSec=60s\nStartLimitBurst=3\n\n[Service]\nType=exec\n'
        printf 'ExecStart=%s %s %s %s\n' "$T/bin/svc" "$name" "$mode" "$n"
        printf 'TimeoutStopSec=5s\nRestartSec=100ms\nKillMode=control-group\n'
        printf '%s\n' "$@"
    } >"$U/$name.service"
}
runs() { [ -f "$T/$1.runs" ] && wc -l <"$T/$1.runs" || echo 0; }
runs_at_least() { [ "$(runs "$1")" -ge "$2" ]; }
last_run() { tail -n 1 "$T/$1.runs"; }

bus_start || { t_done; exit 1; }
systemd_fake_start || { t_done; exit 1; }
sd_subscribe_hold
sd_monitor_start

t_begin "load: a unit file found is loaded; a missing one is not-found; GetUnit of an unloaded name fails"
unit a run "" 'Restart=no'
t_run 0 sd_call LoadUnit s a.service
t_has out 'o "/org/freedesktop/systemd1/unit/a_2eservice"'
t_eq "$(sd_prop a.service LoadState)" loaded "a.service LoadState"
t_eq "$(sd_prop a.service Id)" a.service "Id"
t_eq "$(sd_state a.service)" inactive/dead "a.service state"
t_run 0 sd_call LoadUnit s nope.service
t_eq "$(sd_prop nope.service LoadState)" not-found "nope.service LoadState"
t_run 1 sd_call StartUnit ss nope.service replace
t_has err "Unit nope.service not found."
t_run 1 sd_call GetUnit s never.service
t_has err "Unit never.service not loaded."
t_eq "$(unit_path gpumod-chat.service)" /org/freedesktop/systemd1/unit/gpumod_2dchat_2eservice "unit_path"
t_eq "$(unit_path 1x.service)" /org/freedesktop/systemd1/unit/_31x_2eservice "unit_path, leading digit"
t_end

t_begin "start: a job, JobRemoved done, active/running with MainPID = the process"
t_run 0 sd_call StartUnit ss a.service replace
job=$(sed -E 's/^o "(.*)"$/\1/' "$T/out")
t_match out '^o "/org/freedesktop/systemd1/job/[0-9]+"$'
sd_wait a.service active/running
t_wait 5 test -s "$T/a.worker" || t_fail "the service never wrote its worker's pid"
t_eq "$(sd_prop a.service MainPID)" "$(last_run a)" "MainPID"
t_eq "$(sd_prop a.service ExecMainPID)" "$(last_run a)" "ExecMainPID"
t_eq "$(sd_prop a.service Result)" success "Result"
t_match <(sd_prop a.service ControlGroup) '^/.+a\.service$'
t_wait 5 grep -q "JobRemoved (uint32 [0-9]*, objectpath '$job', 'a.service', 'done')" "$T/monitor.log" ||
    t_fail "no JobRemoved done for $job on the monitor"
t_has "$CALLS" "StartUnit a.service replace"
t_end

t_begin "ExecStart/Environment are unquoted as systemd does: quotes, escapes, %%, \$\$, \${VAR}, \$VAR split"
cat >"$U/argv.service" <<EOF
[Service]
Type=exec
Environment="GREETING=say \"hi\" 100%%" WORDS='two words'
Environment=EMPTY=
ExecStart=/bin/sh -c 'for a in "\$\$@"; do printf "[%%s]\\\\n" "\$\$a"; done; echo "G=\$\$GREETING"' sh "a b" \\\\back 'x"y' 50%% \$\$HOME \${GREETING} \$WORDS \$UNSET end
StandardOutput=append:$T/argv.out
Restart=no
EOF
t_run 0 sd_call StartUnit ss argv.service replace
t_wait 10 sd_is argv.service inactive/dead || t_fail "argv.service did not run to its end: $(sd_state argv.service)"
printf '%s\n' '[a b]' '[\back]' '[x"y]' '[50%]' '[$HOME]' '[say "hi" 100%]' '[two]' '[words]' '[end]' \
    'G=say "hi" 100%' >"$T/argv.want"
diff "$T/argv.want" "$T/argv.out" >"$T/argv.diff" || { t_fail "argv/env differ:"; sed 's/^/#   /' "$T/argv.diff"; }
t_eq "$(sd_prop argv.service ExecMainCode)" 1 "ExecMainCode (CLD_EXITED)"
t_eq "$(sd_prop argv.service ExecMainStatus)" 0 "ExecMainStatus"
t_end

t_begin "KillUnit: main with SIGKILL -> failed, Result signal, ExecMainCode 2, the worker killed too"
worker=$(cat "$T/a.worker"); main=$(last_run a)
t_run 0 sd_call KillUnit ssi a.service main 9
sd_wait a.service failed/failed
t_eq "$(sd_prop a.service Result)" signal "Result"
t_eq "$(sd_prop a.service ExecMainCode)" 2 "ExecMainCode (CLD_KILLED)"
t_eq "$(sd_prop a.service ExecMainStatus)" 9 "ExecMainStatus"
t_eq "$(sd_prop a.service MainPID)" 0 "MainPID after the exit"
t_wait 5 gone "$worker" || t_fail "the worker $worker outlived its main process (KillMode=control-group)"
t_run 1 sd_call KillUnit ssi a.service main 15
t_has err "No main process to kill"
t_run 1 sd_call KillUnit ssi a.service bogus 15
t_has err "Invalid who argument bogus"
t_has "$CALLS" "KillUnit a.service main 9"
t_end

t_begin "stop: SIGTERM to the whole group, inactive/dead, Result success; a stop never restarts"
unit b run "" 'Restart=always'
t_run 0 sd_call StartUnit ss b.service replace
sd_wait b.service active/running
t_wait 5 test -s "$T/b.worker" || t_fail "b never wrote its worker's pid"
main=$(last_run b); worker=$(cat "$T/b.worker")
t_run 0 sd_call StopUnit ss b.service replace
sd_wait b.service inactive/dead
t_wait 5 gone "$main" || t_fail "main $main still runs"
t_wait 5 gone "$worker" || t_fail "worker $worker still runs"
t_eq "$(sd_prop b.service Result)" success "Result"
sleep 0.5  # RestartSec is 100 ms: a restart would have happened by now
t_eq "$(runs b)" 1 "runs of b after the stop (Restart=always)"
t_eq "$(sd_state b.service)" inactive/dead "b after the stop"
t_end

t_begin "stop of a unit that ignores SIGTERM: SIGKILL after TimeoutStopSec, failed with Result timeout"
unit st stubborn "" 'TimeoutStopSec=1s' 'Restart=no'
t_run 0 sd_call StartUnit ss st.service replace
sd_wait st.service active/running
t_wait 5 test -s "$T/st.worker"
worker=$(cat "$T/st.worker")
t_run 0 sd_call StopUnit ss st.service replace
t_wait 5 sd_is st.service deactivating/stop-sigterm || t_fail "st.service never showed stop-sigterm"
sd_wait st.service failed/failed
t_eq "$(sd_prop st.service Result)" timeout "Result"
t_wait 5 gone "$worker" || t_fail "the stubborn worker $worker survived the SIGKILL"
t_end

t_begin "Restart=on-failure: a crash is restarted after RestartSec, NRestarts 1, a new MainPID"
unit c once 3 'Restart=on-failure'
t_run 0 sd_call StartUnit ss c.service replace
t_wait 10 runs_at_least c 2 || t_fail "c.service was not restarted ($(runs c) runs)"
sd_wait c.service active/running
t_eq "$(sd_prop c.service NRestarts)" 1 "NRestarts"
t_eq "$(sd_prop c.service MainPID)" "$(last_run c)" "MainPID is the second run"
t_eq "$(runs c)" 2 "runs"
t_end

t_begin "start limit: Burst 3 within 60 s -> failed, Result start-limit-hit; 3 runs; NRestarts 3"
unit d exit 1 'Restart=on-failure'
t_run 0 sd_call StartUnit ss d.service replace
djob=$(sed -E 's/^o "(.*)"$/\1/' "$T/out")
sd_wait d.service failed/failed
t_eq "$(sd_prop d.service Result)" start-limit-hit "Result"
t_eq "$(runs d)" 3 "runs (StartLimitBurst)"
# systemd counts the restart job it queues before the start limit refuses it
t_eq "$(sd_prop d.service NRestarts)" 3 "NRestarts"
# Type=exec: the start job is done once the exec succeeded; each auto-restart
# is a restart job of its own (JobNew), and the one the limit refuses fails
t_wait 5 grep -q "JobRemoved (uint32 [0-9]*, objectpath '$djob', 'd.service', 'done')" "$T/monitor.log" ||
    t_fail "the start job $djob did not end done"
t_wait 5 grep -q "JobRemoved (uint32 [0-9]*, objectpath '[^']*', 'd.service', 'failed')" "$T/monitor.log" ||
    t_fail "no job of d.service ended failed"
# gdbus monitor prints the signals as they come: wait for the count
d_jobs() { grep -c "JobNew (uint32 [0-9]*, objectpath '[^']*', 'd.service')" "$T/monitor.log"; }
t_wait 5 eval '[ "$(d_jobs)" = 4 ]' || t_fail "jobs for d (1 start, 3 restarts): $(d_jobs), not 4"
t_run 0 sd_call StartUnit ss d.service replace
djob=$(sed -E 's/^o "(.*)"$/\1/' "$T/out")
t_wait 5 grep -q "objectpath '$djob', 'd.service', 'failed'" "$T/monitor.log" ||
    t_fail "a start while the limit holds did not fail at once"
t_eq "$(runs d)" 3 "runs after a refused start"
t_run 0 sd_call ResetFailedUnit s d.service
t_eq "$(sd_state d.service)" inactive/dead "after ResetFailedUnit"
t_eq "$(sd_prop d.service NRestarts)" 0 "NRestarts after ResetFailedUnit"
t_run 0 sd_call StartUnit ss d.service replace
t_wait 10 runs_at_least d 4 || t_fail "ResetFailedUnit did not clear the start limit"
t_run 0 sd_call StopUnit ss d.service replace
t_end

t_begin "RestartPreventExitStatus=2: exit 2 is not restarted; failed, Result exit-code, status 2"
unit e exit 2 'Restart=on-failure' 'RestartPreventExitStatus=2'
t_run 0 sd_call StartUnit ss e.service replace
sd_wait e.service failed/failed
t_eq "$(sd_prop e.service Result)" exit-code "Result"
t_eq "$(sd_prop e.service ExecMainStatus)" 2 "ExecMainStatus"
sleep 0.5
t_eq "$(runs e)" 1 "runs"
t_eq "$(sd_prop e.service NRestarts)" 0 "NRestarts"
t_end

t_begin "ExecStartPre failing: the start job ends failed, the main process never runs"
unit f run "" 'Restart=no' 'ExecStartPre=/bin/sh -c "exit 1"'
t_run 0 sd_call StartUnit ss f.service replace
fjob=$(sed -E 's/^o "(.*)"$/\1/' "$T/out")
sd_wait f.service failed/failed
t_eq "$(sd_prop f.service Result)" exit-code "Result"
t_eq "$(sd_prop f.service ExecMainPID)" 0 "ExecMainPID"
t_eq "$(runs f)" 0 "runs of ExecStart"
t_wait 5 grep -q "objectpath '$fjob', 'f.service', 'failed'" "$T/monitor.log" ||
    t_fail "no JobRemoved failed for $fjob"
t_end

t_begin "systemd's rule: RestartPreventExitStatus looks at the main process only, not at ExecStartPre"
unit g run "" 'Restart=on-failure' 'RestartPreventExitStatus=2' "ExecStartPre=/bin/sh -c 'echo x >>$T/g.pre; exit 2'"
t_run 0 sd_call StartUnit ss g.service replace
sd_wait g.service failed/failed
t_eq "$(sd_prop g.service Result)" start-limit-hit "Result"
t_eq "$(wc -l <"$T/g.pre")" 3 "ExecStartPre runs"
t_end

t_begin "PropertiesChanged on the unit reach gdbus monitor: activating, active, auto-restart, failed, NRestarts"
# (g's ExecStartPre fails at once: its start-pre step may be merged into
# the next change in one signal, so only its final state is asserted)
for s in "g_2eservice:.*'ActiveState': <'failed'>" \
    "c_2eservice:.*'ActiveState': <'active'>, 'SubState': <'running'>" \
    "c_2eservice:.*'ActiveState': <'activating'>, 'SubState': <'auto-restart'>" \
    "d_2eservice:.*'ActiveState': <'failed'>, 'SubState': <'failed'>" "c_2eservice:.*'NRestarts': <uint32 1>"; do
    # the fake emits from a GLib idle, gdbus monitor prints it later: wait
    t_wait 5 grep -q "^/org/freedesktop/systemd1/unit/$s" "$T/monitor.log" || t_fail "no PropertiesChanged with $s"
done
t_wait 5 grep -qE "unit/c_2eservice: org.freedesktop.DBus.Properties.PropertiesChanged \('org.freedesktop.systemd1.Service', \{[^}]*'MainPID': <uint32 [1-9]" "$T/monitor.log" ||
    t_fail "no PropertiesChanged with c's MainPID"
t_wait 5 grep -qE "JobNew \(uint32 [0-9]+, objectpath '/org/freedesktop/systemd1/job/[0-9]+', 'c.service'\)" "$T/monitor.log" ||
    t_fail "no JobNew for c.service"
t_end

t_begin "Reload: a changed unit file is picked up (NeedDaemonReload, then the new Environment)"
unit h run "" 'Restart=no' 'Environment=V=1'
t_run 0 sd_call LoadUnit s h.service
sleep 0.02
unit h run "" 'Restart=no' 'Environment=V=2'
touch -d '+2 seconds' "$U/h.service"
t_eq "$(sd_prop h.service NeedDaemonReload)" true "NeedDaemonReload before Reload"
printf '[Service]\nExecStart=/bin/true\n' >"$U/nope.service"
t_run 0 sd_call Reload
t_eq "$(sd_prop h.service NeedDaemonReload)" false "NeedDaemonReload after Reload"
t_eq "$(busctl --user get-property org.freedesktop.systemd1 "$(unit_path h.service)" org.freedesktop.systemd1.Service Environment)" \
    'as 1 "V=2"' "Environment after Reload"
t_eq "$(sd_prop nope.service LoadState)" loaded "a unit file added before Reload"
t_wait 5 grep -qE "Manager.Reloading \(true,\)" "$T/monitor.log" || t_fail "no Manager.Reloading (true,) signal"
t_end

t_begin "every method call is in FAKE_SYSTEMD_LOG"
for l in "Subscribe" "LoadUnit a.service" "StopUnit b.service replace" "ResetFailedUnit d.service" "Reload"; do
    grep -qx "$l" "$CALLS" || t_fail "no line '$l' in $CALLS"
done
t_end

t_begin "SIGTERM: the fake exits 0 and its units' processes are gone"
unit z run "" 'Restart=no'
t_run 0 sd_call StartUnit ss z.service replace
sd_wait z.service active/running
t_wait 5 test -s "$T/z.worker"
main=$(last_run z); worker=$(cat "$T/z.worker")
systemd_fake_stop
t_wait 5 gone "$main" || t_fail "main $main outlived the fake"
t_wait 5 gone "$worker" || t_fail "worker $worker outlived the fake"
t_end

t_done
