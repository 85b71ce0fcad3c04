/* tier.h - residency tiers: how a service leaves the GPU short of a stop
 * (docs/modes.md).  Pure: which tier a preset's sleep_mode gives on this
 * host, what a sleeper is predicted to hold when none of its sleeps was
 * measured, what a sleep must pass the gate with, and the wake time to
 * expect before one was measured.
 *
 *   stop    the process ends; everything it held comes back
 *   l1      vLLM level 1: the weights are copied to pinned host RAM, the KV
 *           cache is freed; the GPU keeps the CUDA context.  On a unified-
 *           memory host the "host RAM" is the same pool: nothing is freed
 *   l2      vLLM level 2: weights and KV freed; a wake reloads the weights
 *   router  llama.cpp router mode: every loaded model unloaded; the router
 *           process stays, holding no model
 *
 * Figures that are not measured are predictions from what the service
 * holds awake, on the side of holding more (a sleeper predicted too large
 * only makes a plan stop it). */
#ifndef GPUMOD_TIER_H
#define GPUMOD_TIER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/gate.h"

typedef enum { TIER_STOP, TIER_L1, TIER_L2, TIER_ROUTER, TIER__COUNT } tier;
extern const char *const tier_names[]; /* "stop" "l1" "l2" "router", NULL-terminated */

/* What a GPU keeps for a sleeping engine (its CUDA context, the router
 * process without models) per device it used, when not measured. */
#define TIER_GPU_RESIDUE_BYTES (512ull << 20)

/* The tier of a preset: sleep, its sleep_mode (config.h's SLEEP_*) with its driver
 * (DRV_*): l1/l2 only for vllm, router only for llamacpp (router mode);
 * anything else TIER_STOP.  On a unified-memory host l1 and l2 are
 * TIER_STOP unless unified_sleep (memory.unified_sleep). */
tier tier_for(int sleep, int driver, bool unified_host, bool unified_sleep);

/* What a service of tier t is predicted to hold asleep, from what it holds
 * awake (awake: its footprint, else its admitted need) and its weights'
 * bytes (0: unknown).  Source "predicted" unless t is TIER_STOP (all
 * zero).  Per GPU of awake: min(bytes, TIER_GPU_RESIDUE_BYTES).  Host: l1
 * adds the weights (unknown: every GPU byte above the residue), l2 and
 * router keep awake's host bytes.  On a unified host an l1 sleep holds
 * what awake holds (it frees nothing). */
void tier_asleep_need(tier t, const need *awake, uint64_t weights_bytes, bool unified_host,
                      need *out);

/* The need a sleep must pass the gate with before it is asked for: l1's
 * host side (the weights copied into pinned host RAM: host_bytes as
 * tier_asleep_need adds them, pageable_host false, no GPU bytes).  True
 * and out filled for l1 on a discrete host; false for every other tier
 * (nothing moves onto the host) and for l1 on a unified host (nothing
 * moves at all). */
bool tier_sleep_admission(tier t, const need *awake, uint64_t weights_bytes, bool unified_host,
                          need *out);

/* The wake time to expect when none was measured for this config hash:
 * l1 copies the weights back from pinned host memory (TIER_L1_BPS, plus
 * TIER_WAKE_BASE_MS), l2 reads them again (TIER_L2_BPS plus the base),
 * router loads its default model (load_ms when known, else as l2).
 * Weights unknown (0): the GPU bytes of awake stand in.  -1 for
 * TIER_STOP. */
#define TIER_L1_BPS (8ull << 30)
#define TIER_L2_BPS (2ull << 30)
#define TIER_WAKE_BASE_MS 1000
int64_t tier_wake_prior_ms(tier t, const need *awake, uint64_t weights_bytes, int64_t load_ms);

/* Whether leaving by sleep is expected to cost less than a stop, for a
 * service that will be wanted again: its wake (wake_ms, measured or the
 * prior) is shorter than a cold load (load_ms, measured; -1 unknown).  A
 * wake time unknown (-1) is never cheaper; a load time unknown with a
 * wake time known is (a cold start also spawns and initialises the
 * engine). */
bool tier_sleep_cheaper(int64_t wake_ms, int64_t load_ms);

#endif
