#!/usr/bin/env bash
# t102-rmodels-fixes: router-mode model ops (issue 21 review): an admitted
# load holds a reservation (GET /status reserved_bytes) until GET /models
# says loaded; a sleep is refused while a load runs; a load of an id with
# '/' (llama-server's cache/presets) is refused naming the cause; an unload
# the engine answers 400 "model is not running" (unloaded between gpumod's
# GET and its POST: fakellm FAKELLM_UNLOAD_RACE) is done, for `service
# unload` and for a router-tier sleep (slept, not stopped); a request
# through the router for a listed model whose GGUF is gone is answered
# (the load's error comes on a later loop turn), and the daemon lives on.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"
. "$(dirname "$0")/router-lib.sh"

mkdir -p "$T/proc"
cp -r "$FIXTURES/proc/healthy/." "$T/proc/"
export GPUMOD_PROC_ROOT=$T/proc
mkdir -p "$T/models"
for m in alpha beta gamma; do ln -s "$MODEL" "$T/models/$m.gguf"; done
rsettings "" "memory: {watchdog: {mem_available_floor_mb: 0}}"
printf 'id: rm\ndriver: llamacpp\nport: %s\ncontext_size: 128\nsleep_mode: router\nenv: {FAKELLM_LOAD_MS: "3000", FAKELLM_UNLOAD_RACE: "1", FAKELLM_CACHE_MODELS: "org/name:Q4"}\nunit_vars: {models_dir: %s, models_max: 2}\n' \
    "$(free_port)" "$T/models" >"$C/presets/rm.yaml"
mstate() { gpumod service show rm --json 2>/dev/null | jq -r --arg m "$1" '.models[] | select(.id == $m) | .state'; }
mstate_is() { [ "$(mstate "$1")" = "$2" ]; }
reserved() { gpumod status --json | jq '.. | objects | select(has("reserved_bytes")) | .reserved_bytes' | head -1; }
reserved_pos() { [ "$(reserved)" -gt 0 ] 2>/dev/null; }
ask() { rcurl "$T/o" "$RURL/v1/chat/completions" -d "$(chat "$1")"; }

daemon_start
t_run 0 gpumod service start rm
t_wait 10 mstate_is alpha unloaded || t_fail "alpha never listed"

t_begin "an admitted load holds a reservation until the engine says loaded; a sleep meanwhile is refused"
t_eq "$(reserved)" 0 "nothing reserved before"
gpumod service load rm alpha >"$T/load.out" 2>&1 &
lp=$!
t_wait 10 reserved_pos || t_fail "no reservation while alpha loads: $(gpumod status --json | jq -c .)"
t_run 1 gpumod service sleep rm
t_has err "a model load or unload runs in its engine: it can sleep once that ends"
wait $lp || t_fail "the load failed: $(cat "$T/load.out")"
t_eq "$(mstate alpha)" loaded "alpha"
t_eq "$(reserved)" 0 "the reservation is released once loaded"
t_end

t_begin "a load of an id with '/' (llama-server's cache or presets) is refused naming the cause"
t_eq "$(mstate 'org/name:Q4')" unloaded "the engine lists it"
code=$(ask 'org/name:Q4')
[ "$code" = 400 ] || t_fail "chat to org/name:Q4: $code $(cat "$T/o")"
t_has "$T/o" "gpumod has no GGUF in models_dir to estimate its need from"
t_end

t_begin "an unload answered 400 'model is not running' is done: GET /models confirms"
t_run 0 gpumod service unload rm alpha
t_has out "unloaded: rm unloaded 'alpha'"
t_eq "$(mstate alpha)" unloaded "alpha"
t_end

t_begin "a router-tier sleep whose unload is answered 400 sleeps (not a stop)"
t_run 0 gpumod service load rm beta
t_run 0 gpumod service sleep rm
t_has out "'rm' is asleep (router"
t_eq "$(state_of rm)" sleeping "state"
t_run 0 gpumod service start rm
t_end

t_begin "a request for a listed model whose GGUF is gone is answered; the daemon lives on"
t_wait 10 mstate_is gamma unloaded || t_fail "gamma not listed"
rm "$T/models/gamma.gguf"
code=$(ask gamma)
[ "$code" -ge 400 ] || t_fail "chat to gamma: $code"
t_has "$T/o" "has no model 'gamma'"
t_run 0 gpumod status
t_end

t_begin "an unload of a model the engine does not list: 404 at once (not a wait for the load deadline)"
t_run 2 gpumod service unload rm typo --timeout 20
t_has err "router-mode service 'rm' lists no model 'typo'"
t_end

t_begin "a reload that removes the preset while a load runs: the load ends, the daemon lives on"
gpumod service load rm alpha >"$T/rl.out" 2>&1 &
lp=$!
t_wait 10 reserved_pos || t_fail "the load never began"
mv "$C/presets/rm.yaml" "$T/rm.yaml.away"
t_run 0 gpumod reload
wait $lp
t_run 0 gpumod status
mv "$T/rm.yaml.away" "$C/presets/rm.yaml"
t_run 0 gpumod reload
t_end

gpumod service stop rm >/dev/null 2>&1
daemon_stop
t_done
