/* plan.c - a mode switch as a plan (see plan.h for the contract).
 *
 * Pure, like the gate it asks: the prediction is a private copy of the
 * snapshot that the stops give memory back to, and every planned start
 * becomes a reservation for the starts after it.  Each start is then
 * judged by gate_check itself on those figures, so the plan refuses
 * exactly what the gate would refuse once the stops are done, with the
 * gate's own binding and reason, and never a figure of its own making.
 *
 * Stopping and starting a service whose config changed is cheaper to
 * reason about than an in-place update, and a kept service is one whose
 * config hash is the same: its process, memory and clients are left
 * alone. */
#include "core/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/errf.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static size_t snap_ngpus(const snapshot *s)
{
    return s->ngpus < HOST_MAX_GPUS ? s->ngpus : HOST_MAX_GPUS;
}

static size_t need_ngpu(const need *n)
{
    return n->ngpu < HOST_MAX_GPUS ? n->ngpu : HOST_MAX_GPUS;
}

/* Position of device index idx in s->gpus[], or -1 (as the gate finds it). */
static int gpu_pos(const snapshot *s, int idx)
{
    for (size_t i = 0; i < snap_ngpus(s); i++)
        if (s->gpus[i].index == idx) return (int)i;
    return -1;
}

/* A unified device's free is MemAvailable, capped at its total, as the
 * snapshot fills it (host/snapshot.c fill_unified). */
static void sync_unified(snapshot *s)
{
    if (!s->host.meminfo_ok) return;
    for (size_t i = 0; i < snap_ngpus(s); i++) {
        gpu_dev *d = &s->gpus[i];
        if (!d->unified) continue;
        uint64_t avail = s->host.mem_available;
        d->free_bytes = d->total_bytes && avail > d->total_bytes ? d->total_bytes : avail;
        d->used_bytes = d->total_bytes > d->free_bytes ? d->total_bytes - d->free_bytes : 0;
    }
}

/* What a stopped service held comes back: host bytes and a unified
 * device's bytes to MemAvailable (one pool), a discrete device's to its
 * free.  Never past a known total: a footprint larger than the device
 * cannot make room that is not there. */
static void give_back(snapshot *s, const need *held)
{
    host_mem *h = &s->host;
    uint64_t to_host = held->host_bytes;
    for (size_t g = 0; g < need_ngpu(held); g++) {
        int pos = gpu_pos(s, held->gpu[g].index);
        if (pos < 0) continue; /* a device the snapshot lacks gives nothing back we could use */
        gpu_dev *d = &s->gpus[pos];
        uint64_t b = held->gpu[g].bytes;
        if (d->unified) {
            to_host = sat_add(to_host, b);
            continue;
        }
        d->free_bytes = sat_add(d->free_bytes, b);
        if (d->total_bytes && d->free_bytes > d->total_bytes) d->free_bytes = d->total_bytes;
        d->used_bytes = d->used_bytes > b ? d->used_bytes - b : 0;
    }
    h->mem_available = sat_add(h->mem_available, to_host);
    if (h->mem_total && h->mem_available > h->mem_total) h->mem_available = h->mem_total;
    sync_unified(s);
}

static void mem_record(const snapshot *s, const reservation *res, size_t nres, plan_mem *m)
{
    memset(m, 0, sizeof *m);
    m->host_available_bytes = s->host.mem_available;
    for (size_t i = 0; i < snap_ngpus(s); i++)
        m->gpu_free_bytes[i] = s->gpus[i].free_bytes;
    for (size_t i = 0; i < nres; i++) {
        const need *n = &res[i].need;
        m->reserved_host_bytes = sat_add(m->reserved_host_bytes, n->host_bytes);
        for (size_t g = 0; g < need_ngpu(n); g++) {
            int pos = gpu_pos(s, n->gpu[g].index);
            if (pos >= 0) m->reserved_bytes[pos] = sat_add(m->reserved_bytes[pos], n->gpu[g].bytes);
        }
    }
}

static bool same_hash(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void warn(plan *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(plan *out, const char *fmt, ...)
{
    size_t max = sizeof out->warnings / sizeof out->warnings[0];
    if (out->nwarnings == max) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->warnings[out->nwarnings++], sizeof out->warnings[0], fmt, ap);
    va_end(ap);
}

static int check_input(const plan_input *in, char *err, size_t errlen)
{
    if (!in->snap || !in->policy) {
        errf(err, errlen, "plan: no %s given", in->snap ? "gate policy" : "snapshot");
        return -1;
    }
    static const struct {
        const char *what;
        size_t off_n, off_p;
    } arrays[] = {
        {"running services", offsetof(plan_input, nrunning), offsetof(plan_input, running)},
        {"target services", offsetof(plan_input, ntarget), offsetof(plan_input, target)},
        {"reservations", offsetof(plan_input, nres), offsetof(plan_input, res)},
    };
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) {
        size_t n = *(const size_t *)((const char *)in + arrays[a].off_n);
        const void *p = *(const void *const *)((const char *)in + arrays[a].off_p);
        if (n && !p) {
            errf(err, errlen, "plan: %s: %zu given but the array is NULL", arrays[a].what, n);
            return -1;
        }
        if (n > PLAN_MAX) {
            errf(err, errlen, "plan: %zu %s, at most %d expected", n, arrays[a].what, PLAN_MAX);
            return -1;
        }
    }
    for (size_t i = 0; i < in->nrunning; i++) {
        if (!in->running[i].id) {
            errf(err, errlen, "plan: running service %zu has no id", i);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(in->running[j].id, in->running[i].id) == 0) {
                errf(err, errlen, "plan: service '%s' is listed twice in the running set",
                     in->running[i].id);
                return -1;
            }
    }
    for (size_t i = 0; i < in->ntarget; i++) {
        if (!in->target[i].id) {
            errf(err, errlen, "plan: target service %zu has no id", i);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(in->target[j].id, in->target[i].id) == 0) {
                errf(err, errlen, "plan: service '%s' appears twice in the target mode",
                     in->target[i].id);
                return -1;
            }
    }
    return 0;
}

const char *const plan_step_names[] = {"stop", "start", "sleep", "wake", NULL};

/* Take n from the prediction: the opposite of give_back (a sleep that
 * copies the weights into host memory takes host bytes). */
static void take(snapshot *s, const need *n)
{
    host_mem *h = &s->host;
    uint64_t from_host = n->host_bytes;
    for (size_t g = 0; g < need_ngpu(n); g++) {
        int pos = gpu_pos(s, n->gpu[g].index);
        if (pos < 0) continue;
        gpu_dev *d = &s->gpus[pos];
        uint64_t b = n->gpu[g].bytes;
        if (d->unified) {
            from_host = sat_add(from_host, b);
            continue;
        }
        d->free_bytes = d->free_bytes > b ? d->free_bytes - b : 0;
        d->used_bytes = sat_add(d->used_bytes, b);
    }
    h->mem_available = h->mem_available > from_host ? h->mem_available - from_host : 0;
    sync_unified(s);
}

static uint64_t gpu_of(const need *n, int index)
{
    for (size_t g = 0; g < need_ngpu(n); g++)
        if (n->gpu[g].index == index) return n->gpu[g].bytes;
    return 0;
}

/* a - b per figure, floored at 0, on a's devices (source and pageable_host a's) */
void plan_need_minus(const need *a, const need *b, need *out)
{
    *out = *a;
    out->host_bytes = a->host_bytes > b->host_bytes ? a->host_bytes - b->host_bytes : 0;
    for (size_t g = 0; g < need_ngpu(a); g++) {
        uint64_t x = gpu_of(b, a->gpu[g].index);
        out->gpu[g].bytes = a->gpu[g].bytes > x ? a->gpu[g].bytes - x : 0;
    }
}

/* A service goes from holding `from` to holding `to`: what it lets go of
 * comes back, what it takes on is taken. */
static void change(snapshot *s, const need *from, const need *to)
{
    need back, more;
    plan_need_minus(from, to, &back);
    plan_need_minus(to, from, &more);
    give_back(s, &back);
    take(s, &more);
}

/* The prediction being built. */
typedef struct pstate {
    snapshot pred;
    reservation res[2 * PLAN_MAX];
    size_t nres;
    size_t nleave; /* services the plan stops or puts to sleep */
} pstate;

/* What each running service does in the plan being built. */
typedef enum { D_KEEP, D_WAKE, D_STOP, D_SLEEP, D_ASLEEP } decision;

typedef struct build_ctx {
    const plan_input *in;
    decision dec[PLAN_MAX];
    char note[PLAN_MAX][200];
    int target_of[PLAN_MAX]; /* running i -> its target index, -1 none */
    pstate ps;
} build_ctx;

static int64_t benefit(const plan_running *r)
{
    return r->load_ms < 0 || r->wake_ms < 0 ? 0 : r->load_ms - r->wake_ms;
}

static void decide(build_ctx *c)
{
    const plan_input *in = c->in;
    for (size_t r = 0; r < in->nrunning; r++) {
        const plan_running *pr = &in->running[r];
        int t = -1;
        for (size_t k = 0; k < in->ntarget && t < 0; k++)
            if (strcmp(in->target[k].id, pr->id) == 0) t = (int)k;
        c->target_of[r] = t;
        c->note[r][0] = '\0';
        bool same = t >= 0 && !pr->no_keep && same_hash(in->target[t].hash, pr->hash);
        if (same)
            c->dec[r] = pr->asleep ? D_WAKE : D_KEEP;
        else if (t >= 0 || pr->no_keep)
            c->dec[r] = D_STOP;
        else if (pr->asleep)
            c->dec[r] = D_ASLEEP;
        else if (pr->tier == TIER_STOP)
            c->dec[r] = D_STOP;
        else if (tier_sleep_cheaper(pr->wake_ms, pr->load_ms))
            c->dec[r] = D_SLEEP;
        else {
            c->dec[r] = D_STOP;
            snprintf(c->note[r], sizeof c->note[r],
                     "stopped, not slept: a wake (%lld ms) is not expected to be cheaper than a "
                     "cold load (%lld ms)",
                     (long long)pr->wake_ms, (long long)pr->load_ms);
        }
    }
}

static plan_step *step_add(plan *out, plan_step_kind kind, const char *id, int64_t expect_ms)
{
    plan_step *st = &out->steps[out->nsteps++];
    st->kind = kind;
    st->id = id;
    st->expect_ms = expect_ms;
    if (expect_ms >= 0)
        out->expect_ms += expect_ms;
    else
        out->expect_partial = true;
    return st;
}

static void leave_steps(build_ctx *c, plan *out, pstate *ps)
{
    const plan_input *in = c->in;
    for (size_t k = in->nrunning; k-- > 0;) {
        if (c->dec[k] != D_STOP) continue;
        ps->nleave++;
        give_back(&ps->pred, &in->running[k].held);
        plan_step *st = step_add(out, PLAN_STOP, in->running[k].id, 0);
        st->v.ok = true;
        memcpy(st->note, c->note[k], sizeof st->note);
        mem_record(&ps->pred, ps->res, ps->nres, &st->after);
    }
    for (size_t k = in->nrunning; k-- > 0;) {
        const plan_running *pr = &in->running[k];
        if (c->dec[k] != D_SLEEP) continue;
        ps->nleave++;
        need adm;
        plan_need_minus(&pr->asleep_need, &pr->held, &adm);
        adm.ngpu = 0; /* the host side only: a sleep frees GPU memory */
        adm.pageable_host = pr->asleep_need.pageable_host;
        verdict v = {.ok = true};
        if (adm.host_bytes) gate_check(&ps->pred, &adm, ps->res, ps->nres, pr->id, in->policy, &v);
        plan_step *st;
        if (!v.ok) {
            c->dec[k] = D_STOP;
            snprintf(c->note[k], sizeof c->note[k],
                     "sleep refused by the gate: %s; stopped instead", v.reason);
            give_back(&ps->pred, &pr->held);
            st = step_add(out, PLAN_STOP, pr->id, 0);
            st->v.ok = true;
            memcpy(st->note, c->note[k], sizeof st->note);
        } else {
            change(&ps->pred, &pr->held, &pr->asleep_need);
            st = step_add(out, PLAN_SLEEP, pr->id,
                          pr->sleep_ms >= 0 ? pr->sleep_ms : PLAN_SLEEP_PRIOR_MS);
            st->tier = pr->tier;
            st->v = v;
        }
        mem_record(&ps->pred, ps->res, ps->nres, &st->after);
    }
}

static void refuse(plan *out, plan_step *st)
{
    if (st->v.ok || !out->ok) return;
    out->ok = false;
    out->refused = st->id;
    snprintf(out->reason, sizeof out->reason, "%s", st->v.reason);
}

/* The gate on n for a start or a wake; deferred as plan.h says. */
static void judge(const plan_input *in, pstate *ps, plan_step *st, const need *n)
{
    gate_check(&ps->pred, n, ps->res, ps->nres, st->id, in->policy, &st->v);
    if (!st->v.ok && ps->nleave &&
        (!strcmp(st->v.binding, "host.contig") || !strcmp(st->v.binding, "host.psi"))) {
        /* measured with the leaving services still there: judged again after the stops */
        st->deferred = true;
        _Static_assert(sizeof st->deferred_why == sizeof st->v.reason, "same size");
        _Static_assert(sizeof st->deferred_binding == sizeof st->v.binding, "same size");
        memcpy(st->deferred_why, st->v.reason, sizeof st->deferred_why);
        memcpy(st->deferred_binding, st->v.binding, sizeof st->deferred_binding);
        snapshot later = ps->pred;
        later.host.buddyinfo_ok = false;
        later.host.psi_ok = false;
        gate_check(&later, n, ps->res, ps->nres, st->id, in->policy, &st->v);
    }
}

static int running_of(const build_ctx *c, size_t t)
{
    for (size_t r = 0; r < c->in->nrunning; r++)
        if (c->target_of[r] == (int)t) return (int)r;
    return -1;
}

static void enter_steps(build_ctx *c, plan *out, pstate *ps)
{
    const plan_input *in = c->in;
    const char *first = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t t = 0; t < in->ntarget; t++) {
            const plan_target *tg = &in->target[t];
            int r = running_of(c, t);
            if ((r >= 0 && c->dec[r] == D_KEEP) || tg->start_first != (pass == 0)) continue;
            const plan_running *pr = r >= 0 && c->dec[r] == D_WAKE ? &in->running[r] : NULL;
            plan_step *st = pr ? step_add(out, PLAN_WAKE, tg->id, pr->wake_ms)
                               : step_add(out, PLAN_START, tg->id, tg->expect_ms);
            if (tg->vllm && !tg->remote && first)
                warn(out,
                     "vLLM service '%s' is not started first ('%s' starts before it): "
                     "vLLM sizes its memory from what is free when it starts",
                     tg->id, first);
            if (!first && !tg->remote) first = tg->id; /* a remote start takes no memory */
            if (tg->remote) {
                st->v.ok = true; /* nothing of ours to hold: no gate */
                mem_record(&ps->pred, ps->res, ps->nres, &st->after);
                continue;
            }
            need n = tg->need;
            if (pr) {
                st->tier = pr->tier;
                plan_need_minus(&tg->need, &pr->held, &n);
            }
            judge(in, ps, st, &n);
            refuse(out, st);
            ps->res[ps->nres].service = tg->id;
            ps->res[ps->nres].need = n;
            ps->nres++;
            mem_record(&ps->pred, ps->res, ps->nres, &st->after);
        }
    }
}

static void build(build_ctx *c, plan *out)
{
    const plan_input *in = c->in;
    memset(out, 0, sizeof *out);
    /* the prediction: shares nothing mutable with the caller's snapshot
     * (the gate never reads procs) */
    pstate *ps = &c->ps;
    memset(ps, 0, sizeof *ps);
    ps->pred = *in->snap;
    for (size_t i = 0; i < HOST_MAX_GPUS; i++) {
        ps->pred.gpus[i].procs = NULL;
        ps->pred.gpus[i].nprocs = 0;
    }
    sync_unified(&ps->pred);
    ps->nres = in->nres;
    if (ps->nres) memcpy(ps->res, in->res, ps->nres * sizeof ps->res[0]);
    mem_record(&ps->pred, ps->res, ps->nres, &out->before);
    out->ok = true;

    for (size_t t = 0; t < in->ntarget; t++) {
        int r = running_of(c, t);
        if (r >= 0 && c->dec[r] == D_KEEP) out->keep[out->nkeep++] = in->target[t].id;
    }
    for (size_t r = 0; r < in->nrunning; r++)
        if (c->dec[r] == D_ASLEEP) out->asleep[out->nasleep++] = in->running[r].id;
    leave_steps(c, out, ps);
    enter_steps(c, out, ps);
}

/* The sleeper to stop next when the plan does not fit: the least benefit,
 * ties the later running one; -1 when none is left. */
static int least_benefit(const build_ctx *c)
{
    int best = -1;
    for (size_t r = 0; r < c->in->nrunning; r++) {
        if (c->dec[r] != D_SLEEP && c->dec[r] != D_ASLEEP) continue;
        if (best < 0 || benefit(&c->in->running[r]) <= benefit(&c->in->running[best]))
            best = (int)r;
    }
    return best;
}

int plan_make(const plan_input *in, plan *out, char *err, size_t errlen)
{
    if (!out) {
        errf(err, errlen, "plan: no output plan given");
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (!in) {
        errf(err, errlen, "plan: no input given");
        return -1;
    }
    if (check_input(in, err, errlen)) return -1;

    build_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        errf(err, errlen, "plan: out of memory for the plan's state");
        return -1;
    }
    c->in = in;
    decide(c);
    for (;;) {
        build(c, out);
        int r = out->ok ? -1 : least_benefit(c);
        if (r < 0) break;
        snprintf(c->note[r], sizeof c->note[r], "%s: the target does not fit beside it asleep",
                 c->dec[r] == D_SLEEP ? "stopped, not slept" : "stopped");
        c->dec[r] = D_STOP;
    }
    free(c);
    return 0;
}

static int choice_cmp(const void *a, const void *b)
{
    const plan_choice *x = a, *y = b;
    if (x->ok != y->ok) return x->ok ? -1 : 1;
    if (x->nstops != y->nstops) return x->nstops < y->nstops ? -1 : 1;
    if (x->nwakes != y->nwakes) return x->nwakes > y->nwakes ? -1 : 1;
    if (x->nservices != y->nservices) return x->nservices < y->nservices ? -1 : 1;
    if (x->declared_mb != y->declared_mb) return x->declared_mb < y->declared_mb ? -1 : 1;
    return strcmp(x->mode, y->mode);
}

void plan_rank(plan_choice *c, size_t n)
{
    if (n > 1) qsort(c, n, sizeof *c, choice_cmp);
}
