#!/usr/bin/env bash
# Reload (gpumod reload and SIGHUP): a broken configuration is refused
# whole, every error listed, the running one kept; a good one is swapped
# whole and the running services whose configuration changed are listed
# (they keep running as started).
. "$(dirname "$0")/lib.sh"

MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
C=$T/config
P1=$(free_port); P2=$(free_port); P3=$(free_port)
mkdir -p "$C/presets"
cat >"$C/gpumod.yaml" <<EOF
drivers:
  llamacpp: {binary: $FAKELLM_BIN}
supervisor:
  stop_timeout: 2s
router:
  enabled: false
EOF
preset() { # ID PORT TPS
    printf 'id: %s\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\nenv:\n  FAKELLM_LOAD_MS: "50"\n  FAKELLM_TPS: "%s"\nmemory: {gpu_mb: 0, host_mb: 16}\n' \
        "$1" "$2" "$MODEL" "$3" >"$C/presets/$1.yaml"
}
preset chat "$P1" 100
preset emb "$P2" 100

t_spawn daemon "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod status || t_fail "the daemon never answered"
t_run 0 gpumod service start chat
CHAT_PID=$(gpumod service show chat --json | jq -r .pid)

t_begin "gpumod reload of a broken configuration: exit 2, every error listed, old one kept"
printf 'id: bad\ndriver: llamacpp\nport: 99999\nmodel_path: %s\n' "$MODEL" >"$C/presets/bad.yaml"
printf 'id: worse\ndriver: nosuchdriver\nport: %s\n' "$P3" >"$C/presets/worse.yaml"
t_run 2 gpumod reload
t_has err "the running configuration is kept"
t_has err "bad.yaml:3:7"
t_has err "worse.yaml"
t_run 2 gpumod reload --json
t_jq out .error.code config_invalid
t_jq out '.error.detail.errors | length >= 2' true
t_jq out '[.error.detail.errors[].file | select(endswith("bad.yaml"))] | length >= 1' true
t_run 0 gpumod service list --json
t_jq out '[.[].id] | sort | join(",")' chat,emb
t_jq out '[.[] | select(.id == "chat") | .state] | join("")' ready
t_run 0 gpumod events --json
t_jq out '[.events[] | select(.kind == "reload")] | last | .reason | test("refused")' true
t_end

t_begin "SIGHUP with a broken configuration: the daemon keeps running with the old one"
kill -HUP "$DPID"
t_wait 5 grep -q "reload (signal) refused" "$T/daemon.log" || t_fail "no refusal in the daemon's log"
alive "$DPID" || t_fail "the daemon died on SIGHUP"
t_run 0 gpumod service list --json
t_jq out '[.[].id] | sort | join(",")' chat,emb
alive "$CHAT_PID" || t_fail "chat was stopped by a refused reload"
t_end

t_begin "a good reload: swapped whole, the changed running service listed, still running as started"
rm -f "$C/presets/bad.yaml" "$C/presets/worse.yaml"
preset chat "$P1" 250   # chat's environment changes: its config hash changes
preset emb "$P2" 300    # emb changes too, but it is not running: not listed
preset extra "$P3" 100
t_run 0 gpumod reload
t_has out "reloaded $C: 3 presets, 0 modes"
t_has out "changed while running (they keep their old configuration until restarted): chat"
t_run 0 gpumod service list --json
t_jq out '[.[].id] | sort | join(",")' chat,emb,extra
t_run 0 gpumod service show chat --json
t_jq out .config_changed true
t_jq out .pid "$CHAT_PID"
t_jq out .state ready
t_run 0 gpumod reload --json
t_jq out '.changed | join(",")' chat
t_jq out .ok true
t_run 0 gpumod events --json
t_jq out '[.events[] | select(.kind == "reload")] | last | .data.changed | join(",")' chat
t_end

t_begin "restart applies the new configuration; SIGHUP reloads too"
t_run 0 gpumod service restart chat
t_match out "^ready: chat"
t_run 0 gpumod service show chat --json
t_jq out .config_changed false
kill -HUP "$DPID"
t_wait 5 grep -q "configuration reloaded (signal)" "$T/daemon.log" || t_fail "SIGHUP did not reload"
t_end

t_begin "SIGTERM after reloads: exit 0, no child left"
NEW_PID=$(gpumod service show chat --json | jq -r .pid)
kill -TERM "$DPID"
reap "$DPID" 15; t_eq "$rc" 0 "daemon exit"
grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$T"/*.log && t_fail "a sanitizer report: $(grep -hE -A8 'Sanitizer|runtime error:' "$T"/*.log | head -20)"
alive "$NEW_PID" && t_fail "chat ($NEW_PID) outlived the daemon"
alive "$CHAT_PID" && t_fail "the first chat ($CHAT_PID) is still running"
t_end

t_done
