#!/usr/bin/env bash
# gpumod doctor over fixture hosts (tests/fixtures/doctor/<case>/{proc,sys,
# etc,units}): a healthy host passes every check, an unhealthy one gets the
# verdict, figures and fix of each problem and exit 1; --json's shape; a
# configuration error is exit 2.
. "$(dirname "$0")/lib.sh"

D=$FIXTURES/doctor
C=$T/config
mkdir -p "$C/presets"
printf 'id: chat\ndriver: command\nport: 7070\ncommand: [/bin/sleep, "1000"]\nstartup_timeout: 120s\nmemory: {gpu_mb: 100, host_mb: 100}\n' \
    >"$C/presets/chat.yaml"
export GPUMOD_FAKE_NVML_STATE=$T/nvml.json GPUMOD_NVML_LIB=$BUILD/fakes/libnvidia-ml.so.1
nvml_state() {
    printf '{"devices": [{"index": 0, "uuid": "GPU-aaaa", "name": "Fake 24GB", "total_mb": 24576,
              "base_used_mb": 500, "memory": "ok"}], "processes": [], "release_delay_ms": 0%s}\n' "${1:-}" >"$T/nvml.new"
    mv "$T/nvml.new" "$T/nvml.json"
}
host() {
    export GPUMOD_PROC_ROOT=$D/$1/proc GPUMOD_SYS_ROOT=$D/$1/sys GPUMOD_ETC_ROOT=$D/$1/etc GPUMOD_UNIT_DIR=$D/$1/units
}

t_begin "healthy host: every check ok or skipped, exit 0"
host healthy
nvml_state
t_run 0 gpumod doctor
t_has out "gpumod doctor: 12 checks: 11 ok, 0 warn, 0 fail, 1 info, 0 skipped"
t_has out "[ok  ] zfs-arc"
t_has out "ARC max 2.0 GiB (8% of RAM 23.5 GiB; limit 1/8 = 2.9 GiB), now 1.0 GiB"
t_has out "persisted as 2147483648 in $D/healthy/etc/modprobe.d/zfs.conf:2"
t_has out "vm.min_free_kbytes 262144 (256 MiB"
t_has out "swap 4.0 GiB on 1 device(s), 0% in use"
t_has out "systemd-oomd runs (pid 812)"
t_has out "1 gpumod unit(s) run exactly their preset's argv"
t_has out "2 unit(s) read, 1 with Restart="
t_match out "NVML answered for 1 GPU\(s\) in [0-9]+ ms"
t_has out "[info] compact-memory"
t_lacks out "[warn]"
t_end

t_begin "healthy host --json: one object per check, ok true"
t_run 0 gpumod doctor --json
t_jq out .ok true
t_jq out '.checks | length' 12
t_jq out '[.checks[].id] | join(" ")' "zfs-arc min-free-kbytes swap fragmentation psi restart-loops restart-always-ports start-timeout stale-units nvml systemd-oomd compact-memory"
t_jq out '[.checks[] | select(.status == "ok")] | length' 11
t_jq out '.checks[] | select(.id == "zfs-arc") | .fix' null
t_jq out '.checks[] | select(.id == "compact-memory") | .status' info
t_jq out '.counts.fail' 0
t_jq out .units 2
t_jq out .config.presets 1
t_end

t_begin "unhealthy host: each problem with its figures and fix, exit 1"
host unhealthy
nvml_state ', "call_delay_ms": {"nvmlDeviceGetMemoryInfo_v2": 30000}'
printf 'memory:\n  nvml_timeout: 300ms\n' >"$C/gpumod.yaml"
t_run 1 gpumod doctor
t_has out "gpumod doctor: 12 checks: 0 ok, 5 warn, 4 fail, 3 info, 0 skipped"
t_has out "ARC max 11.8 GiB (50% of RAM 23.5 GiB; limit 1/8 = 2.9 GiB)"
t_has out "zfs_arc_max 0 (the module's default); not persisted in modprobe.d or the kernel command line"
t_has out "'options zfs zfs_arc_max=3159359488' in"
t_has out "vm.min_free_kbytes 16384 (16 MiB"
t_has out "[info] swap"
t_has out "[fail] fragmentation"
t_has out "0 free blocks of order >= 9 (2 MiB and larger) hold 0 MiB (gate minimum 2048 MiB)"
t_has out "[fail] psi"
t_has out "full avg10 25.40%"
t_has out "ollama.service: Restart=always with RestartSec 5.0s x StartLimitBurst 5 = 25s >="
t_has out "ollama.service listens on port 7070, preset"
t_has out "gpumod-chat.service: TimeoutStartSec 30s <"
t_has out "startup_timeout (no load measured yet)"
t_has out "120s"
t_has out "gpumod-chat.service: argv[1] is '500', preset 'chat' has '1000'"
t_has out "NVML did not answer within 300 ms"
t_has out "systemd-oomd does not run"
t_has out "never write /proc/sys/vm/compact_memory"
t_end

t_begin "unhealthy host --json: statuses by id, fixes present, ok false"
t_run 1 gpumod doctor --json
t_jq out .ok false
t_jq out '[.checks[] | "\(.id)=\(.status)"] | join(" ")' "zfs-arc=warn min-free-kbytes=warn swap=info fragmentation=fail psi=fail restart-loops=warn restart-always-ports=fail start-timeout=warn stale-units=warn nvml=fail systemd-oomd=info compact-memory=info"
t_jq out '[.checks[] | select(.status == "fail" or .status == "warn") | select(.fix == null)] | length' 0
t_end

t_begin "no ZFS, no PSI, no NVML library: skipped, not failed"
export GPUMOD_PROC_ROOT=$FIXTURES/proc/no-psi GPUMOD_SYS_ROOT=$T/nosys GPUMOD_ETC_ROOT=$T/noetc GPUMOD_UNIT_DIR=$T/nounits
export GPUMOD_NVML_LIB=$T/no-libnvidia-ml.so.1
rm -f "$C/gpumod.yaml"
t_run 0 gpumod doctor --json
t_jq out '.checks[] | select(.id == "zfs-arc") | .status' skip
t_jq out '.checks[] | select(.id == "psi") | .status' skip
t_jq out '.checks[] | select(.id == "nvml") | .status' skip
t_jq out '.checks[] | select(.id == "min-free-kbytes") | .summary' "vm.min_free_kbytes could not be read"
t_jq out .unit_dirs "$T/nounits (absent)"
t_end

t_begin "a configuration error: the report, the diagnostics and exit 2; a stray argument: exit 2"
printf 'memory: {nvml_timeout: soon}\n' >"$C/gpumod.yaml"
t_run 2 gpumod doctor
t_has out "gpumod doctor: 12 checks"
t_has err "the configuration in '$C' has errors"
t_has err "gpumod.yaml"
rm -f "$C/gpumod.yaml"
t_run 2 gpumod doctor extra
t_has err "doctor: unexpected argument 'extra'"
t_end

t_done
