#!/usr/bin/env bash
# preflight, simulate and model inspect through the real binary, against
# the fake NVML and the /proc fixtures: every gate case a user meets, with
# the reason and the exit code they would see.
. "$(dirname "$0")/lib.sh"

FAKES=$BUILD/fakes
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json
export GPUMOD_NVML_LIB=$FAKES/libnvidia-ml.so.1 GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi
MODELS=$GPUMOD_SRC/tests/fixtures/models
P=$FIXTURES/proc
C=$T/config
MIB=1048576
mkdir -p "$C/presets" "$C/modes"

# gpu_state TOTAL_MB USED_MB ok|not_supported EXTRA: one device
gpu_state() {
    printf '{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": %s,
              "base_used_mb": %s, "memory": "%s"}],
 "processes": [], "release_delay_ms": 0%s}\n' "${1:-24576}" "${2:-500}" "${3:-ok}" "${4:-}" >"$T/nvml.new"
    mv "$T/nvml.new" "$T/nvml.json" # writers replace by rename
}
no_gpu() { rm -f "$T/nvml.json"; export GPUMOD_NVIDIA_SMI=/nonexistent/nvidia-smi; }
with_gpu() { export GPUMOD_NVIDIA_SMI=$FAKES/nvidia-smi; gpu_state "$@"; }

printf 'id: chat\ndriver: llamacpp\nport: 7070\nmodel_path: %s\ncontext_size: 2048\n' \
    "$MODELS/aidreams260K-f32.gguf" >"$C/presets/chat.yaml"
printf 'id: big\ndriver: llamacpp\nport: 7071\nmodel_path: %s\ncontext_size: 16777216\n' \
    "$MODELS/llama-2-tiny-random.gguf" >"$C/presets/big.yaml"
printf 'id: declared\ndriver: command\nport: 7072\ncommand: [/bin/sleep, "1000"]\nmemory: {gpu_mb: 20000, host_mb: 1024}\n' \
    >"$C/presets/declared.yaml"
printf 'id: nodecl\ndriver: fastapi\nport: 7073\n' >"$C/presets/nodecl.yaml"
printf 'id: lane\ndriver: vllm\nport: 7074\nmodel_id: org/m\nunit_vars: {gpu_mem_util: 0.5}\n' >"$C/presets/lane.yaml"
printf 'id: chatpin\ndriver: llamacpp\nport: 7075\nmodel_path: %s\ncontext_size: 2048\nmemory: {pins_host: true}\n' \
    "$MODELS/aidreams260K-f32.gguf" >"$C/presets/chatpin.yaml"
printf 'id: far\ndriver: remote\nremote: {base_url: "http://10.0.0.1:8000"}\n' >"$C/presets/remote.yaml"
printf 'id: pair\nname: P\nservices: [declared, lane]\n' >"$C/modes/pair.yaml"
printf 'id: small\nname: S\nservices: [chat, far]\n' >"$C/modes/small.yaml"

pf() { gpumod preflight "$@"; }

t_begin "plenty of memory: ok, exit 0, the need names its source"
with_gpu
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat --json
t_jq out .ok true
t_jq out .via standalone
t_jq out .need.source estimate
t_jq out '.need.gpu_bytes["0"] > 0' true
t_jq out .nvml ok
t_jq out '.available.gpus[0].free_bytes' $(((24576 - 500) * MIB))
t_jq out '.high_order_pages | has("9")' true
# the Normal zone's blocks only (DMA32's 752 order-10 blocks left out)
t_jq out '.high_order_pages["10"]' 636
# Normal: 6*512 + 636*1024 = 654336 pages x 4096
t_jq out .available.host.contig_2m_bytes 2680160256
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat
t_has out "ok: 'chat' fits: need (estimate)"
t_end

t_begin "MemAvailable short: refused, exit 1, reason with figures"
no_gpu
GPUMOD_PROC_ROOT=$P/short t_run 1 pf --for declared --json
t_jq out .ok false
t_jq out .binding host.mem_available
t_jq out .reason "MemAvailable 1932 MiB < required 2151 MiB"
t_end

t_begin "fragmented host with an NVIDIA driver: an engine that pins host memory is refused, llama.cpp is not"
with_gpu
# vLLM pins; llama.cpp runs under GGML_CUDA_NO_PINNED=1 unless the preset says it pins
GPUMOD_PROC_ROOT=$P/fragmented t_run 1 pf --for lane --json
t_jq out .binding host.contig
t_jq out .reason "free memory in blocks >= 256 KiB 4 MiB < required 2048 MiB (host is fragmented, and this service pins host memory)"
t_jq out .contig.state known
t_jq out .contig.applies true
t_jq out .contig.bytes 4980736
GPUMOD_PROC_ROOT=$P/fragmented t_run 1 pf --for chatpin --json
t_jq out .binding host.contig
GPUMOD_PROC_ROOT=$P/fragmented t_run 0 pf --for chat --json
t_jq out .contig.applies false
t_jq out .contig.pins_host false
t_jq out .ok true
t_end

t_begin "the seed's hosts: order_6 = 0 refuses an engine that pins, the healthy one admits it"
with_gpu
GPUMOD_PROC_ROOT=$P/seed-fragmented t_run 1 pf --for lane --json
t_jq out .binding host.contig
t_jq out .reason "free memory in blocks >= 256 KiB 0 MiB < required 2048 MiB (host is fragmented, and this service pins host memory)"
t_jq out '.high_order_pages | [.["4"], .["5"], .["6"]] | join(",")' "23,4,0"
GPUMOD_PROC_ROOT=$P/seed-fragmented t_run 0 pf --for chat
GPUMOD_PROC_ROOT=$P/seed-healthy t_run 0 pf --for lane --json
t_jq out .contig.state known
t_jq out .contig.bytes $((10650 * MIB))
t_end

t_begin "buddy lists that hold far less than MemFree (the H200, this kind of VM): contiguity unknown, nothing refused"
with_gpu
GPUMOD_PROC_ROOT=$FIXTURES/device/h200 t_run 0 pf --for lane --json
t_jq out .contig.state unknown
t_jq out .contig.why "the buddy lists hold 3174 MiB of 127618 MiB MemFree: the kernel has not put the rest on its free lists (lazily initialised memory), so they cannot tell fragmentation"
GPUMOD_PROC_ROOT=$FIXTURES/device/h200 t_run 0 gpumod gpu --json
t_jq out .host.contig.state unknown
GPUMOD_PROC_ROOT=$FIXTURES/device/h200 t_run 0 gpumod gpu
t_has out "contiguity: unknown: the buddy lists hold 3174 MiB of 127618 MiB MemFree"
t_end

t_begin "fragmented host without any NVIDIA driver: the contiguity rule does not apply"
no_gpu
GPUMOD_PROC_ROOT=$P/fragmented t_run 0 pf --for chat
t_end

# an idle DMA32 zone (752 order-10 blocks: 3008 MiB) beside the fragmented
# Normal zone: every zone summed it made 3026 MiB and passed; the gate counts
# Normal and Movable only (memory.md 6.4)
mkdir -p "$T/dma32"
cp "$P/fragmented/meminfo" "$T/dma32/"
cp -r "$P/fragmented/pressure" "$T/dma32/"
{
    sed -n 1p "$P/healthy/buddyinfo"  # DMA: 1 order-9, 3 order-10 blocks
    sed -n 2p "$P/healthy/buddyinfo"  # DMA32: 2 order-9, 752 order-10 blocks
    sed -n 3p "$P/fragmented/buddyinfo"  # Normal: nothing >= order 9
} >"$T/dma32/buddyinfo"

t_begin "free 2 MiB blocks only in DMA32: refused as fragmented, gpu says which zones count"
with_gpu
GPUMOD_PROC_ROOT=$T/dma32 t_run 1 pf --for lane --json
t_jq out .binding host.contig
t_jq out .reason "free memory in blocks >= 256 KiB 4 MiB < required 2048 MiB (host is fragmented, and this service pins host memory)"
t_jq out .available.host.contig_2m_bytes 0
t_jq out .available.host.contig_bytes 4980736
GPUMOD_PROC_ROOT=$T/dma32 t_run 0 gpumod gpu --json
t_jq out .host.zones_counted Normal+Movable
t_jq out .host.contig_2m_bytes 0
t_jq out .host.order_counts[10] 0
GPUMOD_PROC_ROOT=$T/dma32 t_run 0 gpumod gpu
t_has out "free in blocks >= 2 MiB, Normal+Movable: 0 B"
t_has out "contiguity: free in blocks >= 256 KiB 5 MiB (what the gate counts for services that pin host memory)"
t_end

# no Normal or Movable zone: every zone counts, and gpu says so.
# DMA 1*512 + 3*1024 = 3584 pages, DMA32 2*512 + 752*1024 = 771072 pages:
# 774656 pages x 4096 = 3172990976 bytes (3026 MiB) >= 2048 MiB
mkdir -p "$T/nonormal"
cp "$P/healthy/meminfo" "$T/nonormal/"
cp -r "$P/healthy/pressure" "$T/nonormal/"
sed -n 1,2p "$P/healthy/buddyinfo" >"$T/nonormal/buddyinfo"

t_begin "no Normal/Movable zone: every zone counted, and said"
with_gpu
GPUMOD_PROC_ROOT=$T/nonormal t_run 0 gpumod gpu --json
t_jq out .host.zones_counted all
t_jq out .host.contig_2m_bytes 3172990976
t_jq out .host.order_counts[10] 755
GPUMOD_PROC_ROOT=$T/nonormal t_run 0 gpumod gpu
t_has out "free in blocks >= 2 MiB, all zones (no Normal/Movable zone): 2.96 GiB" # 3026/1024 = 2.955
GPUMOD_PROC_ROOT=$T/nonormal t_run 0 pf --for chat
GPUMOD_PROC_ROOT=$P/healthy t_run 0 gpumod gpu --json
t_jq out .host.zones_counted Normal+Movable
t_end

t_begin "memory pressure high: refused"
no_gpu
GPUMOD_PROC_ROOT=$P/pressured t_run 1 pf --for chat --json
t_jq out .binding host.psi
t_jq out .reason "memory pressure some avg10 34.87% > 10%"
t_end

t_begin "discrete GPU short: refused naming the device, need and margin"
with_gpu 24576 10000
GPUMOD_PROC_ROOT=$P/healthy t_run 1 pf --for declared --json
t_jq out .binding gpu.0.free
t_jq out .reason "GPU 0 free 14576 MiB < required 21024 MiB (need 20000 + margin 1024)"
t_jq out .need.source declared
t_end

t_begin "unified memory (NOT_SUPPORTED) short: the one pool is judged"
with_gpu 0 0 not_supported
GPUMOD_PROC_ROOT=$P/unified-short t_run 1 pf --for declared --json
t_jq out .binding unified.0.mem_available
t_jq out '.available.gpus[0].unified' true
t_end

t_begin "no GPU at all: a GPU need is refused, a host-only estimate passes"
no_gpu
GPUMOD_PROC_ROOT=$P/healthy t_run 1 pf --for declared --json
t_jq out '.reason | startswith("device 0 is not present")' true
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat --json
t_jq out '.need.gpu_bytes | length' 0
t_jq out '.need.host_bytes > 0' true
t_end

t_begin "NVML hangs: the deadline is honoured and the verdict is nvml hung"
printf 'memory:\n  nvml_timeout: 300ms\n' >"$C/gpumod.yaml"
with_gpu 24576 500 ok ', "call_delay_ms": {"nvmlDeviceGetMemoryInfo_v2": 30000}'
t0=$(( $(date +%s%N) / 1000000 ))
GPUMOD_PROC_ROOT=$P/healthy t_run 1 pf --for chat --json
took=$(( $(date +%s%N) / 1000000 - t0 ))
[ "$took" -lt $((300 + 3000 * GPUMOD_TEST_TIME_SCALE)) ] || t_fail "took $took ms"
t_jq out .nvml hung
t_jq out .binding nvml.hung
rm -f "$C/gpumod.yaml"
t_end

t_begin "vLLM reserves gpu_memory_utilization x total"
with_gpu 24576 500
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for lane --json
t_jq out '.need.gpu_bytes["0"]' $((24576 * MIB / 2))
t_end

t_begin "a preset that declares nothing and cannot be estimated: exit 2 saying what to declare"
GPUMOD_PROC_ROOT=$P/healthy t_run 2 pf --for nodecl
t_has err "declare memory: {gpu_mb, host_mb}"
t_end

t_begin "remote: nothing runs here, nothing to gate"
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for far --json
t_jq out .need.source none
t_end

t_begin "preflight --mode: the second service counts the first as reserved"
with_gpu 24576 500
GPUMOD_PROC_ROOT=$P/healthy t_run 1 pf --mode pair --json
t_jq out '.verdicts | length' 2
t_jq out '.verdicts[0].ok' true
t_jq out '.verdicts[1].ok' false
t_jq out '.verdicts[1].available.gpus[0].reserved_bytes' $((20000 * MIB))
t_jq out .ok false
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --mode small
t_has out "mode 'small': fits"
t_end

t_begin "router mode: the need of the largest models_max models of the directory"
no_gpu
mkdir -p "$T/router"
ln -s "$MODELS/aidreams260K-f32.gguf" "$T/router/small.gguf"
ln -s "$MODELS/llama-2-tiny-random.gguf" "$T/router/tiny.gguf"
printf 'id: router\ndriver: llamacpp\nport: 7075\ncontext_size: 4096\nunit_vars: {models_dir: %s, models_max: 1}\n' \
    "$T/router" >"$C/presets/router.yaml"
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for router --json
t_jq out .need.source estimate
t_jq out '.need.detail | test("the 1 largest of 2 models")' true
one=$(jq .need.host_bytes "$T/out")
printf 'id: router\ndriver: llamacpp\nport: 7075\ncontext_size: 4096\nunit_vars: {models_dir: %s, models_max: 0}\n' \
    "$T/router" >"$C/presets/router.yaml"
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for router --json
t_jq out '.need.detail | test("the 2 largest of 2 models")' true
t_jq out ".need.host_bytes > $one" true
rm -f "$C/presets/router.yaml"
t_end

t_begin "a measured footprint for the same config hash wins over the estimate"
with_gpu 24576 500
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat --json
hash=$(jq -r .need.config_hash "$T/out")
[ ${#hash} -eq 64 ] || t_fail "config hash '$hash'"
# the daemon writes these after a start; a v1 database as an older gpumod left it
sqlite3 "$GPUMOD_STATE_DIR/gpumod.db" "
  CREATE TABLE footprints (hash TEXT PRIMARY KEY, service TEXT NOT NULL, measured_at_ms INTEGER NOT NULL,
                           host_bytes INTEGER NOT NULL);
  CREATE TABLE footprint_gpus (hash TEXT NOT NULL, device INTEGER NOT NULL, bytes INTEGER NOT NULL,
                               PRIMARY KEY (hash, device));
  INSERT INTO footprints VALUES ('$hash', 'chat', 0, 1048576);
  INSERT INTO footprint_gpus VALUES ('$hash', 0, 123456789);
  PRAGMA user_version = 1;"
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat --json
t_jq out .need.source measured
t_jq out '.need.gpu_bytes["0"]' 123456789
t_jq out .need.host_bytes 1048576
# another configuration (a different context) has no measurement: estimated again
sed -i 's/context_size: 2048/context_size: 1024/' "$C/presets/chat.yaml"
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat --json
t_jq out .need.source estimate
sed -i 's/context_size: 1024/context_size: 2048/' "$C/presets/chat.yaml"
# a database from a newer gpumod is not guessed at
sqlite3 "$GPUMOD_STATE_DIR/gpumod.db" "PRAGMA user_version = 99;"
GPUMOD_PROC_ROOT=$P/healthy t_run 0 pf --for chat --json
t_jq out .need.source estimate
t_has err "measured footprints unavailable: state database"
rm -f "$GPUMOD_STATE_DIR"/gpumod.db*
t_end

t_begin "an unreadable /proc: gpu says why and exits 1; preflight refuses"
no_gpu
GPUMOD_PROC_ROOT=$T/noproc t_run 1 gpumod gpu
t_has out "host   memory unknown: '$T/noproc/meminfo': No such file or directory"
GPUMOD_PROC_ROOT=$T/noproc t_run 1 gpumod gpu --json
t_jq out .host_error "'$T/noproc/meminfo': No such file or directory"
GPUMOD_PROC_ROOT=$T/noproc t_run 1 pf --for chat --json
t_jq out .binding host.mem_available
t_jq out .reason "MemAvailable unknown: /proc/meminfo could not be read"
t_end

t_begin "--for reads the one preset it gates: a broken preset or mode elsewhere does not stand in its way"
C3=$T/config-neighbours
mkdir -p "$C3/presets/more" "$C3/modes"
printf 'id: [unclosed\n' >"$C3/presets/a-broken.yaml"
printf 'id: wrong\ndriver: nope\nport: 7080\n' >"$C3/presets/b-wrong.yaml"
printf 'id: gated\ndriver: command\nport: 7081\ncommand: [/bin/sleep, "1"]\nmemory: {host_mb: 16}\n' \
    >"$C3/presets/more/z-gated.yaml"
printf 'id: m\nservices: [gated, missing]\n' >"$C3/modes/m.yaml"
no_gpu
GPUMOD_PROC_ROOT=$P/healthy t_run 0 gpumod --config-dir "$C3" preflight --for gated --json
t_jq out .ok true
t_jq out .need.source declared
t_lacks err "a-broken.yaml"
t_lacks err "b-wrong.yaml"
# the preset's own errors still refuse it, with its diags only
GPUMOD_PROC_ROOT=$P/healthy t_run 2 gpumod --config-dir "$C3" preflight --for wrong
t_has err "b-wrong.yaml:2:9: error: preset 'wrong': driver: expected one of"
t_has err "preflight: preset 'wrong' has configuration errors"
t_lacks err "a-broken.yaml"
GPUMOD_PROC_ROOT=$P/healthy t_run 2 gpumod --config-dir "$C3" preflight --for nope
t_has err "no preset 'nope' in $C3"
# a mode needs the whole configuration: its missing service is an error
GPUMOD_PROC_ROOT=$P/healthy t_run 2 gpumod --config-dir "$C3" preflight --mode m
t_has err "mode 'm': unknown preset 'missing'"
t_end

t_begin "usage and configuration errors exit 2"
t_run 2 pf
t_has err "give exactly one of --for SERVICE or --mode MODE"
t_run 2 pf --for nope
t_has err "no preset 'nope'"
t_run 2 pf --mode nope
t_has err "no mode 'nope'"
t_end

t_begin "simulate service: a context that cannot fit gets alternatives with figures"
no_gpu
GPUMOD_PROC_ROOT=$P/short t_run 1 gpumod simulate service big --json
t_jq out .verdict.ok false
t_jq out '.alternatives | length >= 2' true
t_jq out '[.alternatives[] | select(.change | startswith("context_size: "))] | .[0].ok' true
t_jq out '[.alternatives[] | select(.change | test("q4_0"))] | length' 1
GPUMOD_PROC_ROOT=$P/short t_run 1 gpumod simulate service big
t_has out "verdict: refused: MemAvailable"
t_has out "alternatives:"
t_match out "fits +context_size: [0-9]+"
t_end

t_begin "simulate service with estimator flags, and simulate mode"
no_gpu
GPUMOD_PROC_ROOT=$P/healthy t_run 0 gpumod simulate service big --ctx 4096 --json
t_jq out .verdict.ok true
t_jq out '.verdict.need.estimate.n_ctx' 4096
GPUMOD_PROC_ROOT=$P/healthy t_run 2 gpumod simulate service big --ctx 0
t_has err "--ctx: expected an integer in 1..16777216, found '0'"
GPUMOD_PROC_ROOT=$P/healthy t_run 2 gpumod simulate service declared --ctx 4096
t_has err "estimator flags apply to llama.cpp single-model presets"
with_gpu 24576 500
GPUMOD_PROC_ROOT=$P/healthy t_run 1 gpumod simulate mode pair --json
t_jq out .ok false
t_jq out '.total.gpu_bytes["0"] > 0' true
t_jq out '.services | length' 2
t_end

t_begin "model inspect: both real models, header only"
t_run 0 gpumod model inspect "$MODELS/aidreams260K-f32.gguf" --json
t_jq out .model.architecture llama
t_jq out .model.layers 4
t_jq out .model.embedding_length 64
t_jq out .model.vocab 512
t_jq out .model.context_length 128
t_jq out '.estimate.devices[0].kv_bytes > 0' true
t_run 0 gpumod model inspect "$MODELS/llama-2-tiny-random.gguf" --gpus 0 --ctx 512
t_has out "layers 1, embedding 8, heads 2, KV heads 2, trained context 4096, vocab 32000"
t_has out "on 0 GPUs"
t_end

t_begin "model inspect: bad input"
t_run 1 gpumod model inspect "$T/nope.gguf"
t_has err "nope.gguf"
printf 'not a gguf file at all' >"$T/bad.gguf"
t_run 1 gpumod model inspect "$T/bad.gguf"
t_has err "bad.gguf"
t_run 2 gpumod model inspect
t_has err "missing FILE"
t_run 2 gpumod model inspect "$T/bad.gguf" --cache-type-k q9_9
t_has err "--cache-type-k: unknown type 'q9_9'"
t_end

t_begin "a declared gpu_mb above the estimate binds: preflight and simulate say so"
C2=$T/config-floor
mkdir -p "$C2/presets"
printf 'id: floor\ndriver: llamacpp\nport: 7075\nmodel_path: %s\ncontext_size: 2048\nmemory: {gpu_mb: 20000}\n' \
    "$MODELS/aidreams260K-f32.gguf" >"$C2/presets/floor.yaml"
with_gpu
GPUMOD_PROC_ROOT=$P/healthy t_run 0 gpumod --config-dir "$C2" preflight --for floor --json
t_jq out .need.source declared
t_jq out '.need.gpu_bytes["0"]' $((20000 * MIB))
t_jq out '.need.detail | test("^estimated from .*; declared memory.gpu_mb binds: gpu 0 20000 MiB > estimate [0-9]+ MiB$")' true
GPUMOD_PROC_ROOT=$P/healthy t_run 0 gpumod --config-dir "$C2" simulate service floor
t_has out "need (declared): host"
t_has out "declared memory.gpu_mb binds: gpu 0 20000 MiB > estimate"
with_gpu 24576 10000
GPUMOD_PROC_ROOT=$P/healthy t_run 1 gpumod --config-dir "$C2" preflight --for floor --json
t_jq out .binding gpu.0.free
t_jq out .reason "GPU 0 free 14576 MiB < required 21024 MiB (need 20000 + margin 1024)"
t_end

t_begin "a declared gpu_mb below the estimate: the estimate binds, config check warns"
printf 'id: floor\ndriver: llamacpp\nport: 7075\nmodel_path: %s\ncontext_size: 2048\nmemory: {gpu_mb: 0}\n' \
    "$MODELS/llama-2-tiny-random.gguf" >"$C2/presets/floor.yaml"
with_gpu
GPUMOD_PROC_ROOT=$P/healthy t_run 0 gpumod --config-dir "$C2" preflight --for floor --json
t_jq out .need.source estimate
t_jq out '.need.gpu_bytes["0"] > 0' true
printf 'id: low\ndriver: llamacpp\nport: 7076\nmodel_path: %s\ncontext_size: 2048\nmemory: {gpu_mb: 1}\n' \
    "$MODELS/llama-2-tiny-random.gguf" >"$C2/presets/low.yaml"
rm -f "$C2/presets/floor.yaml"
PATH=/usr/bin:/bin t_run 2 gpumod --config-dir "$C2" config check
t_has err "$C2/presets/low.yaml:1:1: warning: preset 'low': memory.gpu_mb 1 MiB is below the estimate of "
t_has err "MiB from '$MODELS/llama-2-tiny-random.gguf' (-c 2048, --parallel 1): the estimate is used: a declaration can raise the need, never lower it"
t_end

t_done
