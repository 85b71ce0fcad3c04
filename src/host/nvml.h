/* nvml.h - internal to src/host: the NVML part of a snapshot.
 *
 * NVML is reached through dlopen on one dedicated thread; this header is
 * what snapshot.c (and the unit tests) call.  The NVML ABI itself (structs,
 * return codes) stays private to nvml.c. */
#ifndef GPUMOD_HOST_NVML_H
#define GPUMOD_HOST_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "host/host.h"

/* Query every GPU through the NVML library `lib` (a path or a soname for
 * dlopen), waiting at most timeout_ms (> 0) for the NVML thread.
 *
 * Fills s->gpus, s->ngpus and s->driver_version, and sets
 * s->nvidia_driver when NVML initialised (in this query, or for a hung
 * one in the last query that was answered).
 * A unified device (memory queries NOT_SUPPORTED, or total 0) comes back
 * with unified set and its memory figures 0: the caller fills them from
 * /proc/meminfo.  Each gpus[i].procs is malloc'ed (snapshot_release frees
 * it).
 *
 * Returns NVML_OK; NVML_ABSENT (the library cannot be loaded); NVML_FAILED
 * (it lacks a needed symbol, init failed, or a query failed: s->ngpus is
 * 0); NVML_HUNG (the deadline passed, or an earlier call is still running:
 * returned at once, no second call is started).  err says why for all but
 * NVML_OK.  Thread-safe: concurrent callers are served one after another,
 * each within its own deadline. */
nvml_state nvml_query(snapshot *s, const char *lib, int64_t timeout_ms, char *err,
                      size_t errlen);

#endif
