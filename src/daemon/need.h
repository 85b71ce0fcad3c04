/* need.h - what a service will take: the one function every start path
 * asks (preflight, simulate, the daemon).  The base is a measured
 * footprint for the same config hash, else the estimate from the model
 * file (llama.cpp) or the memory vLLM reserves (gpu_memory_utilization x
 * total).  The preset's declared memory / vram_mb is a floor over that
 * base, figure by figure (host, each GPU): max(declared, base), so a
 * declaration can raise the need, never lower it below what the model
 * takes.  With no base, the declaration alone; with neither, an error
 * saying what is missing.  The result names the source that bound:
 * "declared" when a declared figure raised the base (the detail says
 * which, and over what), else the base's own. */
#ifndef GPUMOD_NEED_H
#define GPUMOD_NEED_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "core/gate.h"
#include "host/types.h"
#include "model/estimate.h"
#include "store/db.h"

typedef struct need_detail {
    need n;
    char hash[65];
    bool has_estimate;
    estimate est;     /* when has_estimate (llama.cpp single model) */
    char detail[1024]; /* how it was found (and what bound), for display */
} need_detail;

/* st may be NULL (no measurements).  0, or -1 with err. */
int service_need(const preset *p, const settings *s, const snapshot *snap, store *st, need_detail *out, char *err,
                 size_t errlen);
/* config check: 1 with warn filled when a llama.cpp preset declares less
 * GPU (or host) memory than its model's estimate, which the need then
 * uses instead; 0 when not, or when there is no estimate to compare. */
int need_declared_below(const preset *p, char *warn, size_t warnlen);
/* The need a measured footprint stands for (source "measured"), with a
 * detail that says how each figure was obtained: the host's RSS of the
 * process group, per GPU NVML's per-process figures, a unified device's
 * MemAvailable delta, or, for a partial footprint, the admitted bytes
 * ("measured (host) + admitted (gpu N) ..."). */
void need_from_footprint(const footprint *f, need_detail *out);
/* The estimator's parameters for a llama.cpp preset on this snapshot, and
 * the snapshot indices of the devices it uses (dev_index[0..ndev)). */
void need_est_params(const preset *p, const snapshot *snap, est_params *ep, int *dev_index);
/* Estimate a llama.cpp preset's need with explicit parameters (simulate's
 * alternatives).  0, or -1 with err. */
int need_from_estimate(const preset *p, const est_params *ep, const int *dev_index, need_detail *out, char *err,
                       size_t errlen);

#endif
