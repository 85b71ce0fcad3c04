#!/usr/bin/env bash
# A start with overrides (POST /services/ID/start {"overrides":
# {"context_size": N}}, `gpumod service start ID --ctx N`): the engine gets
# -c N, the gate judges the need at N tokens (a size that cannot fit is
# refused and nothing spawns), the run is known by its own config hash
# (config_changed), a restart of the policy keeps the override and a
# later plain start runs the preset again; a start that asks another size
# of a service loading or running is a conflict that says what runs; a
# body the daemon cannot take is a 400 that names what is wrong.  Every
# key family (llama.cpp's and vLLM's, `--set KEY=VALUE`) reaches the
# engine's argv and an env override (`--env NAME=VALUE`) its environment;
# the service echoes them.  With the fake NVML, POST /preflight {"service",
# "overrides"} judges a restart as if the service were stopped first: a
# variant that fits only once the service's own GPU memory is given back
# passes, one that cannot fit is refused with the gate's reason, and a
# real restart with it is refused by the gate without spawning.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sup-lib.sh"

SOCK=$GPUMOD_SOCKET
# the keys a llama.cpp preset's start may override, as the daemon lists them
LKEYS="context_size, threads, batch_size, ubatch_size, parallel, n_gpu_layers, n_cpu_moe, cache_type_k, cache_type_v, flash_attn, spec_draft_n_max, env"
VKEYS="context_size, max_num_seqs, gpu_memory_utilization, kv_cache_dtype, enforce_eager, dtype, env"
# post PATH BODY: the status in $T/status, the answer in $T/out
post() {
    curl -s -S --max-time $((10 * S)) --unix-socket "$SOCK" -o "$T/out" -w '%{http_code}' -X POST \
        -H 'Content-Type: application/json' --data-binary "$2" "http://gpumod$1" >"$T/status" 2>"$T/err"
}
status() { cat "$T/status"; }
# spawn_argv SERVICE N: the argv of the service's Nth spawn (1-based), one line
spawn_argv() { events "$1"; jq -rs --argjson n "$2" '[.[] | select(.kind == "spawn")][$n - 1].data.argv | join(" ")' "$T/ev"; }
# gate_ctx SERVICE: the n_ctx of the estimate its last gate event judged
gate_ctx() { events "$1"; jq -rs '[.[] | select(.kind == "gate")] | last | .data.need.estimate.n_ctx' "$T/ev"; }

# fakellm plays llama-server and vllm
printf 'drivers:\n  llamacpp: {binary: fakellm}\n  vllm: {binary: fakellm}\nrouter: {enabled: false}\n%s\n' \
    "supervisor: {stop_timeout: 2s, health_interval: 1s}" >"$C/gpumod.yaml"
P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port) P6=$(free_port)
preset chat "$P1"
preset slow "$P2" 'env: {FAKELLM_LOAD_MS: "1500"}'
preset crash "$P3" 'env: {FAKELLM_CRASH_AFTER: "1"}' \
    'restart: {max_restarts: 2, restart_window: 10m, backoff_initial: 200ms, backoff_max: 10s}'
printf 'id: cmd\ndriver: command\nport: %s\ncommand: [fakellm, -m, %s, --port, "{port}"]\nmemory: {host_mb: 16}\n' \
    "$P4" "$MODEL" >"$C/presets/cmd.yaml"
printf 'id: vl\ndriver: vllm\nport: %s\nmodel_id: org/vl-7b\ncontext_size: 128\nmemory: {host_mb: 16}\n' "$P5" \
    >"$C/presets/vl.yaml"
mkdir -p "$C/modes"
printf 'id: solo\nservices: [chat]\n' >"$C/modes/solo.yaml"
daemon_start

if runner_is systemd; then
    t_begin "the systemd runner starts the installed unit as written: a start with overrides is a 400, nothing runs"
    t_run 2 gpumod service start chat --ctx 512
    t_has err "cannot start 'chat' with overrides: the systemd runner starts its installed unit gpumod-chat.service as written (overrides need supervisor.runner: spawn)"
    t_eq "$(state_of chat)" down "state"
    t_eq "$(count spawn chat)" 0 "spawns"
    t_run 0 gpumod service start chat
    t_run 2 gpumod service restart chat --ctx 512
    t_eq "$(state_of chat)" ready "state after a refused restart (nothing stopped)"
    t_run 2 gpumod service restart chat --set threads=2 --env GPUMOD_T68=1
    t_has err "cannot start 'chat' with overrides: the systemd runner starts its installed unit gpumod-chat.service as written"
    t_eq "$(state_of chat)" ready "state after a refused restart with --set (nothing stopped)"
    t_run 0 gpumod service stop chat
    t_end
    sd_skip "the rest of t68" "a unit runs its installed command, not a start's overrides"
    t_begin "the daemon stops cleanly"
    daemon_stop
    t_end
    t_done
    exit
fi

t_begin "start --ctx 512: the engine gets -c 512, the gate judged 512 tokens, the run has its own hash"
t_run 0 gpumod service start chat --ctx 512
t_eq "$(state_of chat)" ready "state"
t_match <(spawn_argv chat 1) ' -c 512 '
t_eq "$(gate_ctx chat)" 512 "the gate's need.estimate.n_ctx"
t_eq "$(curl -s --max-time $((5 * S)) "http://127.0.0.1:$P1/props" | jq -r .default_generation_settings.n_ctx)" 512 \
    "the engine's n_ctx"
gpumod service show chat --json >"$T/svc.json"
t_jq "$T/svc.json" .overrides.context_size 512
t_jq "$T/svc.json" .config_changed true
t_jq "$T/svc.json" '.running_hash != .config_hash and (.running_hash | length) == 64' true
# the footprint is the override's, stored under the hash the run is known by
events chat
t_eq "$(jq -rs '[.[] | select(.kind == "footprint")] | last | .data.config_hash' "$T/ev")" \
    "$(jq -r .running_hash "$T/svc.json")" "the footprint's config hash"
t_run 0 gpumod service show chat
t_has out "started with context_size 512 (an override)"
t_run 0 gpumod service list
t_match out "^chat .*  context_size 512 \(override\)"
t_lacks out "config changed"
t_end

t_begin "the same overrides again: 200, nothing new; another size: 409 conflict saying what runs"
t_run 0 gpumod service start chat --ctx 512
post /services/chat/start '{"overrides": {"context_size": 512}}'
t_eq "$(status)" 200 "same overrides"
t_jq out .overrides.context_size 512
post /services/chat/start '{"overrides": {"context_size": 1024}}'
t_eq "$(status)" 409 "other overrides"
t_jq out .error.code conflict
t_jq out .error.message "'chat' is ready with context_size 512; stop it first to start it with context_size 1024"
t_run 1 gpumod service start chat --ctx 1024
t_has err "'chat' is ready with context_size 512; stop it first to start it with context_size 1024"
# a start without overrides takes what runs
t_run 0 gpumod service start chat
t_eq "$(count spawn chat)" 1 "spawns"
t_eq "$(field chat .overrides.context_size)" 512 "overrides still"
t_end

t_begin "a reload that changes nothing does not list the overridden service as changed"
t_run 0 gpumod reload
t_lacks out "changed while running"
t_end

t_begin "a later start without overrides runs the preset as configured"
t_run 0 gpumod service stop chat
t_eq "$(field chat .overrides)" null "overrides when down"
t_run 0 gpumod service start chat
t_match <(spawn_argv chat 2) ' -c 128 '
t_eq "$(gate_ctx chat)" 256 "the gate's n_ctx (128 padded to 256, as llama.cpp pads it)"
t_eq "$(field chat .overrides)" null "overrides"
t_eq "$(field chat .config_changed)" false "config_changed"
# asking the preset's own size of it is asking what runs
t_run 0 gpumod service start chat --ctx 128
post /services/chat/start '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 409 "another size of a plain run"
t_jq out .error.message "'chat' is ready with context_size 128; stop it first to start it with context_size 256"
t_run 0 gpumod service stop chat
t_end

t_begin "restart --ctx: stopped, then started with the override"
t_run 0 gpumod service start chat
t_run 0 gpumod service restart chat --ctx 384
t_match <(spawn_argv chat 4) ' -c 384 '
t_eq "$(field chat .overrides.context_size)" 384 "overrides"
t_run 0 gpumod service stop chat
t_end

t_begin "a start in flight: joined with the same overrides, 409 with others"
post "/services/slow/start?wait=0" '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 202 "the first start"
seq=$(jq -r .start_seq "$T/out")
t_jq out .service.overrides.context_size 256
post "/services/slow/start?wait=0" '{"overrides": {"context_size": 512}}'
t_eq "$(status)" 409 "other overrides"
t_jq out .error.message "'slow' is starting with context_size 256; stop it first to start it with context_size 512"
post "/services/slow/start?wait=0" '{"overrides": {"context_size": 256}}'
t_eq "$(status)" 202 "same overrides"
t_jq out .start_seq "$seq"
post "/services/slow/start?wait=0" ''
t_eq "$(status)" 202 "no overrides: joined"
t_jq out .start_seq "$seq"
t_wait 20 is_state slow ready || t_fail "slow never ready (state $(state_of slow))"
t_match <(spawn_argv slow 1) ' -c 256 '
t_eq "$(count spawn slow)" 1 "spawns"
t_run 0 gpumod service stop slow
t_end

t_begin "a switch to a mode that has the service runs its preset: the overridden run is not kept"
t_run 0 gpumod service start chat --ctx 512
n=$(count spawn chat)
t_run 0 gpumod mode switch solo
t_eq "$(count spawn chat)" $((n + 1)) "spawns"
t_match <(spawn_argv chat $((n + 1))) ' -c 128 '
t_eq "$(field chat .overrides)" null "overrides"
t_eq "$(field chat .config_changed)" false "config_changed"
t_run 0 gpumod mode switch none
t_eq "$(state_of chat)" down "state"
t_end

t_begin "a size that cannot fit: 409 gate_refused at the override's n_ctx, nothing spawned"
n=$(count spawn chat)
t_run 1 gpumod service start chat --ctx 16777216
t_match err "gate_refused|MemAvailable [0-9]+ MiB < required [0-9]+ MiB"
t_eq "$(state_of chat)" down "state"
t_eq "$(count spawn chat)" "$n" "spawns"
t_eq "$(field chat .last_start.code)" gate_refused "last_start.code"
t_eq "$(gate_ctx chat)" 16777216 "the gate's n_ctx"
t_end

t_begin "a crash restarted by the policy keeps the override of the run it restarts"
t_run 0 gpumod service start crash --ctx 256
curl -s -o /dev/null --max-time $((5 * S)) -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}' "http://127.0.0.1:$P3/v1/chat/completions"
spawns2() { [ "$(count spawn crash)" = 2 ]; }
t_wait 10 spawns2 || t_fail "no restart (spawns $(count spawn crash))"
t_wait 10 is_state crash ready || t_fail "not ready again (state $(state_of crash))"
t_match <(spawn_argv crash 2) ' -c 256 '
events crash
t_eq "$(jq -rs '[.[] | select(.kind == "spawn")][1].data.origin' "$T/ev")" restart "the second spawn's origin"
t_eq "$(field crash .overrides.context_size)" 256 "overrides"
t_run 0 gpumod service stop crash
t_end

t_begin "bad bodies and options: 400 or exit 2 naming what is wrong, nothing started"
post /services/chat/start '[1]'
t_eq "$(status)" 400 "an array"
t_jq out .error.message 'start: the body must be a JSON object {"overrides": {...}}: found another JSON value'
post /services/chat/start '{"overrides": {"ctx": 512}}'
t_eq "$(status)" 400 "unknown override"
t_jq out .error.code bad_request
t_jq out .error.message "start: overrides: unknown key 'ctx' (keys for llamacpp: $LKEYS)"
post /services/chat/start '{"override": {}}'
t_eq "$(status)" 400 "unknown key"
t_jq out .error.message "start: unknown key 'override' in the body (allowed: overrides)"
post /services/chat/start '{"overrides": 512}'
t_eq "$(status)" 400 "overrides not an object"
t_jq out .error.message "start: \"overrides\" must be an object {KEY: value, ..., \"env\": {NAME: \"value\"}} or null (keys for llamacpp: $LKEYS)"
for bad in 0:"0 is out of range: expected an integer in 1..16777216" \
    -1:"-1 is out of range: expected an integer in 1..16777216" \
    512.5:"expected an integer in 1..16777216, found '512.5'" \
    '"512"':"expected an integer in 1..16777216 (or null for the preset's), found \"512\"" \
    true:"expected an integer in 1..16777216 (or null for the preset's), found true" \
    16777217:"16777217 is out of range: expected an integer in 1..16777216" \
    1e300:"expected an integer in 1..16777216, found '1e+300'"; do
    post /services/chat/start "{\"overrides\": {\"context_size\": ${bad%%:*}}}"
    t_eq "$(status)" 400 "context_size ${bad%%:*}"
    t_jq out .error.message "start: overrides.context_size: ${bad#*:}"
done
post /services/chat/start '{"overrides": {"context_size": 512, "context_size": 256}}'
t_eq "$(status)" 400 "a key twice"
t_has out "key 'context_size' appears twice in the object at \$.overrides"
post /services/chat/restart '{"overrides": {"ctx": 1}}'
t_eq "$(status)" 400 "restart"
t_jq out .error.message "restart: overrides: unknown key 'ctx' (keys for llamacpp: $LKEYS)"
post /services/cmd/start '{"overrides": {"context_size": 512}}'
t_eq "$(status)" 400 "a driver that takes no context size"
t_jq out .error.message "start: overrides.context_size: the command driver takes no context_size (keys for command: env)"
t_run 2 gpumod service start cmd --ctx 512
t_has err "the command driver takes no context_size"
t_run 2 gpumod service start chat --ctx 0
t_has err "--ctx"
t_run 2 gpumod service start chat --context-size lots
t_run 2 gpumod service stop chat --ctx 512
t_has err "unknown option '--ctx'"
t_eq "$(state_of chat)/$(state_of cmd)" down/down "states"
# null and {} mean none
post "/services/chat/start" '{"overrides": null}'
t_eq "$(status)" 200 "overrides null"
t_jq out .overrides null
t_run 0 gpumod service stop chat
post "/services/chat/start" '{"overrides": {"context_size": null}}'
t_eq "$(status)" 200 "context_size null"
t_jq out .overrides null
t_run 0 gpumod service stop chat
t_end

# cmdline_of PID / environ_of PID: the process's argv (one line, spaces) / environment (a line each)
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline"; }
environ_of() { tr '\0' '\n' <"/proc/$1/environ"; }

t_begin "every llama.cpp key family reaches the engine's argv, --env its environment; the service echoes them"
t_run 0 gpumod service start chat --ctx 256 --set threads=3 --set batch_size=64 --set ubatch_size=32 \
    --set parallel=2 --set n_gpu_layers=0 --set n_cpu_moe=1 --set cache_type_k=bf16 --set cache_type_v=f32 \
    --set flash_attn=on --set spec_draft_n_max=4 --env GPUMOD_T68=variant --env FAKELLM_TTFT_MS=1
pid=$(field chat .pid)
cmdline_of "$pid" >"$T/cmdline"
for w in "-c 256" "-t 3" "-b 64" "-ub 32" "--parallel 2" "-ngl 0" "--n-cpu-moe 1" "--cache-type-k bf16" \
    "--cache-type-v f32" "-fa on" "--spec-draft-n-max 4"; do
    t_match "$T/cmdline" " $w( |$)"
done
environ_of "$pid" >"$T/environ"
t_match "$T/environ" "^GPUMOD_T68=variant$"
t_match "$T/environ" "^FAKELLM_TTFT_MS=1$"
t_match "$T/environ" "^GGML_CUDA_NO_PINNED=1$"
gpumod service show chat --json >"$T/svc.json"
t_jq "$T/svc.json" '.overrides | tojson' '{"context_size":256,"threads":3,"batch_size":64,"ubatch_size":32,"parallel":2,"n_gpu_layers":0,"n_cpu_moe":1,"cache_type_k":"bf16","cache_type_v":"f32","flash_attn":true,"spec_draft_n_max":4,"env":{"GPUMOD_T68":"variant","FAKELLM_TTFT_MS":"1"}}'
t_jq "$T/svc.json" '.running_hash != .config_hash' true
h1=$(jq -r .running_hash "$T/svc.json")
t_run 0 gpumod service show chat
t_has out "started with context_size 256, threads 3, batch_size 64, ubatch_size 32, parallel 2"
t_has out "env GPUMOD_T68=variant, env FAKELLM_TTFT_MS=1 (overrides)"
# the same variant but one env value: another run, another hash
t_run 0 gpumod service restart chat --ctx 256 --set threads=3 --set batch_size=64 --set ubatch_size=32 \
    --set parallel=2 --set n_gpu_layers=0 --set n_cpu_moe=1 --set cache_type_k=bf16 --set cache_type_v=f32 \
    --set flash_attn=on --set spec_draft_n_max=4 --env GPUMOD_T68=other --env FAKELLM_TTFT_MS=1
t_match <(environ_of "$(field chat .pid)") "^GPUMOD_T68=other$"
h2=$(field chat .running_hash)
t_eq "$([ "$h1" != "$h2" ] && [ "$h2" != "$(field chat .config_hash)" ] && echo differ)" differ "the hashes"
# another variant of a running service is a conflict naming the keys that differ
post /services/chat/start '{"overrides": {"threads": 5, "env": {"GPUMOD_T68": "other"}}}'
t_eq "$(status)" 409 "another variant"
t_jq out .error.message "'chat' is ready with threads 3; stop it first to start it with threads 5"
t_run 0 gpumod service stop chat
t_end

t_begin "bad overrides: a key of another driver, a wrong type, out of range, a bad env name: 400 naming it"
post /services/vl/start '{"overrides": {"batch_size": 64}}'
t_eq "$(status)" 400 "a llama.cpp key on vllm"
t_jq out .error.message "start: overrides.batch_size: the vllm driver takes no batch_size (keys for vllm: $VKEYS)"
post /services/chat/start '{"overrides": {"dtype": "half"}}'
t_eq "$(status)" 400 "a vllm key on llama.cpp"
t_jq out .error.message "start: overrides.dtype: the llamacpp driver takes no dtype (keys for llamacpp: $LKEYS)"
post /services/chat/start '{"overrides": {"threads": "8"}}'
t_eq "$(status)" 400 "a string for an integer"
t_jq out .error.message "start: overrides.threads: expected an integer in 1..4096 (or null for the preset's), found \"8\""
post /services/chat/start '{"overrides": {"threads": 0}}'
t_eq "$(status)" 400 "out of range"
t_jq out .error.message "start: overrides.threads: 0 is out of range: expected an integer in 1..4096"
post /services/vl/start '{"overrides": {"gpu_memory_utilization": 2}}'
t_eq "$(status)" 400 "a float out of range"
t_jq out .error.message "start: overrides.gpu_memory_utilization: 2 is out of range: expected a number in 0.01..1"
post /services/chat/start '{"overrides": {"cache_type_k": "q3"}}'
t_eq "$(status)" 400 "a cache type llama.cpp lacks"
t_jq out .error.message "start: overrides.cache_type_k: expected one of f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1, found 'q3'"
post /services/chat/start '{"overrides": {"flash_attn": 1}}'
t_eq "$(status)" 400 "a number for a boolean"
t_jq out .error.message "start: overrides.flash_attn: expected true, false, \"on\", \"off\" or \"auto\" (or null for the preset's), found 1"
post /services/chat/start '{"overrides": {"env": {"BAD-NAME": "1"}}}'
t_eq "$(status)" 400 "a bad env name"
t_jq out .error.message "start: overrides.env: 'BAD-NAME' is not a valid environment variable name (expected [A-Za-z_][A-Za-z0-9_]*, up to 256 characters)"
post /services/chat/start '{"overrides": {"env": {"X": 1}}}'
t_eq "$(status)" 400 "a number as an env value"
t_jq out .error.message "start: overrides.env.X: expected a string (or null for the preset's), found 1"
post /services/chat/start '{"overrides": {"ubatch_size": 4096}}'
t_eq "$(status)" 400 "ubatch_size over the preset's batch size"
t_jq out .error.message "cannot start 'chat' with overrides: preset 'chat': ubatch_size 4096 is larger than batch_size (its default) 2048 (llama.cpp's physical batch is at most its logical batch; set batch_size too)"
post /services/cmd/start '{"overrides": {"env": {"FAKELLM_TTFT_MS": "1"}}}'
t_eq "$(status)" 200 "env on a command preset"
t_run 0 gpumod service stop cmd
t_run 2 gpumod service start chat --set threads=lots
t_has err "start: overrides.threads: expected an integer in 1..4096 (or null for the preset's), found \"lots\""
t_run 2 gpumod service start chat --set threads
t_has err "--set expects KEY=VALUE, found 'threads'"
t_run 2 gpumod service start chat --set threads=2 --set threads=3
t_has err "--set threads: given twice"
t_run 2 gpumod service stop chat --set threads=2
t_has err "unknown option '--set'"
t_eq "$(state_of chat)/$(state_of vl)/$(count spawn vl)" down/down/0 "states, vl's spawns"
t_end

t_begin "the daemon stops cleanly"
daemon_stop
t_end

# ---- with the fake NVML: one 8 GiB GPU, 300 MiB used by others; 'gpu'
# declares and holds 6000 MiB of it (FAKELLM_GPU_MB), so a variant fits
# only once what it holds is given back, and one of 16M tokens cannot fit
# at all (on the GPU or, by the estimate's host part, in MemAvailable)
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$BUILD/fakes/nvidia-smi
cat >"$T/nvml.json" <<'JSON'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 8GB", "total_mb": 8192, "base_used_mb": 300, "memory": "ok"}],
 "processes": [], "release_delay_ms": 0}
JSON
preset gpu "$P6" 'devices: [0]' 'env: {FAKELLM_GPU_MB: "6000"}' 'memory: {gpu_mb: 6000}'
daemon_start

t_begin "every vLLM key family reaches the engine's argv"
t_run 0 gpumod service start vl --ctx 512 --set max_num_seqs=4 --set gpu_memory_utilization=0.5 \
    --set kv_cache_dtype=fp8 --set enforce_eager=true --set dtype=half --env VLLM_MARLIN_USE_ATOMIC_ADD=1
cmdline_of "$(field vl .pid)" >"$T/cmdline"
for w in "--max-model-len 512" "--max-num-seqs 4" "--gpu-memory-utilization 0.5" "--kv-cache-dtype fp8" \
    "--enforce-eager" "--dtype half"; do
    t_match "$T/cmdline" " $w( |$)"
done
t_match <(environ_of "$(field vl .pid)") "^VLLM_MARLIN_USE_ATOMIC_ADD=1$"
gpumod service show vl --json >"$T/svc.json"
t_jq "$T/svc.json" '.overrides | tojson' '{"context_size":512,"max_num_seqs":4,"gpu_memory_utilization":0.5,"kv_cache_dtype":"fp8","enforce_eager":true,"dtype":"half","env":{"VLLM_MARLIN_USE_ATOMIC_ADD":"1"}}'
t_run 0 gpumod service stop vl
t_end

t_begin "preflight of a restart with overrides: judged as if the service were stopped first"
t_run 0 gpumod service start gpu
pid0=$(field gpu .pid)
n=$(count spawn gpu)
# plainly, its measured 6000 MiB is needed again on top of what it holds
post /preflight '{"service": "gpu"}'
t_eq "$(status)" 200 "plain preflight"
t_jq out .ok false
t_jq out .binding gpu.0.free
# a variant, as a restart: its own 6000 MiB given back first, the variant's estimate fits
post /preflight '{"service": "gpu", "overrides": {"context_size": 256}}'
t_eq "$(status)" 200 "a variant that fits after the stop"
t_jq out .ok true
t_jq out .via daemon
t_jq out '.restart.overrides | tojson' '{"context_size":256}'
t_jq out '.restart.held.gpu_bytes["0"] >= 6000 * 1048576' true
t_jq out '.restart.after_stop.gpus[0].free_bytes > 7000 * 1048576' true
t_jq out .need.estimate.n_ctx 256
t_jq out .config_dir "$(cd "$C" && pwd -P)"
t_run 0 gpumod preflight --for gpu --ctx 256
t_has out "ok: 'gpu' fits"
t_has out "as a restart with context_size 256 (what it holds now given back first)"
t_end

t_begin "a variant that cannot fit: preflight refuses it with the gate's reason; a restart with it spawns nothing"
post /preflight '{"service": "gpu", "overrides": {"context_size": 16777216}}'
t_eq "$(status)" 200 "preflight answers"
t_jq out .ok false
t_jq out '.binding | test("^(gpu\\.0\\.free|host\\.mem_available)$")' true
reason=$(jq -r .reason "$T/out")
t_match <(echo "$reason") "MiB < required [0-9]+ MiB"
t_run 1 gpumod preflight --for gpu --set context_size=16777216 --json
t_jq out '.reason | endswith("<'"${reason##*<}"'")' true
t_run 1 gpumod preflight --for gpu --ctx 16777216
t_has out "refused: 'gpu': ${reason%% [0-9]*}"
t_has out "as a restart with context_size 16777216 (what it holds now given back first)"
t_eq "$(field gpu .pid)" "$pid0" "still running, the same pid"
t_eq "$(count spawn gpu)" "$n" "spawns after the preflights"
# the restart itself: stopped, then refused by the gate at the same size; nothing new runs
t_run 1 gpumod service restart gpu --ctx 16777216
# the same rule refuses it (the figure available moves with the host)
t_has err "refused: 'gpu': ${reason%% [0-9]*}"
t_has err "<${reason##*<}"
t_eq "$(count spawn gpu)" "$n" "spawns after the restart"
t_eq "$(state_of gpu)" down "state"
t_eq "$(field gpu .pid)" null "pid"
t_eq "$(field gpu .last_start.code)" gate_refused "last_start.code"
t_end

t_begin "preflight bodies: overrides only with a service, checked as a start's; an unknown key"
post /preflight '{"mode": "solo", "overrides": {"threads": 2}}'
t_eq "$(status)" 400 "overrides with a mode"
t_jq out .error.message 'preflight: "overrides" go with "service", not a mode'
post /preflight '{"service": "gpu", "overrides": {"threads": 0}}'
t_eq "$(status)" 400 "out of range"
t_jq out .error.message "preflight: overrides.threads: 0 is out of range: expected an integer in 1..4096"
post /preflight '{"service": "gpu", "overrides": {"ubatch_size": 4096}}'
t_eq "$(status)" 400 "across keys"
t_jq out .error.message "preflight: cannot start 'gpu' with overrides: preset 'gpu': ubatch_size 4096 is larger than batch_size (its default) 2048 (llama.cpp's physical batch is at most its logical batch; set batch_size too)"
post /preflight '{"service": "gpu", "extra": 1}'
t_eq "$(status)" 400 "an unknown key"
t_jq out .error.message "preflight: unknown key 'extra' in the body (allowed: service, mode, overrides)"
t_run 2 gpumod preflight --mode solo --set threads=2
t_has err "--set, --env and --ctx go with --for SERVICE"
t_run 2 gpumod preflight --for gpu --set dtype=half --standalone
t_has err "overrides.dtype: the llamacpp driver takes no dtype"
t_end

t_begin "the daemon stops cleanly (fake NVML)"
daemon_stop
t_end
t_done