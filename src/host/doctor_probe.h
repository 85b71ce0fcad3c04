/* doctor_probe.h - read what `gpumod doctor` judges: /proc and /sys files,
 * modprobe.d, the unit files, NVML's answer and how long it took.
 *
 * Roots: GPUMOD_PROC_ROOT (else /proc), GPUMOD_SYS_ROOT (else /sys),
 * GPUMOD_ETC_ROOT (else /etc, for modprobe.d); units from GPUMOD_UNIT_DIR
 * when set, else ~/.config/systemd/user and /etc/systemd/system.  Only
 * reads; nothing here writes, runs a program or talks to systemd. */
#ifndef GPUMOD_DOCTOR_PROBE_H
#define GPUMOD_DOCTOR_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/doctor.h"

typedef struct doctor_probe_opts {
    const char *nvml_lib;    /* NULL: $GPUMOD_NVML_LIB, else libnvidia-ml.so.1 */
    int64_t nvml_timeout_ms; /* memory.nvml_timeout */
} doctor_probe_opts;

/* Fill h.  Never fails as a whole: each part says whether it was read. */
void doctor_probe_host(doc_host *h, const doctor_probe_opts *o);

/* Every *.service file directly in the unit directories, sorted by
 * directory then name; a name already seen in an earlier directory is
 * skipped (systemd's precedence).  *out is malloc'ed: release each with
 * doctor_unit_release and free the array.  dirs gets the directories
 * looked at, joined by ", " (for the report). */
void doctor_probe_units(doc_unit **out, size_t *n, char *dirs, size_t dirslen);

#endif
