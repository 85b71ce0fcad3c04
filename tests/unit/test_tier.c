/* test_tier.c - residency tiers: the tier of each sleep_mode and driver
 * (and the unified-memory default), what a sleeper is predicted to hold,
 * what an l1 sleep must pass the gate with, the wake prior and the
 * cheaper-than-a-stop rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "config/config.h"
#include "core/tier.h"

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static need awake_of(uint64_t host, uint64_t gpu0, uint64_t gpu1)
{
    need n;
    memset(&n, 0, sizeof n);
    strcpy(n.source, "measured");
    n.host_bytes = host;
    n.gpu[0].index = 0;
    n.gpu[0].bytes = gpu0;
    n.ngpu = 1;
    if (gpu1) {
        n.gpu[1].index = 1;
        n.gpu[1].bytes = gpu1;
        n.ngpu = 2;
    }
    return n;
}

static void tiers_of_modes(void **state)
{
    (void)state;
    assert_int_equal(tier_for(SLEEP_L1, DRV_VLLM, false, false), TIER_L1);
    assert_int_equal(tier_for(SLEEP_L2, DRV_VLLM, false, false), TIER_L2);
    assert_int_equal(tier_for(SLEEP_NONE, DRV_VLLM, false, false), TIER_STOP);
    assert_int_equal(tier_for(SLEEP_ROUTER, DRV_LLAMACPP, false, false), TIER_ROUTER);
    assert_int_equal(tier_for(SLEEP_ROUTER, DRV_LLAMACPP, true, false), TIER_ROUTER);
    /* the driver decides: llama.cpp cannot sleep at a vLLM level, others not at all */
    assert_int_equal(tier_for(SLEEP_L1, DRV_LLAMACPP, false, false), TIER_STOP);
    assert_int_equal(tier_for(SLEEP_L2, DRV_FASTAPI, false, false), TIER_STOP);
    assert_int_equal(tier_for(SLEEP_ROUTER, DRV_VLLM, false, false), TIER_STOP);
    /* unified memory: off unless memory.unified_sleep */
    assert_int_equal(tier_for(SLEEP_L1, DRV_VLLM, true, false), TIER_STOP);
    assert_int_equal(tier_for(SLEEP_L2, DRV_VLLM, true, false), TIER_STOP);
    assert_int_equal(tier_for(SLEEP_L1, DRV_VLLM, true, true), TIER_L1);
    assert_int_equal(tier_for(SLEEP_L2, DRV_VLLM, true, true), TIER_L2);
    assert_string_equal(tier_names[TIER_ROUTER], "router");
    assert_null(tier_names[TIER__COUNT]);
}

static void asleep_predictions(void **state)
{
    (void)state;
    need a = awake_of(2 * GiB, 20 * GiB, 0), o;
    /* l1, weights known: the GPU keeps the residue, the host gains the weights */
    tier_asleep_need(TIER_L1, &a, 14 * GiB, false, &o);
    assert_string_equal(o.source, "predicted");
    assert_int_equal(o.gpu[0].bytes, TIER_GPU_RESIDUE_BYTES);
    assert_int_equal(o.host_bytes, 16 * GiB);
    assert_false(o.pageable_host);
    /* weights unknown: every GPU byte above the residue moves */
    tier_asleep_need(TIER_L1, &a, 0, false, &o);
    assert_int_equal(o.host_bytes, 2 * GiB + 20 * GiB - TIER_GPU_RESIDUE_BYTES);
    /* weights larger than what the GPU holds: never more than it holds */
    tier_asleep_need(TIER_L1, &a, 40 * GiB, false, &o);
    assert_int_equal(o.host_bytes, 2 * GiB + 20 * GiB - TIER_GPU_RESIDUE_BYTES);
    /* l2 and router: nothing moves to the host */
    tier_asleep_need(TIER_L2, &a, 14 * GiB, false, &o);
    assert_int_equal(o.host_bytes, 2 * GiB);
    assert_int_equal(o.gpu[0].bytes, TIER_GPU_RESIDUE_BYTES);
    tier_asleep_need(TIER_ROUTER, &a, 0, false, &o);
    assert_int_equal(o.host_bytes, 2 * GiB);
    /* a small GPU figure stays as it is */
    need small = awake_of(0, 100 * MiB, 30 * GiB);
    tier_asleep_need(TIER_L2, &small, 0, false, &o);
    assert_int_equal(o.ngpu, 2);
    assert_int_equal(o.gpu[0].bytes, 100 * MiB);
    assert_int_equal(o.gpu[1].index, 1);
    assert_int_equal(o.gpu[1].bytes, TIER_GPU_RESIDUE_BYTES);
    /* unified: l1 frees nothing; l2 frees the GPU side */
    tier_asleep_need(TIER_L1, &a, 14 * GiB, true, &o);
    assert_int_equal(o.host_bytes, 2 * GiB);
    assert_int_equal(o.gpu[0].bytes, 20 * GiB);
    tier_asleep_need(TIER_L2, &a, 14 * GiB, true, &o);
    assert_int_equal(o.gpu[0].bytes, TIER_GPU_RESIDUE_BYTES);
    /* stop: nothing */
    tier_asleep_need(TIER_STOP, &a, 0, false, &o);
    assert_int_equal(o.host_bytes, 0);
    assert_int_equal(o.ngpu, 0);
    assert_string_equal(o.source, "");
}

static void sleep_admission(void **state)
{
    (void)state;
    need a = awake_of(GiB, 20 * GiB, 0), o;
    assert_true(tier_sleep_admission(TIER_L1, &a, 14 * GiB, false, &o));
    assert_int_equal(o.host_bytes, 14 * GiB);
    assert_int_equal(o.ngpu, 0);
    assert_false(o.pageable_host);
    assert_false(tier_sleep_admission(TIER_L1, &a, 14 * GiB, true, &o));
    assert_false(tier_sleep_admission(TIER_L2, &a, 14 * GiB, false, &o));
    assert_false(tier_sleep_admission(TIER_ROUTER, &a, 0, false, &o));
    assert_false(tier_sleep_admission(TIER_STOP, &a, 0, false, &o));
}

static void wake_prior_and_cost(void **state)
{
    (void)state;
    need a = awake_of(GiB, 20 * GiB, 0);
    assert_int_equal(tier_wake_prior_ms(TIER_L1, &a, 16 * GiB, -1), TIER_WAKE_BASE_MS + 2000);
    assert_int_equal(tier_wake_prior_ms(TIER_L2, &a, 16 * GiB, -1), TIER_WAKE_BASE_MS + 8000);
    assert_int_equal(tier_wake_prior_ms(TIER_L2, &a, 0, -1), TIER_WAKE_BASE_MS + 10000);
    assert_int_equal(tier_wake_prior_ms(TIER_ROUTER, &a, 0, 4321), 4321);
    assert_int_equal(tier_wake_prior_ms(TIER_STOP, &a, 0, 4321), -1);
    assert_true(tier_sleep_cheaper(3000, 60000));
    assert_false(tier_sleep_cheaper(60000, 3000));
    assert_false(tier_sleep_cheaper(3000, 3000));
    assert_false(tier_sleep_cheaper(-1, 60000));
    assert_true(tier_sleep_cheaper(3000, -1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tiers_of_modes),
        cmocka_unit_test(asleep_predictions),
        cmocka_unit_test(sleep_admission),
        cmocka_unit_test(wake_prior_and_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
