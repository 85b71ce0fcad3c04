#!/bin/sh
# device check for src/host: real NVML, real nvidia-smi, a real GPU process
set -u
O=${OUT:-/tmp/devcheck}; mkdir -p "$O"; D=tests/device
CF="-std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Isrc"
cc $CF -o "$O/snap" $D/snap.c src/host/nvml.c src/host/smi.c src/host/snapshot.c src/host/procmem.c \
   src/util/run.c src/util/buf.c src/util/strv.c -lm >"$O/cc.log" 2>&1 || { cat "$O/cc.log"; exit 1; }
cc -std=c17 -D_GNU_SOURCE -O2 -o "$O/cuhold" $D/cuhold.c >>"$O/cc.log" 2>&1
echo "== idle, NVML"; timeout 20 "$O/snap"
echo "== idle, nvidia-smi (no NVML lib)"; timeout 30 "$O/snap" /nonexistent/libnvidia-ml.so.1
echo "== holding 1 GiB"
"$O/cuhold" >"$O/cuhold.log" 2>&1 &
H=$!; i=0
while kill -0 $H 2>/dev/null && ! grep -q cuMemAlloc "$O/cuhold.log" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
cat "$O/cuhold.log"; sleep 1
echo "-- NVML"; timeout 20 "$O/snap"
echo "-- nvidia-smi"; timeout 30 "$O/snap" /nonexistent/libnvidia-ml.so.1
nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits
kill -9 $H; wait $H 2>/dev/null
echo "== after kill"; sleep 1; timeout 20 "$O/snap"
echo "== /proc/driver/nvidia"; ls /proc/driver/nvidia 2>&1
echo done
