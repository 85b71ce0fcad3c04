/* pf_restart.c - preflight's dry run of a restart with overrides
 * (pf_restart.h).
 *
 * Design: the restart is judged as a switch judges its steps, by the same
 * pure planner (core/plan.c): a plan whose running set is the service
 * alone (never kept: its hash is left unknown) and whose target is the
 * service with its overrides.  So the prediction of what a stop gives
 * back, the reservations of other starts in flight and the deferral of a
 * measured fragmentation or pressure refusal are the switch's own, and a
 * preflight can never say yes to what a restart would refuse on the
 * planner's figures. */
#include "daemon/pf_restart.h"
#include "core/plan.h"
#include "core/policy.h"
#include "daemon/need.h"
#include "daemon/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What id holds now, into *held; false when nothing of it runs. */
static bool holding_of(sup *s, const char *id, need *held)
{
    sup_holding h[PLAN_MAX + 1];
    size_t n = sup_holdings(s, h, PLAN_MAX + 1);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(h[i].id, id)) {
            *held = h[i].held;
            return true;
        }
    return false;
}

/* The reservations of starts in flight but id's own (it would be stopped). */
static size_t others_reserved(sup *s, const char *id, reservation *res)
{
    reservation all[PLAN_MAX];
    size_t n = sup_reservations(s, all, PLAN_MAX), k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].service, id)) res[k++] = all[i];
    return k;
}

static void mem_json(buf *b, const plan_mem *m, const snapshot *s)
{
    buf_printf(b, "{\"host\":{\"mem_available_bytes\":%llu},\"gpus\":[", (unsigned long long)m->host_available_bytes);
    for (size_t i = 0; i < s->ngpus; i++)
        buf_printf(b, "%s{\"index\":%d,\"free_bytes\":%llu}", i ? "," : "", s->gpus[i].index,
                   (unsigned long long)m->gpu_free_bytes[i]);
    buf_adds(b, "]}");
}

/* The plan's start step, and its stop step (NULL when nothing runs). */
static void steps_of(const plan *pl, const plan_step **start, const plan_step **stop)
{
    *start = *stop = NULL;
    for (size_t i = 0; i < pl->nsteps; i++) {
        if (pl->steps[i].kind == PLAN_START) *start = &pl->steps[i];
        if (pl->steps[i].kind == PLAN_STOP) *stop = &pl->steps[i];
    }
}

static int judge(const pf_restart_in *in, const preset *q, const need_detail *nd, buf *out, char *err,
                 size_t errlen)
{
    const char *id = in->p->id;
    need held;
    bool runs = holding_of(in->sup, id, &held);
    plan_running run = {.id = id, .hash = NULL, .held = held, .no_keep = true};
    plan_target tg = {.id = id, .need = nd->n, .start_first = q->start_first, .vllm = q->driver == DRV_VLLM,
                      .remote = !strcmp(nd->n.source, "none")};
    reservation res[PLAN_MAX];
    size_t nres = others_reserved(in->sup, id, res);
    gate_policy pol;
    policy_from_settings(in->set, &pol);
    plan_input pi = {.snap = in->snap, .running = &run, .nrunning = runs ? 1 : 0, .target = &tg, .ntarget = 1,
                     .res = res, .nres = nres, .policy = &pol};
    plan *pl = calloc(1, sizeof *pl);
    if (!pl || plan_make(&pi, pl, err, errlen) != 0) {
        free(pl);
        return -1;
    }
    const plan_step *start, *stop;
    steps_of(pl, &start, &stop);
    verdict_json(out, "daemon", id, &start->v, nd, in->snap);
    out->len--; /* reopen the verdict for the restart's members */
    out->p[out->len] = 0;
    buf_adds(out, ",\"restart\":{\"overrides\":");
    overrides_json(out, in->ov);
    buf_adds(out, ",\"held\":");
    if (runs) need_json(out, &held);
    else buf_adds(out, "null");
    buf_adds(out, ",\"after_stop\":");
    mem_json(out, stop ? &stop->after : &pl->before, in->snap);
    buf_adds(out, ",\"deferred\":");
    buf_json_str_or_null(out, start->deferred ? start->deferred_why : NULL);
    buf_addc(out, '}');
    free(pl);
    return 0;
}

int pf_restart_json(const pf_restart_in *in, buf *out, int *status, const char **code, char *err, size_t errlen)
{
    preset q;
    memset(&q, 0, sizeof q);
    char e[768];
    need_detail *nd = calloc(1, sizeof *nd);
    int rc = -1;
    *status = 400;
    *code = "bad_request";
    if (!nd) {
        snprintf(err, errlen, "preflight: out of memory");
    } else if (overrides_apply(in->p, in->ov, &q, e, sizeof e) != 0) {
        snprintf(err, errlen, "preflight: cannot start '%s' with overrides: %s", in->p->id, e);
    } else if (service_need(&q, in->set, in->snap, in->st, nd, e, sizeof e) != 0) {
        *status = 422;
        *code = "need_unknown";
        snprintf(err, errlen, "%s", e);
    } else if (judge(in, &q, nd, out, e, sizeof e) != 0) {
        *status = 500;
        *code = "internal";
        snprintf(err, errlen, "preflight: cannot plan the restart of '%s': %s", in->p->id, e);
    } else {
        rc = 0;
    }
    overrides_applied_release(&q);
    free(nd);
    return rc;
}
