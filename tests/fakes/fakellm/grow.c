/* grow.c - fakellm that keeps allocating past what it loaded, for the
 * memory watchdog's tests: every FAKELLM_GROW_INTERVAL_MS (default 100)
 * it adds FAKELLM_GPU_GROW_MB to its entries in the fake NVML state (on
 * top of FAKELLM_GPU_MB, per device) and FAKELLM_RAM_GROW_MB of real,
 * touched host memory, until FAKELLM_GPU_GROW_MAX_MB / FAKELLM_RAM_GROW_MAX_MB
 * (defaults 1 TiB and 1024 MiB: the host side is real memory, so it is
 * capped by default).  Growth starts when the model is loaded, or at the
 * load's start with FAKELLM_GROW_FROM=load (an engine that keeps
 * allocating while it loads).
 *
 * The host memory is one mapping of the cap, touched a step at a time,
 * so RSS grows as a watcher polls it; this process holds it, even with
 * FAKELLM_FORK_WORKER (the group's RSS is what a manager measures).
 * Kept apart from load.c so the scripted load stays as it was. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakellm.h"

#define PAGE 4096

static uv_timer_t grow_timer;
static bool started;
static long gpu_added, ram_added; /* MiB added so far */
static char *gram;                /* the RAM growth mapping (the cap) */
static size_t gram_len, gram_touched;

/* "N" or "N,M,..." (FAKELLM_GPU_MB) with add MiB on each value. */
static char *gpu_spec(long add)
{
    /* with a worker, the worker's own entry holds FAKELLM_GPU_MB: ours is growth only */
    const char *base = fk.env.gpu_mb && !fk.env.fork_worker ? fk.env.gpu_mb : "0";
    buf b = BUF_INIT;
    for (const char *p = base; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) { /* malformed: nvml.c reports it at load; grow the first figure only */
            buf_release(&b);
            return xasprintf("%ld", add);
        }
        buf_printf(&b, "%s%ld", b.len ? "," : "", v + add);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            break;
    }
    return buf_detach(&b);
}

static void grow_tick(uv_timer_t *t)
{
    if (fk.state == FK_SLEEPING)
        return;
    char err[256];
    bool grew = false;
    long gstep = fk.env.gpu_grow_max_mb - gpu_added;
    if (gstep > fk.env.gpu_grow_mb)
        gstep = fk.env.gpu_grow_mb;
    if (gstep > 0) {
        char *spec = gpu_spec(gpu_added + gstep);
        if (nvml_register(getpid(), spec, err, sizeof err) < 0)
            fk_log('W', "srv:grow", "cannot update the fake NVML state: %s", err);
        else
            gpu_added += gstep;
        free(spec);
        grew = true;
    }
    long rstep = fk.env.ram_grow_max_mb - ram_added;
    if (rstep > fk.env.ram_grow_mb)
        rstep = fk.env.ram_grow_mb;
    if (rstep > 0 && gram) {
        ram_added += rstep;
        size_t upto = (size_t)ram_added << 20;
        for (; gram_touched < upto && gram_touched < gram_len; gram_touched += PAGE)
            gram[gram_touched] = 1;
        grew = true;
    }
    if (grew)
        fk_log('I', "srv:grow", "allocated %ld MiB more on the GPU and %ld MiB more on the host so far", gpu_added,
               ram_added);
    else
        uv_timer_stop(t); /* both caps reached */
}

void grow_start(void)
{
    if (started || (!fk.env.gpu_grow_mb && !fk.env.ram_grow_mb))
        return;
    if (!fk.env.grow_from_load && fk.state != FK_READY)
        return;
    started = true;
    if (fk.env.ram_grow_mb && fk.env.ram_grow_max_mb) {
        gram_len = (size_t)fk.env.ram_grow_max_mb << 20;
        gram = mmap(NULL, gram_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (gram == MAP_FAILED) {
            fk_log('W', "srv:grow", "mmap %ld MiB: %s: no host growth", fk.env.ram_grow_max_mb, strerror(errno));
            gram = NULL;
            gram_len = 0;
        }
    }
    if (fk.env.gpu_grow_mb && !getenv("GPUMOD_FAKE_NVML_STATE"))
        fk_log('W', "srv:grow", "FAKELLM_GPU_GROW_MB without GPUMOD_FAKE_NVML_STATE: no GPU growth");
    uv_timer_init(fk.loop, &grow_timer);
    uv_timer_start(&grow_timer, grow_tick, (uint64_t)fk.env.grow_interval_ms, (uint64_t)fk.env.grow_interval_ms);
}

void grow_release(void)
{
    if (gram)
        munmap(gram, gram_len);
    gram = NULL;
    gram_len = gram_touched = 0;
}
