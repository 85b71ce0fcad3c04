#!/bin/sh
# run-probe.sh - the device check: NVML facts and a real GPU host's /proc
# files, written to $OUT (see tests/device/README.md).
set -u
out=${OUT:-/tmp/probe}
mkdir -p "$out"
cc -std=c17 -D_GNU_SOURCE -O2 -o "$out/nvml-probe" tests/device/nvml-probe.c -ldl 2>"$out/cc.err"
timeout 30 "$out/nvml-probe" >"$out/nvml.json" 2>"$out/nvml.err"
timeout 30 nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw --format=csv,noheader,nounits >"$out/smi-gpu.csv" 2>&1
timeout 30 nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits >"$out/smi-apps.csv" 2>&1
timeout 30 nvidia-smi >"$out/smi.txt" 2>&1
cp /proc/meminfo "$out/meminfo"; cp /proc/buddyinfo "$out/buddyinfo"
cat /proc/pressure/memory >"$out/pressure-memory" 2>&1
getconf PAGESIZE >"$out/pagesize"
ls -l /proc/driver/nvidia/ >"$out/proc-driver-nvidia.txt" 2>&1
cat /proc/driver/nvidia/version >>"$out/proc-driver-nvidia.txt" 2>&1
/usr/bin/time -v sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits >/dev/null; done' 2>"$out/smi-time.txt"
(make -s build/gpumod >"$out/make.log" 2>&1 && build/gpumod --version >>"$out/make.log" 2>&1) || true
echo done
