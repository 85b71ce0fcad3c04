#!/usr/bin/env bash
# Slot save and restore (preset slot_save, llama.cpp): a stop of a ready
# service saves each slot (POST /slots/{i}?action=save) into
# <state_dir>/slots/<id>/<config hash>-<i>.bin before the engine is
# signalled; the next start of the same configuration restores them
# (fakellm logs "slot N restored from FILE"); supervisor.slots_max_mb
# bounds the directory, the oldest files deleted first; a save the engine
# refuses (500) or never answers (a stopped process: the 10 s deadline)
# is logged and the stop goes on.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

settings "supervisor: {stop_timeout: 2s, health_interval: 1s, slots_max_mb: 1}"
PS=$(free_port)
PF=$(free_port)
preset s "$PS" "slot_save: true" "unit_vars: {parallel: 2}"
preset f "$PF" "slot_save: true" 'env: {FAKELLM_SLOT_FAIL: "1"}'
preset plain "$(free_port)"
SD=$T/state/slots
daemon_start

engine_log() { gpumod service logs "$1" >"$T/elog" 2>&1; }
elog_has() { engine_log "$1"; grep -q -- "$2" "$T/elog"; }
dlog_has() { grep -q -- "$1" "$T/daemon.log"; }

t_begin "the slot directory is made (0700) before the engine starts; a stop saves every slot"
t_run 0 gpumod service start s
t_eq "$(stat -c %a "$SD/s" 2>/dev/null)" 700 "mode of $SD/s"
t_eq "$(stat -c %a "$SD" 2>/dev/null)" 700 "mode of $SD"
HASH=$(field s .config_hash)
curl -s --max-time 10 "http://127.0.0.1:$PS/completion" \
    -d '{"prompt":"a long shared system prompt worth keeping","n_predict":2}' >/dev/null
# two files nobody uses any more: 600 KiB each, older than anything saved
head -c 614400 /dev/zero >"$SD/s/oldest-0.bin"
head -c 614400 /dev/zero >"$SD/s/older-0.bin"
touch -d '2 days ago' "$SD/s/oldest-0.bin"
touch -d '1 day ago' "$SD/s/older-0.bin"
t_run 0 gpumod service stop s
t_eq "$(state_of s)" down "state after the stop"
[ -f "$SD/s/$HASH-0.bin" ] || t_fail "no $SD/s/$HASH-0.bin: $(ls "$SD/s")"
[ -f "$SD/s/$HASH-1.bin" ] || t_fail "no $SD/s/$HASH-1.bin: $(ls "$SD/s")"
t_has "$SD/s/$HASH-0.bin" "a long shared system prompt worth keeping"
t_wait 10 elog_has s "slot 0 saved to $HASH-0.bin" || t_fail "the engine never logged slot 0's save"
t_wait 10 elog_has s "slot 1 saved to $HASH-1.bin" || t_fail "the engine never logged slot 1's save"
t_wait 10 dlog_has "slots: 's': saved 2 of 2 slot(s)" || t_fail "the daemon never logged the save"
t_eq "$(count slots s)" 1 "one slots event"
t_jq "$T/ev" 'select(.kind == "slots") | [.data.action, .data.slots, .data.done, .data.failed] | join(",")' save,2,2,0
t_end

t_begin "slots_max_mb bounds the directory: the oldest file went, the younger one stays"
[ -e "$SD/s/oldest-0.bin" ] && t_fail "oldest-0.bin was not deleted"
[ -e "$SD/s/older-0.bin" ] || t_fail "older-0.bin was deleted (the bound needed only the oldest gone)"
t_wait 10 dlog_has "deleted 1 old slot file(s)" || t_fail "the daemon never logged the deletion"
t_end

t_begin "the next start of the same configuration restores the saved slots"
t_run 0 gpumod service start s
t_wait 10 elog_has s "slot 0 restored from $HASH-0.bin" || t_fail "slot 0 was not restored"
t_wait 10 elog_has s "slot 1 restored from $HASH-1.bin" || t_fail "slot 1 was not restored"
t_wait 10 dlog_has "slots: 's': restored 2 of 2 slot(s)" || t_fail "the daemon never logged the restore"
events s
t_jq "$T/ev" 'select(.kind == "slots" and .data.action == "restore") | .data.done' 2
t_run 0 gpumod service stop s
t_end

t_begin "a save the engine refuses (500) is logged; the stop goes on"
t_run 0 gpumod service start f
t_run 0 gpumod service stop f
t_eq "$(state_of f)" down "state after the stop"
t_wait 10 dlog_has "POST /slots/0?action=save .* answered 500" || t_fail "the refusal was not logged"
events f
t_jq "$T/ev" 'select(.kind == "slots") | [.data.done, .data.failed] | join(",")' 0,1
t_end

t_begin "a save that never answers (the engine stopped with SIGSTOP): the stop ends after the deadline"
t_run 0 gpumod service start s
pid=$(field s .pid)
kill -STOP "$pid"
t_run 0 gpumod service stop s
kill -CONT "$pid" 2>/dev/null
t_eq "$(state_of s)" down "state after the stop"
t_wait 10 dlog_has "POST /slots/0?action=save on 127.0.0.1:$PS: .*the other slots are not tried" ||
    t_fail "the missed deadline was not logged"
t_end

t_begin "a preset without slot_save: no directory, no slot calls"
t_run 0 gpumod service start plain
t_run 0 gpumod service stop plain
[ -e "$SD/plain" ] && t_fail "$SD/plain exists"
engine_log plain
t_lacks "$T/elog" "/slots/"
t_end

daemon_stop
t_done
