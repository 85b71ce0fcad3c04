/* tier.c - residency tiers' rules (tier.h). */
#include "core/tier.h"

#include <string.h>

#include "config/config.h"

const char *const tier_names[] = {"stop", "l1", "l2", "router", NULL};

tier tier_for(int sleep, int driver, bool unified_host, bool unified_sleep)
{
    if (driver == DRV_VLLM && (sleep == SLEEP_L1 || sleep == SLEEP_L2)) {
        if (unified_host && !unified_sleep) return TIER_STOP;
        return sleep == SLEEP_L1 ? TIER_L1 : TIER_L2;
    }
    if (driver == DRV_LLAMACPP && sleep == SLEEP_ROUTER) return TIER_ROUTER;
    return TIER_STOP;
}

static uint64_t gpu_sum(const need *n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n->ngpu; i++)
        t += n->gpu[i].bytes;
    return t;
}

/* The GPU bytes above the residue: what an l1 sleep moves when the
 * weights' size is unknown. */
static uint64_t gpu_above_residue(const need *n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n->ngpu; i++)
        if (n->gpu[i].bytes > TIER_GPU_RESIDUE_BYTES) t += n->gpu[i].bytes - TIER_GPU_RESIDUE_BYTES;
    return t;
}

static uint64_t l1_moved(const need *awake, uint64_t weights_bytes)
{
    uint64_t above = gpu_above_residue(awake);
    if (!weights_bytes) return above;
    return weights_bytes < above ? weights_bytes : above;
}

void tier_asleep_need(tier t, const need *awake, uint64_t weights_bytes, bool unified_host,
                      need *out)
{
    memset(out, 0, sizeof *out);
    if (t == TIER_STOP) return;
    strcpy(out->source, "predicted");
    if (t == TIER_L1 && unified_host) {
        *out = *awake;
        strcpy(out->source, "predicted");
        return;
    }
    out->pageable_host = awake->pageable_host;
    out->ngpu = awake->ngpu;
    for (size_t i = 0; i < awake->ngpu; i++) {
        out->gpu[i].index = awake->gpu[i].index;
        uint64_t b = awake->gpu[i].bytes;
        out->gpu[i].bytes = b < TIER_GPU_RESIDUE_BYTES ? b : TIER_GPU_RESIDUE_BYTES;
    }
    out->host_bytes = awake->host_bytes;
    if (t == TIER_L1) {
        out->host_bytes += l1_moved(awake, weights_bytes);
        out->pageable_host = false; /* pinned */
    }
}

bool tier_sleep_admission(tier t, const need *awake, uint64_t weights_bytes, bool unified_host,
                          need *out)
{
    memset(out, 0, sizeof *out);
    if (t != TIER_L1 || unified_host) return false;
    strcpy(out->source, "predicted");
    out->host_bytes = l1_moved(awake, weights_bytes);
    out->pageable_host = false;
    return true;
}

int64_t tier_wake_prior_ms(tier t, const need *awake, uint64_t weights_bytes, int64_t load_ms)
{
    if (t == TIER_STOP) return -1;
    if (t == TIER_ROUTER && load_ms >= 0) return load_ms;
    uint64_t bytes = weights_bytes ? weights_bytes : gpu_sum(awake);
    uint64_t bps = t == TIER_L1 ? TIER_L1_BPS : TIER_L2_BPS;
    return TIER_WAKE_BASE_MS + (int64_t)(bytes / (bps / 1000));
}

bool tier_sleep_cheaper(int64_t wake_ms, int64_t load_ms)
{
    if (wake_ms < 0) return false;
    if (load_ms < 0) return true;
    return wake_ms < load_ms;
}
