/* doctor_probe.h - read what `gpumod doctor` judges: /proc and /sys files,
 * modprobe.d, the unit files, NVML's answer and how long it took.
 *
 * Roots: GPUMOD_PROC_ROOT (else /proc), GPUMOD_SYS_ROOT (else /sys),
 * GPUMOD_ETC_ROOT (else /etc), GPUMOD_ROOT (else "", the prefix of /run,
 * /usr/lib and /lib); units from GPUMOD_UNIT_DIR when set, else systemd's
 * search path of each manager (user, system) under those roots.  Only
 * reads; nothing here writes, runs a program or talks to systemd. */
#ifndef GPUMOD_DOCTOR_PROBE_H
#define GPUMOD_DOCTOR_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "doctor/doctor.h"

typedef struct doctor_probe_opts {
    const char *nvml_lib;    /* NULL: $GPUMOD_NVML_LIB, else libnvidia-ml.so.1 */
    int64_t nvml_timeout_ms; /* memory.nvml_timeout */
} doctor_probe_opts;

/* Fill h.  Never fails as a whole: each part says whether it was read. */
void doctor_probe_host(doc_host *h, const doctor_probe_opts *o);

/* Every *.service file directly in the unit directories of the user
 * manager (~/.config/systemd/user, /etc/systemd/user, /usr/lib/systemd/user)
 * and of the system manager (/etc/systemd/system, /run/systemd/system,
 * /usr/lib/systemd/system, /lib/systemd/system).  Within one manager the
 * first directory holding a name wins (a symlink there, an alias or mask,
 * hides it too); the two managers' units are kept apart (u->scope).  Each
 * unit gets its NAME.service.d/ *.conf drop-ins and EnvironmentFile=s.
 * *out is malloc'ed: release each with doctor_unit_release and free the
 * array.  dirs gets the directories looked at (for the report). */
void doctor_probe_units(doc_unit **out, size_t *n, char *dirs, size_t dirslen);

#endif
