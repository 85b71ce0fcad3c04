/* contig.c - whether /proc/buddyinfo can judge contiguity (contig.h).
 * Pure. */
#include "core/contig.h"

#include <stdio.h>

static unsigned long long mib_down(uint64_t x)
{
    return (unsigned long long)(x >> 20);
}

bool contig_known(const host_mem *h, char *why, size_t whylen)
{
    const char *w = NULL;
    if (!h->buddyinfo_ok) w = "/proc/buddyinfo could not be read";
    else if (!h->meminfo_ok) w = "MemFree unknown: /proc/meminfo could not be read";
    else if (h->buddy_free_bytes < h->mem_free / 2) w = "";
    if (!w) return true;
    if (why && whylen) {
        if (*w) snprintf(why, whylen, "%s", w);
        else
            snprintf(why, whylen,
                     "the buddy lists hold %llu MiB of %llu MiB MemFree: the kernel has not put the rest on its "
                     "free lists (lazily initialised memory), so they cannot tell fragmentation",
                     mib_down(h->buddy_free_bytes), mib_down(h->mem_free));
    }
    return false;
}
