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

    /* the prediction: shares nothing mutable with the caller's snapshot
     * (the gate never reads procs) */
    snapshot pred = *in->snap;
    for (size_t i = 0; i < HOST_MAX_GPUS; i++) {
        pred.gpus[i].procs = NULL;
        pred.gpus[i].nprocs = 0;
    }
    sync_unified(&pred);

    reservation res[2 * PLAN_MAX];
    size_t nres = in->nres;
    if (nres) memcpy(res, in->res, nres * sizeof res[0]);
    mem_record(&pred, res, nres, &out->before);
    out->ok = true;

    /* keep: same id, both hashes known and equal */
    bool kept[PLAN_MAX] = {0};
    bool stays[PLAN_MAX] = {0}; /* running i is kept */
    for (size_t t = 0; t < in->ntarget; t++)
        for (size_t r = 0; r < in->nrunning; r++)
            if (strcmp(in->target[t].id, in->running[r].id) == 0) {
                if (!in->running[r].no_keep && same_hash(in->target[t].hash, in->running[r].hash)) {
                    kept[t] = stays[r] = true;
                    out->keep[out->nkeep++] = in->target[t].id;
                }
                break;
            }

    size_t nstops = 0;
    for (size_t k = in->nrunning; k-- > 0;) {
        if (stays[k]) continue;
        nstops++;
        give_back(&pred, &in->running[k].held);
        plan_step *st = &out->steps[out->nsteps++];
        st->kind = PLAN_STOP;
        st->id = in->running[k].id;
        st->v.ok = true;
        mem_record(&pred, res, nres, &st->after);
    }

    /* starts: start_first ones first, each group in the mode's order */
    const char *first = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t t = 0; t < in->ntarget; t++) {
            const plan_target *tg = &in->target[t];
            if (kept[t] || tg->start_first != (pass == 0)) continue;
            plan_step *st = &out->steps[out->nsteps++];
            st->kind = PLAN_START;
            st->id = tg->id;
            if (tg->vllm && !tg->remote && first)
                warn(out,
                     "vLLM service '%s' is not started first ('%s' starts before it): "
                     "vLLM sizes its memory from what is free when it starts",
                     tg->id, first);
            if (!first && !tg->remote) first = tg->id; /* a remote start takes no memory */
            if (tg->remote) {
                st->v.ok = true; /* nothing of ours to hold: no gate */
                mem_record(&pred, res, nres, &st->after);
                continue;
            }
            gate_check(&pred, &tg->need, res, nres, tg->id, in->policy, &st->v);
            if (!st->v.ok && nstops &&
                (!strcmp(st->v.binding, "host.contig") || !strcmp(st->v.binding, "host.psi"))) {
                /* measured with the leaving services still there: judged again after the stops */
                st->deferred = true;
                _Static_assert(sizeof st->deferred_why == sizeof st->v.reason, "same size");
                _Static_assert(sizeof st->deferred_binding == sizeof st->v.binding, "same size");
                memcpy(st->deferred_why, st->v.reason, sizeof st->deferred_why);
                memcpy(st->deferred_binding, st->v.binding, sizeof st->deferred_binding);
                snapshot later = pred;
                later.host.buddyinfo_ok = false;
                later.host.psi_ok = false;
                gate_check(&later, &tg->need, res, nres, tg->id, in->policy, &st->v);
            }
            if (!st->v.ok && out->ok) {
                out->ok = false;
                out->refused = tg->id;
                snprintf(out->reason, sizeof out->reason, "%s", st->v.reason);
            }
            res[nres].service = tg->id;
            res[nres].need = tg->need;
            nres++;
            mem_record(&pred, res, nres, &st->after);
        }
    }
    return 0;
}

static int choice_cmp(const void *a, const void *b)
{
    const plan_choice *x = a, *y = b;
    if (x->ok != y->ok) return x->ok ? -1 : 1;
    if (x->nstops != y->nstops) return x->nstops < y->nstops ? -1 : 1;
    if (x->nservices != y->nservices) return x->nservices < y->nservices ? -1 : 1;
    if (x->declared_mb != y->declared_mb) return x->declared_mb < y->declared_mb ? -1 : 1;
    return strcmp(x->mode, y->mode);
}

void plan_rank(plan_choice *c, size_t n)
{
    if (n > 1) qsort(c, n, sizeof *c, choice_cmp);
}
