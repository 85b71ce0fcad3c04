/* smi.h - internal to src/host: the GPUs as nvidia-smi prints them, the
 * fallback when NVML cannot be loaded or initialised. */
#ifndef GPUMOD_HOST_SMI_H
#define GPUMOD_HOST_SMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"

/* The two queries smi_query runs (after the program name). */
#define SMI_GPU_FIELDS                                                                       \
    "index,uuid,name,pci.bus_id,memory.total,memory.used,memory.free,utilization.gpu,"       \
    "temperature.gpu,power.draw"
#define SMI_APP_FIELDS "gpu_uuid,pid,used_memory"

/* Run `smi --query-gpu=...` then `smi --query-compute-apps=...`, both
 * within timeout_ms (> 0) in all, and fill s->gpus / s->ngpus.  smi is a
 * path or a name looked up in PATH.  A device whose memory.total is not a
 * number ([N/A], [Not Supported]) is unified, its memory figures 0 for the
 * caller to fill from /proc/meminfo.  Returns 0, or -1 with err saying why
 * and s->ngpus 0; *found (may be NULL) tells "no nvidia-smi" (false) from
 * "it ran and failed" (true). */
int smi_query(snapshot *s, const char *smi, int64_t timeout_ms, bool *found, char *err,
              size_t errlen);

/* The parsers smi_query uses, on `--format=csv,noheader,nounits` text.
 * smi_parse_gpus replaces s->gpus (releasing what was there);
 * smi_parse_apps adds each line to the device of that UUID (unknown UUIDs
 * are skipped).  0, or -1 with err naming the line and field. */
int smi_parse_gpus(snapshot *s, const char *csv, char *err, size_t errlen);
int smi_parse_apps(snapshot *s, const char *csv, char *err, size_t errlen);

#endif
