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

# nvml_slow: the fake NVML answers at once, but on a busy machine the query
# can take over doctor's 100 ms (DOC_NVML_WARN_MS); then, and only then,
# the nvml check warns that it was slow.  Sets NV_OK/NV_WARN (the nvml
# check's share of the counts) from what the check said; every other check
# is asserted exactly.
nvml_verdict() { # text output file
    if grep -qxF "[warn] nvml" "$1"; then
        local ms
        ms=$(sed -nE 's/^ +NVML answered for 1 GPU\(s\) in ([0-9]+) ms \(over 100 ms\)$/\1/p' "$1")
        [ -n "$ms" ] && [ "$ms" -gt 100 ] || t_fail "the nvml check warns, but not that it was slow"
        t_diag "the fake NVML took $ms ms (a busy machine): nvml warns that it was slow"
        NV_OK=0 NV_WARN=1
    else
        t_has "$1" "[ok  ] nvml"
        NV_OK=1 NV_WARN=0
    fi
}

t_begin "healthy host: every check ok or skipped, exit 0"
host healthy
nvml_state
t_run 0 gpumod doctor
nvml_verdict "$T/out"
t_has out "gpumod doctor: 13 checks: $((10 + NV_OK)) ok, $NV_WARN warn, 0 fail, 2 info, 0 skipped"
t_has out "[ok  ] zfs-arc"
t_has out "ARC max 2.0 GiB (8% of RAM 23.5 GiB; limit 1/8 = 2.9 GiB), now 1.0 GiB"
t_has out "persisted as 2147483648 in $D/healthy/etc/modprobe.d/zfs.conf:2"
t_has out "vm.min_free_kbytes 262144 (256 MiB, 1.06% of RAM) is within the bounds; advised 246784"
t_has out "Normal and Movable zones: free memory in blocks >= 256 KiB (the gate's figure) 2624 MiB (gate minimum 2048 MiB, for services that pin host memory); 642 free blocks of order >= 9 (2 MiB and larger) hold 2556 MiB"
t_has out "(node 0 Normal; warn above 0.5)"
t_lacks out "DMA32 included"
t_has out "root on ZFS (root=ZFS= on the kernel command line)"
t_has out "update-initramfs -u -k all, or dracut -f --regenerate-all"
t_has out "[info] start-timeout"
t_has out "gpumod-chat.service: the start ends at exec (Type=exec): the load is not bounded by TimeoutStartSec"
t_has out "swap 4.0 GiB on 1 device(s), 0% in use"
t_has out "systemd-oomd runs (pid 812)"
t_has out "1 gpumod unit(s) run exactly their preset's argv"
t_has out "2 unit(s) read, 1 with Restart="
t_match out "NVML answered for 1 GPU\(s\) in [0-9]+ ms"
t_has out "[info] compact-memory"
t_eq "$(grep -F "[warn]" "$T/out" | grep -vxF "[warn] nvml")" "" "checks that warn, nvml aside"
# the gate's figure is doctor's: Normal 6*512 + 636*1024 = 654336 pages x 4096 (2556 MiB) in
# 2 MiB blocks, and 112*64 + 49*128 + 15*256 pages more in blocks >= 256 KiB (2624 MiB)
t_run 0 gpumod gpu --json
t_jq out .host.contig_2m_bytes 2680160256
t_jq out .host.contig.bytes 2750939136
t_jq out .host.contig.state known
t_jq out .host.zones_counted Normal+Movable
t_end

t_begin "healthy host --json: one object per check, ok true"
t_run 0 gpumod doctor --json
t_jq out .ok true
t_jq out '.checks | length' 13
t_jq out '[.checks[].id] | join(" ")' "zfs-arc min-free-kbytes swap fragmentation psi unit-files restart-loops restart-always-ports start-timeout stale-units nvml systemd-oomd compact-memory"
t_jq out '[.checks[] | select(.id != "nvml" and .status == "ok")] | length' 10
# nvml: ok, or (a busy machine) the warn that says the query was slow
t_jq out '.checks[] | select(.id == "nvml") | .status == "ok" or
    (.status == "warn" and (.summary | test("^NVML answered for 1 GPU\\(s\\) in [0-9]+ ms \\(over 100 ms\\)$")))' true
t_jq out '.counts.warn == ([.checks[] | select(.id == "nvml" and .status == "warn")] | length)' true
t_jq out '.checks[] | select(.id == "zfs-arc") | .status' ok
t_jq out '.checks[] | select(.id == "swap") | .fix' null
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
t_has out "gpumod doctor: 13 checks: 1 ok, 4 warn, 4 fail, 4 info, 0 skipped"
t_has out "ARC max 11.8 GiB (50% of RAM 23.5 GiB; limit 1/8 = 2.9 GiB)"
t_has out "zfs_arc_max 0 (the module's default); not persisted in modprobe.d or the kernel command line"
t_has out "'options zfs zfs_arc_max=3159359488' in"
t_has out "vm.min_free_kbytes 16384 (16 MiB"
t_has out "[info] swap"
t_has out "[fail] fragmentation"
t_has out "free memory in blocks >= 256 KiB (the gate's figure) 5 MiB (gate minimum 2048 MiB, for services that pin host memory); 0 free blocks of order >= 9 (2 MiB and larger) hold 0 MiB"
t_has out "[fail] psi"
t_has out "full avg10 25.40%"
t_has out "ollama.service: Restart=always with RestartSec 5.0s x StartLimitBurst 5 = 25s >="
t_has out "ollama.service listens on port 7070 (from its ExecStart), preset"
t_has out "advised 246784 (241 MiB: 1% of RAM 23.5 GiB within 64 MiB..1 GiB), warn below 120 MiB"
t_has out "fix: sysctl -w vm.min_free_kbytes=246784"
t_has out "[info] start-timeout"
t_has out "gpumod-chat.service: argv[1] is '500', preset 'chat' has '1000'"
t_has out "NVML did not answer within 300 ms"
t_has out "systemd-oomd does not run"
t_has out "never write /proc/sys/vm/compact_memory"
t_end

t_begin "unhealthy host --json: statuses by id, fixes present, ok false"
t_run 1 gpumod doctor --json
t_jq out .ok false
t_jq out '[.checks[] | "\(.id)=\(.status)"] | join(" ")' "zfs-arc=warn min-free-kbytes=warn swap=info fragmentation=fail psi=fail unit-files=ok restart-loops=warn restart-always-ports=fail start-timeout=info stale-units=warn nvml=fail systemd-oomd=info compact-memory=info"
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

t_begin "both managers' directories, drop-ins, Environment=, EnvironmentFile=, parse errors by file:line"
R=$T/root
unset GPUMOD_UNIT_DIR XDG_CONFIG_HOME
export HOME=$R/home GPUMOD_ETC_ROOT=$R/etc GPUMOD_ROOT=$R GPUMOD_PROC_ROOT=$D/healthy/proc GPUMOD_SYS_ROOT=$D/healthy/sys
mkdir -p "$R/home/.config/systemd/user" "$R/etc/systemd/system/ollama.service.d" "$R/usr/lib/systemd/system" \
    "$R/lib/systemd/system/ollama.service.d" "$R/etc/systemd/system/gpumod-chat.service.d" "$R/etc/default" "$R/run/systemd/system"
cp "$D/healthy/units/gpumod-chat.service" "$R/home/.config/systemd/user/"
# the same name in the system manager: a second unit, Type=notify with a 30 s timeout that a drop-in lifts (0 = none)
sed -e 's/^Type=exec/Type=notify/' -e 's/^TimeoutStartSec=180/TimeoutStartSec=30/' \
    "$D/healthy/units/gpumod-chat.service" >"$R/etc/systemd/system/gpumod-chat.service"
printf '[Service]\nTimeoutStartSec=0\n' >"$R/etc/systemd/system/gpumod-chat.service.d/timeout.conf"
# Ollama as its installer writes it, its port set by `systemctl edit` (a drop-in in /etc); /lib's drop-in of the same name is hidden
printf '[Service]\nExecStart=/usr/local/bin/ollama serve\nRestart=always\nRestartSec=3\n' >"$R/usr/lib/systemd/system/ollama.service"
printf '[Service]\nEnvironment="OLLAMA_HOST=0.0.0.0:7070"\n' >"$R/etc/systemd/system/ollama.service.d/override.conf"
printf '[Service]\nEnvironment=OLLAMA_HOST=127.0.0.1:9999\n' >"$R/lib/systemd/system/ollama.service.d/override.conf"
# a neighbour whose port comes from an EnvironmentFile (under the roots), and whose continuation hides a comment line
printf '[Service]\nEnvironmentFile=-/etc/default/missing\nEnvironmentFile=/etc/default/web\nExecStart=/usr/bin/web \\\n  # --debug\n  --quiet\nRestart=always\nbogus line\n' \
    >"$R/run/systemd/system/web.service"
printf '# web\nWEB_PORT=7070\n' >"$R/etc/default/web"
# the ZFS cap persisted in /usr/lib/modprobe.d (modprobe reads it too), none in /etc
mkdir -p "$R/usr/lib/modprobe.d"
printf 'options zfs zfs_arc_max=2147483648\n' >"$R/usr/lib/modprobe.d/zfs.conf"
t_run 1 gpumod doctor
t_has out "user: $R/home/.config/systemd/user (1), $R/etc/systemd/user (absent), $R/usr/lib/systemd/user (absent); system: $R/etc/systemd/system (1), $R/run/systemd/system (1), $R/usr/lib/systemd/system (1), $R/lib/systemd/system (0): 4 in all"
t_has out "persisted as 2147483648 in $R/usr/lib/modprobe.d/zfs.conf:1"
t_has out "[ok  ] zfs-arc"
t_has out "[warn] unit-files"
t_has out "system:web.service: $R/run/systemd/system/web.service:8: expected 'Key=Value'"
t_has out "system:ollama.service listens on port 7070 (from its environment), preset 'chat''s port"
t_has out "system:web.service listens on port 7070 (from its environment)"
t_lacks out "9999"
t_has out "[info] start-timeout"
t_has out "2 gpumod unit(s) with a preset, 1 whose start ends at the exec: user:gpumod-chat.service: the start ends at exec (Type=exec)"
t_has out "2 gpumod unit(s) run exactly their preset's argv"
t_run 1 gpumod doctor --json
t_jq out '.units' 4
t_jq out '.checks[] | select(.id == "restart-always-ports") | .status' fail
t_jq out '.checks[] | select(.id == "unit-files") | .summary | test("1 unit\\(s\\) have 1 line")' true
t_end

t_begin "a configuration error: the report, the diagnostics and exit 2; a stray argument: exit 2"
printf 'memory: {nvml_timeout: soon}\n' >"$C/gpumod.yaml"
t_run 2 gpumod doctor
t_has out "gpumod doctor: 13 checks"
t_has err "the configuration in '$C' has errors"
t_has err "gpumod.yaml"
rm -f "$C/gpumod.yaml"
t_run 2 gpumod doctor extra
t_has err "doctor: unexpected argument 'extra'"
t_end

t_done
