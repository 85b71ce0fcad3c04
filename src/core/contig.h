/* contig.h - can the buddy lists judge contiguity?  The free lists of
 * /proc/buddyinfo add up to MemFree on a host whose memory the kernel has
 * put on them; a VM, or a large host whose memory the kernel initialises
 * lazily (the H200 of tests/fixtures/device/h200: MemFree 124 GiB, lists
 * 3 GiB), keeps most free memory off the lists at first, and counting the
 * lists there would call a healthy host fragmented.  Pure; used by the
 * gate's contiguity rule, `gpumod gpu`, preflight's JSON and doctor. */
#ifndef GPUMOD_CONTIG_H
#define GPUMOD_CONTIG_H

#include <stdbool.h>
#include <stddef.h>

#include "host/types.h"

/* True when buddyinfo and meminfo were read and the lists hold at least
 * half of MemFree.  When not, why (for display; why may be NULL). */
bool contig_known(const host_mem *h, char *why, size_t whylen);

#endif
