#!/usr/bin/env bash
# preflight through the daemon: with a daemon running, `gpumod preflight`
# says `via: daemon` and its verdict counts the memory reserved by a start
# in flight (a slow load) except the one held for the same service; the
# same question asked standalone, which cannot see that reservation,
# passes.  Fake NVML: one 24 GiB GPU with 300 MiB used.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
MODEL=$GPUMOD_SRC/tests/fixtures/models/aidreams260K-f32.gguf
C=$T/config
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
cat >"$T/nvml.json" <<'EOF'
{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576, "base_used_mb": 300, "memory": "ok",
              "compute_capability": "8.9"}],
 "processes": [], "release_delay_ms": 0}
EOF
PA=$(free_port); PB=$(free_port)
mkdir -p "$C/presets" "$C/modes"
cat >"$C/gpumod.yaml" <<EOF
drivers:
  llamacpp: {binary: $FAKELLM_BIN}
supervisor:
  stop_timeout: 2s
router:
  enabled: false
EOF
# each declares 12000 MiB of the GPU (driver command: no estimate wins
# over the declaration): one fits (24276 free - 1024 margin), two do not
for s in a:$PA b:$PB; do
    printf 'id: %s\ndriver: command\nport: %s\ncommand: [%s, -m, %s, --port, "{port}"]\nenv:\n  FAKELLM_LOAD_MS: "60000"\nmemory: {gpu_mb: 12000, host_mb: 16}\n' \
        "${s%%:*}" "${s#*:}" "$FAKELLM_BIN" "$MODEL" >"$C/presets/${s%%:*}.yaml"
done
printf 'id: ab\nservices: [a, b]\n' >"$C/modes/ab.yaml"

t_begin "no daemon: preflight stays standalone"
t_run 0 gpumod preflight --for b --json
t_jq out .via standalone
t_jq out .ok true
t_end

t_spawn daemon "$GPUMOD_BIN" serve --foreground
DPID=$_t_last_pid
t_wait 10 gpumod status || t_fail "the daemon never answered"

t_begin "a daemon with nothing in flight: via daemon, ok"
t_run 0 gpumod preflight --for b --json
t_jq out .via daemon
t_jq out .ok true
t_jq out .available.host.reserved_bytes 0
t_run 0 gpumod preflight --for b
t_has out "ok: 'b' fits: need (declared)"
t_has out "via: daemon"
t_end

t_begin "GET /status: a GPU's compute capability from NVML"
t_wait 10 sh -c "'$GPUMOD_BIN' status --json | jq -e '.memory.gpus | length == 1'" || t_fail "no GPU in status"
t_run 0 gpumod status --json
t_jq out '.memory.gpus[0].compute_capability' 8.9
t_jq out '.memory.gpus[0].compute_capability | type' string
t_end

t_begin "a slow load in flight: its reservation refuses b via the daemon; standalone would pass"
t_run 0 gpumod service start a --no-wait
t_wait 10 sh -c "'$GPUMOD_BIN' service show a --json | jq -e '.state == \"starting\" and .admitted != null'" ||
    t_fail "a never got admitted"
t_run 1 gpumod preflight --for b --json
t_jq out .via daemon
t_jq out .ok false
t_jq out .binding gpu.0.free
t_jq out '.available.gpus[0].reserved_bytes' $((12000 * 1048576))
t_run 1 gpumod preflight --for b
t_has out "refused: 'b'"
t_has out "reserved by starts in flight"
t_run 0 gpumod preflight --for b --standalone --json
t_jq out .via standalone
t_jq out .ok true
t_end

t_begin "the service's own reservation is not counted against it"
t_run 0 gpumod preflight --for a --json
t_jq out .via daemon
t_jq out .ok true
t_end

t_begin "a mode via the daemon: each service reserving for the next"
t_run 1 gpumod preflight --mode ab --json
t_jq out .mode ab
t_jq out '.verdicts | length' 2
t_jq out '[.verdicts[].via] | unique | join(",")' daemon
t_jq out .ok false
t_run 2 gpumod preflight --for nosuch
t_has err "no preset 'nosuch'"
t_end

t_begin "the load stopped: b fits again via the daemon"
t_run 0 gpumod service stop a
t_run 0 gpumod preflight --for b --json
t_jq out .via daemon
t_jq out .ok true
t_end

t_begin "a llama.cpp service declaring more than its estimate: admitted at the declaration, status says so"
PC=$(free_port)
printf 'id: c\ndriver: llamacpp\nport: %s\nmodel_path: %s\ncontext_size: 128\nenv:\n  FAKELLM_LOAD_MS: "50"\nmemory: {gpu_mb: 5000}\n' \
    "$PC" "$MODEL" >"$C/presets/c.yaml"
t_run 0 gpumod reload
t_run 0 gpumod service start c
t_run 0 gpumod service show c --json
t_jq out .admitted.source declared
t_jq out '.admitted.gpu_bytes["0"]' $((5000 * 1048576))
t_run 0 gpumod status
t_match out '^c +ready .* need 4[0-9.]+ GiB \(declared\)'
t_run 0 gpumod events --json
t_jq out '[.events[] | select(.kind == "gate" and .service == "c")] | last | .data.need.detail | test("declared memory.gpu_mb binds: gpu 0 5000 MiB > estimate [0-9]+ MiB")' true
t_run 0 gpumod service stop c
t_end

stop_all_clean
t_done
