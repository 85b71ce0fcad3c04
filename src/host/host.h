/* host.h - taking a snapshot of what the host has (host/types.h holds
 * the values, so src/core can judge them without touching the world),
 * and the /proc readers it is made of. */
#ifndef GPUMOD_HOST_H
#define GPUMOD_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "host/types.h"

/* Take a snapshot.  Never fails as a whole: what could not be read is
 * flagged (meminfo_ok, nvml, ...).  Release with snapshot_release. */
void snapshot_take(snapshot *s, const snapshot_opts *o);
void snapshot_release(snapshot *s);

/* Parts, for tests and for the daemon's watchdog. */
int procmem_read_meminfo(host_mem *m, const char *proc_root, char *err, size_t errlen);
int procmem_read_buddyinfo(host_mem *m, const char *proc_root, char *err, size_t errlen);
int procmem_read_psi(host_mem *m, const char *proc_root, char *err, size_t errlen);
/* Parse texts (no I/O): used by the readers above. */
int procmem_parse_meminfo(host_mem *m, const char *text, char *err, size_t errlen);
int procmem_parse_buddyinfo(host_mem *m, const char *text, uint64_t page_size, char *err, size_t errlen);
int procmem_parse_psi(host_mem *m, const char *text, char *err, size_t errlen);

#endif
