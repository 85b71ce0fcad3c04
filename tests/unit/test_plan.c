/* test_plan.c - the switch plan on plain structs: which services stop,
 * stay and start and in what order, the vLLM warning, the memory the
 * stops give back (discrete, unified, several devices), reservations of
 * planned starts and of starts outside the switch, a refused plan with
 * every verdict still present, and the inputs it rejects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/plan.h"

#include "gate_fixture.h"

static plan P; /* large: kept off the stack */

static need mk_need(uint64_t host, int idx, uint64_t gpu)
{
    need n;
    memset(&n, 0, sizeof n);
    snprintf(n.source, sizeof n.source, "measured");
    n.host_bytes = host;
    if (idx >= 0) {
        n.gpu[0].index = idx;
        n.gpu[0].bytes = gpu;
        n.ngpu = 1;
    }
    return n;
}

static void need_add_gpu(need *n, int idx, uint64_t gpu)
{
    n->gpu[n->ngpu].index = idx;
    n->gpu[n->ngpu].bytes = gpu;
    n->ngpu++;
}

static plan_target tgt(const char *id, const char *hash, uint64_t host, int idx, uint64_t gpu)
{
    plan_target t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.hash = hash;
    t.need = mk_need(host, idx, gpu);
    return t;
}

static plan_running run_(const char *id, const char *hash, uint64_t host, int idx, uint64_t gpu)
{
    plan_running r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.hash = hash;
    r.held = mk_need(host, idx, gpu);
    return r;
}

/* "stop a, start b(ok), start c(refused gpu.0.free)" */
static const char *steps_str(const plan *p)
{
    static char b[2048];
    size_t n = 0;
    b[0] = '\0';
    for (size_t i = 0; i < p->nsteps; i++) {
        const plan_step *s = &p->steps[i];
        if (s->kind == PLAN_STOP)
            n += (size_t)snprintf(b + n, sizeof b - n, "%sstop %s", i ? ", " : "", s->id);
        else if (s->kind == PLAN_SLEEP)
            n += (size_t)snprintf(b + n, sizeof b - n, "%ssleep %s(%s)", i ? ", " : "", s->id,
                                  tier_names[s->tier]);
        else if (s->kind == PLAN_WAKE)
            n += (size_t)snprintf(b + n, sizeof b - n, "%swake %s(%s %s)", i ? ", " : "", s->id,
                                  tier_names[s->tier], s->v.ok ? "ok" : s->v.binding);
        else if (s->v.ok)
            n += (size_t)snprintf(b + n, sizeof b - n, "%sstart %s(ok)", i ? ", " : "", s->id);
        else
            n += (size_t)snprintf(b + n, sizeof b - n, "%sstart %s(refused %s)", i ? ", " : "",
                                  s->id, s->v.binding);
    }
    return b;
}

static const char *keep_str(const plan *p)
{
    static char b[1024];
    size_t n = 0;
    b[0] = '\0';
    for (size_t i = 0; i < p->nkeep; i++)
        n += (size_t)snprintf(b + n, sizeof b - n, "%s%s", i ? " " : "", p->keep[i]);
    return b;
}

static int make(const snapshot *s, const plan_running *r, size_t nr, const plan_target *t,
                size_t nt, const reservation *res, size_t nres, const gate_policy *pol)
{
    plan_input in = {.snap = s,
                     .running = r,
                     .nrunning = nr,
                     .target = t,
                     .ntarget = nt,
                     .res = res,
                     .nres = nres,
                     .policy = pol};
    char err[256] = "";
    int rc = plan_make(&in, &P, err, sizeof err);
    if (rc) fail_msg("plan_make: %s", err);
    return rc;
}

/* A -> B: embed is shared (same hash), chat leaves, coder comes. */
static void a_to_b(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 44 * GIB, false);
    policy_default(&pol);
    plan_running r[] = {run_("chat", "h-chat", 2 * GIB, 0, 30 * GIB),
                        run_("embed", "h-embed", 1 * GIB, 0, 4 * GIB)};
    plan_target t[] = {tgt("embed", "h-embed", 1 * GIB, 0, 4 * GIB),
                       tgt("coder", "h-coder", 3 * GIB, 0, 40 * GIB)};
    make(&s, r, 2, t, 2, NULL, 0, &pol);

    assert_true(P.ok);
    assert_null(P.refused);
    assert_string_equal(P.reason, "");
    assert_string_equal(keep_str(&P), "embed");
    assert_string_equal(steps_str(&P), "stop chat, start coder(ok)");
    assert_int_equal(P.nwarnings, 0);

    assert_int_equal(P.before.host_available_bytes, 64 * GIB);
    assert_int_equal(P.before.gpu_free_bytes[0], 44 * GIB);
    assert_int_equal(P.before.reserved_bytes[0], 0);
    /* chat's memory comes back */
    assert_int_equal(P.steps[0].after.host_available_bytes, 66 * GIB);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 74 * GIB);
    assert_int_equal(P.steps[0].after.reserved_bytes[0], 0);
    /* coder counted as a reservation after its start, the frees unchanged */
    assert_int_equal(P.steps[1].after.host_available_bytes, 66 * GIB);
    assert_int_equal(P.steps[1].after.gpu_free_bytes[0], 74 * GIB);
    assert_int_equal(P.steps[1].after.reserved_bytes[0], 40 * GIB);
    assert_int_equal(P.steps[1].after.reserved_host_bytes, 3 * GIB);
    assert_int_equal(P.steps[1].v.reserved_gpu_bytes[0], 0);
}

/* A changed config hash (or an unknown one) is stop then start; the
 * start fits only in the memory its own old instance gives back. */
static void changed_hash(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 10 * GIB, false);
    policy_default(&pol);
    plan_running r[] = {run_("chat", "h1", 2 * GIB, 0, 30 * GIB),
                        run_("embed", NULL, 1 * GIB, 0, 4 * GIB),
                        run_("tts", "h-tts", 1 * GIB, 0, 2 * GIB)};
    plan_target t[] = {tgt("tts", "h-tts", 1 * GIB, 0, 2 * GIB),
                       tgt("chat", "h2", 2 * GIB, 0, 35 * GIB),
                       tgt("embed", NULL, 1 * GIB, 0, 4 * GIB)};
    make(&s, r, 3, t, 3, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(keep_str(&P), "tts");
    assert_string_equal(steps_str(&P), "stop embed, stop chat, start chat(ok), start embed(ok)");
    assert_int_equal(P.steps[1].after.gpu_free_bytes[0], 44 * GIB);
}

/* start_first targets go first (stable, each group in the mode's order);
 * a vLLM service that is not the first start is warned about, naming it
 * and the one before it; a kept one is no start. */
static void start_first_and_vllm(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&pol);
    plan_target t[] = {tgt("a", "ha", 1 * GIB, 0, 1 * GIB), tgt("b", "hb", 1 * GIB, 0, 1 * GIB),
                       tgt("c", "hc", 1 * GIB, 0, 1 * GIB), tgt("d", "hd", 1 * GIB, 0, 1 * GIB),
                       tgt("e", "he", 1 * GIB, 0, 1 * GIB)};
    t[1].vllm = t[1].start_first = true;
    t[3].vllm = true;
    t[4].start_first = true;
    make(&s, NULL, 0, t, 5, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P),
                        "start b(ok), start e(ok), start a(ok), start c(ok), start d(ok)");
    assert_int_equal(P.nwarnings, 1);
    assert_string_equal(P.warnings[0],
                        "vLLM service 'd' is not started first ('b' starts before it): vLLM sizes "
                        "its memory from what is free when it starts");

    /* two lanes, both start_first: the second one is warned about */
    plan_target lanes[] = {tgt("lane1", "h1", 1 * GIB, 0, 1 * GIB),
                           tgt("lane2", "h2", 1 * GIB, 0, 1 * GIB)};
    lanes[0].vllm = lanes[0].start_first = lanes[1].vllm = lanes[1].start_first = true;
    make(&s, NULL, 0, lanes, 2, NULL, 0, &pol);
    assert_string_equal(steps_str(&P), "start lane1(ok), start lane2(ok)");
    assert_int_equal(P.nwarnings, 1);
    assert_non_null(
        strstr(P.warnings[0], "'lane2' is not started first ('lane1' starts before it)"));

    /* lane1 is kept (already running): lane2 is the first start, no warning */
    plan_running r[] = {run_("lane1", "h1", 1 * GIB, 0, 1 * GIB)};
    make(&s, r, 1, lanes, 2, NULL, 0, &pol);
    assert_string_equal(keep_str(&P), "lane1");
    assert_string_equal(steps_str(&P), "start lane2(ok)");
    assert_int_equal(P.nwarnings, 0);

    /* a plain start before a vLLM one without start_first */
    plan_target t2[] = {tgt("a", "ha", 1 * GIB, 0, 1 * GIB), tgt("v", "hv", 1 * GIB, 0, 1 * GIB)};
    t2[1].vllm = true;
    make(&s, NULL, 0, t2, 2, NULL, 0, &pol);
    assert_int_equal(P.nwarnings, 1);
    assert_non_null(strstr(P.warnings[0], "'v' is not started first ('a' starts before it)"));

    /* more warnings than slots: capped, never overflowing */
    plan_target many[6];
    static const char *ids[] = {"v0", "v1", "v2", "v3", "v4", "v5"};
    for (size_t i = 0; i < 6; i++) {
        many[i] = tgt(ids[i], "h", 1 * GIB, 0, 1 * GIB);
        many[i].vllm = true;
    }
    make(&s, NULL, 0, many, 6, NULL, 0, &pol);
    assert_int_equal(P.nwarnings, 4);
    assert_non_null(strstr(P.warnings[3], "'v4'"));
}

/* The start fits only in what the stops give back: the gate on the
 * measured snapshot refuses it, the plan passes.  The input snapshot is
 * not written, its procs left alone. */
static void fits_only_after_stops(void **state)
{
    (void)state;
    snapshot s, orig;
    gate_policy pol;
    host_ok(&s);
    s.host.mem_available = 6 * GIB;
    gpu_proc procs[1] = {{.pid = 4242, .used_bytes = 60 * GIB}};
    gpu_dev *d = add_gpu(&s, 0, 80 * GIB, 10 * GIB, false);
    d->procs = procs;
    d->nprocs = 1;
    memcpy(&orig, &s, sizeof s);
    policy_default(&pol);
    plan_running r[] = {run_("big", "hb", 8 * GIB, 0, 60 * GIB)};
    plan_target t[] = {tgt("new", "hn", 8 * GIB, 0, 50 * GIB)};

    /* without counting the stop it would not fit, on the host nor on the GPU */
    verdict raw;
    gate_check(&s, &t[0].need, NULL, 0, "new", &pol, &raw);
    assert_false(raw.ok);
    assert_string_equal(raw.binding, "host.mem_available");
    snapshot roomy = s;
    roomy.host.mem_available = 64 * GIB;
    gate_check(&roomy, &t[0].need, NULL, 0, "new", &pol, &raw);
    assert_false(raw.ok);
    assert_string_equal(raw.binding, "gpu.0.free");
    make(&roomy, r, 1, t, 1, NULL, 0, &pol);
    assert_true(P.ok);

    make(&s, r, 1, t, 1, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop big, start new(ok)");
    assert_int_equal(P.steps[0].after.host_available_bytes, 14 * GIB);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 70 * GIB);

    assert_memory_equal(&s, &orig, sizeof s);
    assert_ptr_equal(s.gpus[0].procs, procs);
    assert_int_equal(procs[0].pid, 4242);

    /* a footprint larger than the device gives back no more than its total */
    plan_running huge[] = {run_("big", "hb", 8 * GIB, 0, 200 * GIB)};
    make(&s, huge, 1, NULL, 0, NULL, 0, &pol);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 80 * GIB);
}

/* a cannot fit next to a: refused with the gate's binding and reason,
 * the plan not ok, the stop still planned and every start judged */
static void cannot_fit(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 60 * GIB, false);
    policy_default(&pol);
    plan_running r[] = {run_("old", "ho", 1 * GIB, 0, 10 * GIB)};
    plan_target t[] = {tgt("a", "ha", 2 * GIB, 0, 30 * GIB), tgt("b", "hb", 2 * GIB, 0, 40 * GIB),
                       tgt("c", "hc", 1 * GIB, -1, 0), tgt("d", "hd", 1 * GIB, 0, 1 * GIB)};
    make(&s, r, 1, t, 4, NULL, 0, &pol);
    assert_false(P.ok);
    assert_string_equal(P.refused, "b");
    const char *why = "GPU 0 free 71680 MiB < required 72704 MiB (need 40960 + margin 1024 + "
                      "reserved by others 30720)";
    assert_string_equal(P.reason, why);
    /* d is judged with b counted too: the whole mode's verdicts */
    assert_string_equal(steps_str(&P), "stop old, start a(ok), start b(refused gpu.0.free), start "
                                       "c(ok), start d(refused gpu.0.free)");
    assert_string_equal(P.steps[2].v.reason, why);
    assert_int_equal(P.steps[2].v.reserved_gpu_bytes[0], 30 * GIB);
    assert_int_equal(P.steps[4].v.reserved_gpu_bytes[0], 70 * GIB);
    assert_int_equal(P.steps[4].after.reserved_bytes[0], 71 * GIB);
    assert_int_equal(P.steps[4].after.reserved_host_bytes, 6 * GIB);
    assert_string_equal(keep_str(&P), "");
}

/* The binding constraint is a kept service's memory: the target alone
 * would fit the device, but the kept service stays and holds its part,
 * so the new start is refused (review: a plan that cannot fit because of
 * what is kept). */
static void cannot_fit_beside_kept(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 24 * GIB, 8 * GIB - 300 * MIB, false);
    policy_default(&pol);
    plan_running r[] = {run_("big_a", "ha", 16 * MIB, 0, 16000 * MIB)};
    plan_target t[] = {tgt("big_a", "ha", 16 * MIB, 0, 16000 * MIB),
                       tgt("big_b", "hb", 16 * MIB, 0, 16000 * MIB)};
    make(&s, r, 1, t, 2, NULL, 0, &pol);
    assert_false(P.ok);
    assert_string_equal(keep_str(&P), "big_a");
    assert_string_equal(steps_str(&P), "start big_b(refused gpu.0.free)");
    assert_string_equal(P.refused, "big_b");
    /* big_b alone after big_a's stop would fit: the refusal is the kept memory's */
    plan_target t2[] = {tgt("big_b", "hb", 16 * MIB, 0, 16000 * MIB)};
    make(&s, r, 1, t2, 1, NULL, 0, &pol);
    assert_true(P.ok);
}

/* A service marked no_keep (unhealthy, waiting for its restart, stopping)
 * is stopped and, in the target, started again even with the same hash;
 * one that holds nothing (down, restart pending) gives nothing back. */
static void no_keep_is_stopped_and_started(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 40 * GIB, false);
    policy_default(&pol);
    plan_running r[] = {run_("a1", "h1", 1 * GIB, 0, 10 * GIB), run_("a2", "h2", 0, -1, 0),
                        run_("sick", "hs", 1 * GIB, 0, 20 * GIB)};
    r[1].no_keep = true; /* down, restart pending */
    r[2].no_keep = true; /* unhealthy */
    plan_target t[] = {tgt("a1", "h1", 1 * GIB, 0, 10 * GIB),
                       tgt("sick", "hs", 1 * GIB, 0, 20 * GIB)};
    make(&s, r, 3, t, 2, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(keep_str(&P), "a1");
    assert_string_equal(steps_str(&P), "stop sick, stop a2, start sick(ok)");
    assert_int_equal(P.steps[1].after.gpu_free_bytes[0], 60 * GIB);
}

/* Fragmentation and PSI as measured are the leaving services' doing: with
 * stops in the plan such a refusal is deferred (re-checked after the
 * stops); the other rules still bind; without stops it refuses. */
static void contig_and_psi_deferred_after_stops(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    s.gpus[0].index = 0;
    add_gpu(&s, 0, 128 * GIB, 8 * GIB, true); /* GB10: A holds most of the memory */
    s.host.mem_available = 8 * GIB;
    s.host.contig_bytes = 512 * MIB;
    s.host.psi_some_avg10 = 25;
    policy_default(&pol);
    plan_running r[] = {run_("big_a", "ha", 1 * GIB, 0, 100 * GIB)};
    plan_target t[] = {tgt("b", "hb", 1 * GIB, 0, 60 * GIB)};
    make(&s, r, 1, t, 1, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop big_a, start b(ok)");
    assert_true(P.steps[1].deferred);
    assert_string_equal(P.steps[1].deferred_binding, "host.contig");
    assert_non_null(strstr(P.steps[1].deferred_why, "2 MiB"));
    /* PSI alone */
    s.host.contig_bytes = 16 * GIB;
    make(&s, r, 1, t, 1, NULL, 0, &pol);
    assert_true(P.ok);
    assert_true(P.steps[1].deferred);
    assert_string_equal(P.steps[1].deferred_binding, "host.psi");
    /* deferred, but the memory itself does not fit: refused on that */
    plan_target big[] = {tgt("b", "hb", 1 * GIB, 0, 120 * GIB)};
    make(&s, r, 1, big, 1, NULL, 0, &pol);
    assert_false(P.ok);
    assert_true(P.steps[1].deferred);
    assert_string_equal(P.steps[1].v.binding, "unified.0.mem_available");
    /* nothing stopped: the measured figures are the ones the start meets */
    make(&s, NULL, 0, t, 1, NULL, 0, &pol);
    assert_false(P.ok);
    assert_false(P.steps[0].deferred);
    assert_string_equal(P.steps[0].v.binding, "host.psi");
}

/* starts in flight outside the switch count for every start; they show in
 * before, and the plan passes without them */
static void outside_reservations(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 50 * GIB, false);
    policy_default(&pol);
    reservation res[] = {{.service = "other", .need = mk_need(2 * GIB, 0, 20 * GIB)}};
    plan_target t[] = {tgt("x", "hx", 1 * GIB, 0, 30 * GIB)};

    make(&s, NULL, 0, t, 1, res, 1, &pol);
    assert_false(P.ok);
    assert_string_equal(P.refused, "x");
    assert_string_equal(P.reason, "GPU 0 free 51200 MiB < required 52224 MiB (need 30720 + margin "
                                  "1024 + reserved by others 20480)");
    assert_int_equal(P.before.reserved_bytes[0], 20 * GIB);
    assert_int_equal(P.before.reserved_host_bytes, 2 * GIB);
    assert_int_equal(P.steps[0].after.reserved_bytes[0], 50 * GIB);

    make(&s, NULL, 0, t, 1, NULL, 0, &pol);
    assert_true(P.ok);
}

/* GB10: one unified device whose free is MemAvailable; a stop gives its
 * GPU and host bytes back to MemAvailable, and the planned starts'
 * reservations come out of the same pool */
static void unified_device(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    s.nvidia_driver = true;
    s.host.mem_available = 40 * GIB;
    add_gpu(&s, 0, 128 * GIB, 40 * GIB, true);
    policy_default(&pol);
    plan_running r[] = {run_("lane_a", "ha", 4 * GIB, 0, 50 * GIB)};
    plan_target t[] = {tgt("lane_c", "hc", 1 * GIB, 0, 10 * GIB),
                       tgt("lane_b", "hb", 4 * GIB, 0, 60 * GIB)};
    t[1].vllm = t[1].start_first = true;

    verdict raw;
    gate_check(&s, &t[1].need, NULL, 0, "lane_b", &pol, &raw);
    assert_false(raw.ok);
    assert_string_equal(raw.binding, "unified.0.mem_available");

    make(&s, r, 1, t, 2, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop lane_a, start lane_b(ok), start lane_c(ok)");
    assert_int_equal(P.nwarnings, 0);
    assert_int_equal(P.before.gpu_free_bytes[0], 40 * GIB);
    assert_int_equal(P.steps[0].after.host_available_bytes, 94 * GIB);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 94 * GIB);
    assert_int_equal(P.steps[1].after.reserved_bytes[0], 60 * GIB);
    assert_int_equal(P.steps[1].after.reserved_host_bytes, 4 * GIB);
    assert_int_equal(P.steps[2].v.reserved_gpu_bytes[0], 60 * GIB);

    /* 25 GiB more does not fit next to lane_b in the one pool */
    t[0] = tgt("lane_c", "hc", 1 * GIB, 0, 25 * GIB);
    make(&s, r, 1, t, 2, NULL, 0, &pol);
    assert_false(P.ok);
    assert_string_equal(P.refused, "lane_c");
    assert_string_equal(
        steps_str(&P),
        "stop lane_a, start lane_b(ok), start lane_c(refused unified.0.mem_available)");
    assert_string_equal(
        P.reason, "MemAvailable 96256 MiB < required 100352 MiB (GPU need 25600 + host need 1024 + "
                  "uma reserve 8192 + reserved by others 65536)");
}

/* two devices listed out of index order: needs land on the device their
 * index names, a stop gives back per device, the refusal names the one */
static void multi_gpu(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 1, 80 * GIB, 30 * GIB, false); /* position 0 */
    add_gpu(&s, 0, 80 * GIB, 20 * GIB, false); /* position 1 */
    policy_default(&pol);
    plan_running r[] = {run_("old", "ho", 1 * GIB, 0, 40 * GIB)};
    need_add_gpu(&r[0].held, 1, 10 * GIB);
    plan_target t[] = {tgt("x", "hx", 1 * GIB, 1, 35 * GIB), tgt("y", "hy", 1 * GIB, 0, 50 * GIB),
                       tgt("z", "hz", 1 * GIB, 0, 8 * GIB)};
    need_add_gpu(&t[2].need, 1, 5 * GIB);
    make(&s, r, 1, t, 3, NULL, 0, &pol);

    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 40 * GIB);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[1], 60 * GIB);
    assert_string_equal(steps_str(&P),
                        "stop old, start x(ok), start y(ok), start z(refused gpu.1.free)");
    assert_false(P.ok);
    assert_string_equal(P.refused, "z");
    assert_string_equal(P.reason, "GPU 1 free 40960 MiB < required 41984 MiB (need 5120 + margin "
                                  "1024 + reserved by others 35840)");
    assert_int_equal(P.steps[3].after.reserved_bytes[0], 40 * GIB);
    assert_int_equal(P.steps[3].after.reserved_bytes[1], 58 * GIB);

    /* a device the snapshot lacks gives nothing back anywhere */
    plan_running gone[] = {run_("gone", "hg", 0, 7, 30 * GIB)};
    make(&s, gone, 1, NULL, 0, NULL, 0, &pol);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 30 * GIB);
    assert_int_equal(P.steps[0].after.gpu_free_bytes[1], 20 * GIB);
    assert_int_equal(P.steps[0].after.host_available_bytes, 64 * GIB);

    /* 4 GiB on device 1 fits (4 + 1 + 35 = 40) */
    t[2] = tgt("z", "hz", 1 * GIB, 0, 8 * GIB);
    need_add_gpu(&t[2].need, 1, 4 * GIB);
    make(&s, r, 1, t, 3, NULL, 0, &pol);
    assert_true(P.ok);
}

/* mode none: every running service stops, in reverse running order */
static void empty_target(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 10 * GIB, false);
    policy_default(&pol);
    plan_running r[] = {run_("a", "ha", 1 * GIB, 0, 10 * GIB),
                        run_("b", "hb", 1 * GIB, 0, 20 * GIB),
                        run_("c", "hc", 1 * GIB, 0, 30 * GIB)};
    make(&s, r, 3, NULL, 0, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop c, stop b, stop a");
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 40 * GIB);
    assert_int_equal(P.steps[2].after.gpu_free_bytes[0], 70 * GIB);
    assert_int_equal(P.steps[2].after.host_available_bytes, 67 * GIB);
    assert_true(P.steps[0].v.ok);
    assert_int_equal(P.nkeep, 0);
}

/* nothing running: starts only, before is the snapshot */
static void empty_running(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&pol);
    plan_target t[] = {tgt("a", "ha", 1 * GIB, 0, 10 * GIB), tgt("b", "hb", 1 * GIB, 0, 20 * GIB)};
    make(&s, NULL, 0, t, 2, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "start a(ok), start b(ok)");
    assert_int_equal(P.before.gpu_free_bytes[0], 79 * GIB);
    assert_int_equal(P.before.host_available_bytes, 64 * GIB);
    assert_int_equal(P.steps[1].v.reserved_gpu_bytes[0], 10 * GIB);

    /* no GPU at all and nothing to do: an empty, ok plan */
    host_ok(&s);
    make(&s, NULL, 0, NULL, 0, NULL, 0, &pol);
    assert_true(P.ok);
    assert_int_equal(P.nsteps, 0);
}

/* a remote service holds nothing here: no gate (its unknown need is no
 * refusal), no reservation, not the start a vLLM service must precede */
static void remote_target(void **state)
{
    (void)state;
    snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 40 * GIB, false);
    policy_default(&pol);
    plan_target t[] = {tgt("api", "hr", 0, -1, 0), tgt("v", "hv", 1 * GIB, 0, 30 * GIB)};
    t[0].remote = true;
    t[0].need.source[0] = '\0';
    t[1].vllm = true;
    make(&s, NULL, 0, t, 2, NULL, 0, &pol);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "start api(ok), start v(ok)");
    assert_string_equal(P.steps[0].v.binding, "");
    assert_int_equal(P.steps[0].after.reserved_host_bytes, 0);
    assert_int_equal(P.steps[1].v.reserved_host_bytes, 0);
    assert_int_equal(P.nwarnings, 0);

    /* the same remote with a need it would not fit: still no gate */
    t[0] = tgt("api", "hr", 500 * GIB, 0, 500 * GIB);
    t[0].remote = true;
    make(&s, NULL, 0, t, 2, NULL, 0, &pol);
    assert_true(P.ok);
    assert_int_equal(P.steps[1].v.reserved_gpu_bytes[0], 0);
}

/* The activator's order: a plan that fits, then the fewest stops, then
 * the fewest services, the least declared memory, the id. */
static void rank_choices(void **state)
{
    (void)state;
    plan_choice c[] = {
        {.mode = "small-refused", .ok = false, .nstops = 0, .nservices = 1, .declared_mb = 10},
        {.mode = "big-fits-2-stops", .ok = true, .nstops = 2, .nservices = 3, .declared_mb = 900},
        {.mode = "fits-1-stop-b", .ok = true, .nstops = 1, .nservices = 2, .declared_mb = 500},
        {.mode = "fits-1-stop-a", .ok = true, .nstops = 1, .nservices = 2, .declared_mb = 500},
        {.mode = "fits-1-stop-small", .ok = true, .nstops = 1, .nservices = 2, .declared_mb = 200},
        {.mode = "fits-1-stop-fewer", .ok = true, .nstops = 1, .nservices = 1, .declared_mb = 800},
        {.mode = "refused-0-stops", .ok = false, .nstops = 0, .nservices = 1, .declared_mb = 5},
    };
    const char *want[] = {"fits-1-stop-fewer", "fits-1-stop-small", "fits-1-stop-a",
                          "fits-1-stop-b",     "big-fits-2-stops",  "refused-0-stops",
                          "small-refused"};
    plan_rank(c, 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(c[i].mode, want[i]);
    plan_rank(c, 0);
    plan_rank(NULL, 0);
}

static void expect_err(const plan_input *in, const char *msg)
{
    char err[256] = "";
    memset(&P, 0xab, sizeof P);
    assert_int_equal(plan_make(in, &P, err, sizeof err), -1);
    assert_string_equal(err, msg);
    assert_false(P.ok);
    assert_int_equal(P.nsteps, 0);
}

static void bad_inputs(void **state)
{
    (void)state;
    static snapshot s;
    gate_policy pol;
    host_ok(&s);
    add_gpu(&s, 0, 80 * GIB, 79 * GIB, false);
    policy_default(&pol);
    static plan_target t[PLAN_MAX + 1];
    static plan_running r[PLAN_MAX + 1];
    static reservation res[PLAN_MAX + 1];
    static char ids[PLAN_MAX + 1][8];
    for (size_t i = 0; i <= PLAN_MAX; i++) {
        snprintf(ids[i], sizeof ids[i], "s%zu", i);
        t[i] = tgt(ids[i], "h", 0, -1, 0);
        r[i] = run_(ids[i], "h", 0, -1, 0);
        res[i].service = ids[i];
        res[i].need = mk_need(0, -1, 0);
    }
    plan_input in = {.snap = &s, .policy = &pol};

    in.target = t;
    in.ntarget = PLAN_MAX + 1;
    expect_err(&in, "plan: 65 target services, at most 64 expected");
    in.ntarget = PLAN_MAX; /* the limit itself is fine */
    char err[256] = "";
    assert_int_equal(plan_make(&in, &P, err, sizeof err), 0);
    assert_int_equal(P.nsteps, PLAN_MAX);
    in.ntarget = 0;

    in.running = r;
    in.nrunning = PLAN_MAX + 1;
    expect_err(&in, "plan: 65 running services, at most 64 expected");
    in.nrunning = PLAN_MAX; /* all stopped: 64 steps */
    assert_int_equal(plan_make(&in, &P, err, sizeof err), 0);
    in.ntarget = PLAN_MAX; /* every one restarted (hash "h" on both sides would keep: change it) */
    for (size_t i = 0; i < PLAN_MAX; i++)
        t[i].hash = "h2";
    assert_int_equal(plan_make(&in, &P, err, sizeof err), 0);
    assert_int_equal(P.nsteps, 2 * PLAN_MAX);
    in.ntarget = in.nrunning = 0;

    in.res = res;
    in.nres = PLAN_MAX + 1;
    expect_err(&in, "plan: 65 reservations, at most 64 expected");
    in.nres = 0;

    plan_target dup[] = {tgt("a", "h", 0, -1, 0), tgt("b", "h", 0, -1, 0), tgt("a", "h", 0, -1, 0)};
    in.target = dup;
    in.ntarget = 3;
    expect_err(&in, "plan: service 'a' appears twice in the target mode");
    dup[2].id = NULL;
    expect_err(&in, "plan: target service 2 has no id");
    in.ntarget = 0;

    plan_running rdup[] = {run_("x", "h", 0, -1, 0), run_("x", "h", 0, -1, 0)};
    in.running = rdup;
    in.nrunning = 2;
    expect_err(&in, "plan: service 'x' is listed twice in the running set");
    rdup[0].id = NULL;
    expect_err(&in, "plan: running service 0 has no id");
    in.nrunning = 0;

    in.target = NULL;
    in.ntarget = 1;
    expect_err(&in, "plan: target services: 1 given but the array is NULL");
    in.ntarget = 0;

    in.snap = NULL;
    expect_err(&in, "plan: no snapshot given");
    in.snap = &s;
    in.policy = NULL;
    expect_err(&in, "plan: no gate policy given");
    in.policy = &pol;

    expect_err(NULL, "plan: no input given");
    err[0] = '\0';
    assert_int_equal(plan_make(&in, NULL, err, sizeof err), -1);
    assert_string_equal(err, "plan: no output plan given");
    /* a NULL err buffer is allowed */
    assert_int_equal(plan_make(NULL, &P, NULL, 0), -1);
}

/* ---- tiers ---- */

/* A vLLM-like service of tier l1: 20 GiB on GPU 0 and 2 GiB host awake;
 * asleep 512 MiB on the GPU and the other 19.5 GiB in host memory. */
static plan_running sleeper(const char *id, const char *hash, int64_t wake_ms, int64_t load_ms)
{
    plan_running r = run_(id, hash, 2 * GIB, 0, 20 * GIB);
    r.tier = TIER_L1;
    tier_asleep_need(TIER_L1, &r.held, 0, false, &r.asleep_need);
    r.wake_ms = wake_ms;
    r.load_ms = load_ms;
    r.sleep_ms = -1;
    return r;
}

/* the same, asleep now: held is its asleep figures */
static plan_running asleep_(const char *id, const char *hash, int64_t wake_ms, int64_t load_ms)
{
    plan_running r = sleeper(id, hash, wake_ms, load_ms);
    r.held = r.asleep_need;
    r.asleep = true;
    return r;
}

static void make1(const snapshot *s, const plan_running *r, size_t nr, const plan_target *t,
                  size_t nt)
{
    gate_policy pol;
    policy_default(&pol);
    assert_int_equal(make(s, r, nr, t, nt, NULL, 0, &pol), 0);
}

/* A -> B: a leaving l1 service whose wake is cheaper sleeps; the start's
 * gate sees the GPU it frees and the host bytes it takes. */
static void tier_sleep_leaving(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    add_gpu(&s, 0, 48 * GIB, 26 * GIB, false);
    plan_running r[] = {sleeper("a", "h-a", 200, 3000)};
    plan_target t[] = {tgt("b", "h-b", 2 * GIB, 0, 20 * GIB)};
    t[0].expect_ms = 3000;
    make1(&s, r, 1, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "sleep a(l1), start b(ok)");
    assert_int_equal(P.steps[0].expect_ms, PLAN_SLEEP_PRIOR_MS);
    assert_int_equal(P.steps[1].expect_ms, 3000);
    assert_int_equal(P.expect_ms, PLAN_SLEEP_PRIOR_MS + 3000);
    assert_false(P.expect_partial);
    /* GPU: 26 + 19.5 freed; host: 64 - 19.5 (the weights copied out) */
    assert_int_equal(P.steps[0].after.gpu_free_bytes[0], 26 * GIB + 20 * GIB - 512 * MIB);
    assert_int_equal(P.steps[0].after.host_available_bytes, 64 * GIB - (20 * GIB - 512 * MIB));
    assert_true(P.steps[0].v.ok);
    /* a measured sleep time is the step's */
    r[0].sleep_ms = 750;
    make1(&s, r, 1, t, 1);
    assert_int_equal(P.steps[0].expect_ms, 750);
    /* a start of unknown time: the total is partial */
    t[0].expect_ms = -1;
    make1(&s, r, 1, t, 1);
    assert_int_equal(P.expect_ms, 750);
    assert_true(P.expect_partial);
}

/* B -> A: the sleeper with the target's hash is woken (gated on its need
 * minus what it holds asleep), the other leaves by sleep. */
static void tier_wake(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    /* a asleep (0.5 GiB) and b awake (20 GiB) on a 24 GiB device: 3.5 GiB free */
    add_gpu(&s, 0, 24 * GIB, 3 * GIB + 512 * MIB, false);
    plan_running r[] = {asleep_("a", "h-a", 200, 3000), sleeper("b", "h-b", 200, 3000)};
    plan_target t[] = {tgt("a", "h-a", 2 * GIB, 0, 20 * GIB)};
    t[0].expect_ms = 3000;
    make1(&s, r, 2, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "sleep b(l1), wake a(l1 ok)");
    assert_int_equal(P.nkeep, 0);
    assert_int_equal(P.nasleep, 0);
    assert_int_equal(P.steps[1].expect_ms, 200);
    assert_int_equal(P.expect_ms, PLAN_SLEEP_PRIOR_MS + 200);
    /* the wake reserves 19.5 GiB on the GPU, not 20 */
    assert_int_equal(P.steps[1].after.reserved_bytes[0], 20 * GIB - 512 * MIB);
    /* the same record with another hash: stopped and started cold */
    t[0].hash = "h-a2";
    make1(&s, r, 2, t, 1);
    assert_string_equal(steps_str(&P), "stop a, sleep b(l1), start a(ok)");
    /* no_keep: also stopped and started */
    t[0].hash = "h-a";
    r[0].no_keep = true;
    make1(&s, r, 2, t, 1);
    assert_string_equal(steps_str(&P), "stop a, sleep b(l1), start a(ok)");
}

/* A sleeper not in the target stays asleep (no step) while the target
 * fits beside it, and is stopped when it does not. */
static void tier_asleep_stays_or_stops(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    add_gpu(&s, 0, 24 * GIB, 23 * GIB + 512 * MIB, false);
    plan_running r[] = {asleep_("a", "h-a", 200, 3000)};
    plan_target t[] = {tgt("b", "h-b", 2 * GIB, 0, 20 * GIB)};
    make1(&s, r, 1, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "start b(ok)");
    assert_int_equal(P.nasleep, 1);
    assert_string_equal(P.asleep[0], "a");
    /* a measured residue of 6 GiB: 17.5 GiB free does not hold b */
    r[0].held.gpu[0].bytes = 6 * GIB;
    s.gpus[0].free_bytes = 18 * GIB;
    make1(&s, r, 1, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop a, start b(ok)");
    assert_int_equal(P.nasleep, 0);
    assert_non_null(strstr(P.steps[0].note, "does not fit beside it asleep"));
}

/* A leaving sleeper whose asleep figures leave no room is stopped instead;
 * so is one whose wake is not cheaper than its load, and one of tier stop. */
static void tier_stop_instead(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    add_gpu(&s, 0, 24 * GIB, 4 * GIB, false);
    plan_running r[] = {sleeper("a", "h-a", 200, 3000)};
    r[0].asleep_need.gpu[0].bytes = 6 * GIB; /* measured: it keeps 6 GiB asleep */
    plan_target t[] = {tgt("b", "h-b", 2 * GIB, 0, 20 * GIB)};
    make1(&s, r, 1, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop a, start b(ok)");
    assert_string_equal(P.steps[0].note,
                        "stopped, not slept: the target does not fit beside it asleep");
    /* the wake costs more than the load */
    r[0] = sleeper("a", "h-a", 5000, 3000);
    make1(&s, r, 1, t, 1);
    assert_string_equal(steps_str(&P), "stop a, start b(ok)");
    assert_non_null(strstr(P.steps[0].note, "a wake (5000 ms) is not expected to be cheaper"));
    /* a load never measured: the wake is cheaper (tier_sleep_cheaper) */
    r[0] = sleeper("a", "h-a", 5000, -1);
    make1(&s, r, 1, t, 1);
    assert_string_equal(steps_str(&P), "sleep a(l1), start b(ok)");
    /* tier stop */
    r[0].tier = TIER_STOP;
    make1(&s, r, 1, t, 1);
    assert_string_equal(steps_str(&P), "stop a, start b(ok)");
    assert_string_equal(P.steps[0].note, "");
}

/* An l1 sleep's host increase is gated: a host without room for the
 * weights stops the service instead (as the supervisor would). */
static void tier_sleep_gate_refused(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    s.host.mem_available = 8 * GIB;
    add_gpu(&s, 0, 48 * GIB, 26 * GIB, false);
    plan_running r[] = {sleeper("a", "h-a", 200, 3000)};
    plan_target t[] = {tgt("b", "h-b", 2 * GIB, 0, 20 * GIB)};
    make1(&s, r, 1, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop a, start b(ok)");
    assert_non_null(strstr(P.steps[0].note, "sleep refused by the gate: "));
    assert_non_null(strstr(P.steps[0].note, "; stopped instead"));
    /* l2 moves nothing onto the host: it sleeps */
    r[0].tier = TIER_L2;
    tier_asleep_need(TIER_L2, &r[0].held, 0, false, &r[0].asleep_need);
    make1(&s, r, 1, t, 1);
    assert_string_equal(steps_str(&P), "sleep a(l2), start b(ok)");
}

/* Two sleepers, room for one beside the target: the one with the least
 * benefit (load - wake) is stopped. */
static void tier_least_benefit_first(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    add_gpu(&s, 0, 48 * GIB, 8 * GIB, false);
    plan_running r[] = {sleeper("a", "h-a", 200, 60000), sleeper("b", "h-b", 200, 3000)};
    r[0].asleep_need.gpu[0].bytes = 4 * GIB;
    r[1].asleep_need.gpu[0].bytes = 4 * GIB;
    plan_target t[] = {tgt("c", "h-c", 2 * GIB, 0, 40 * GIB)};
    make1(&s, r, 2, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop b, sleep a(l1), start c(ok)");
    /* benefits the other way round */
    r[0].load_ms = 3000;
    r[1].load_ms = 60000;
    make1(&s, r, 2, t, 1);
    assert_string_equal(steps_str(&P), "stop a, sleep b(l1), start c(ok)");
    /* a target that fits with neither: both stop, still refused */
    t[0].need.gpu[0].bytes = 60 * GIB;
    make1(&s, r, 2, t, 1);
    assert_false(P.ok);
    assert_string_equal(steps_str(&P), "stop b, stop a, start c(refused gpu.0.free)");
}

/* On a unified host an l1 sleeper is predicted to free nothing. */
static void tier_unified_frees_nothing(void **state)
{
    (void)state;
    snapshot s;
    host_ok(&s);
    add_gpu(&s, 0, 128 * GIB, 0, true);
    plan_running r[] = {sleeper("a", "h-a", 200, 3000)};
    tier_asleep_need(TIER_L1, &r[0].held, 0, true, &r[0].asleep_need);
    plan_target t[] = {tgt("b", "h-b", 2 * GIB, 0, 40 * GIB)};
    s.host.mem_available = 30 * GIB;
    make1(&s, r, 1, t, 1);
    assert_true(P.ok);
    assert_string_equal(steps_str(&P), "stop a, start b(ok)");
    assert_non_null(strstr(P.steps[0].note, "does not fit beside it asleep"));
}

static void rank_wakes(void **state)
{
    (void)state;
    plan_choice c[] = {
        {.mode = "cold", .ok = true, .nstops = 1, .nservices = 1},
        {.mode = "wakes", .ok = true, .nstops = 1, .nwakes = 1, .nservices = 2},
        {.mode = "fewer-stops", .ok = true, .nstops = 0, .nservices = 3},
    };
    plan_rank(c, 3);
    assert_string_equal(c[0].mode, "fewer-stops");
    assert_string_equal(c[1].mode, "wakes");
    assert_string_equal(c[2].mode, "cold");
    assert_string_equal(plan_step_names[PLAN_SLEEP], "sleep");
    assert_string_equal(plan_step_names[PLAN_WAKE], "wake");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_to_b),
        cmocka_unit_test(changed_hash),
        cmocka_unit_test(start_first_and_vllm),
        cmocka_unit_test(fits_only_after_stops),
        cmocka_unit_test(cannot_fit),
        cmocka_unit_test(cannot_fit_beside_kept),
        cmocka_unit_test(no_keep_is_stopped_and_started),
        cmocka_unit_test(contig_and_psi_deferred_after_stops),
        cmocka_unit_test(outside_reservations),
        cmocka_unit_test(unified_device),
        cmocka_unit_test(multi_gpu),
        cmocka_unit_test(empty_target),
        cmocka_unit_test(empty_running),
        cmocka_unit_test(remote_target),
        cmocka_unit_test(bad_inputs),
        cmocka_unit_test(rank_choices),
        cmocka_unit_test(tier_sleep_leaving),
        cmocka_unit_test(tier_wake),
        cmocka_unit_test(tier_asleep_stays_or_stops),
        cmocka_unit_test(tier_stop_instead),
        cmocka_unit_test(tier_sleep_gate_refused),
        cmocka_unit_test(tier_least_benefit_first),
        cmocka_unit_test(tier_unified_frees_nothing),
        cmocka_unit_test(rank_wakes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
