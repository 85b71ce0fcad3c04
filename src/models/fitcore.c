/* fitcore.c (models) - what `model fit` and `preset new` share (fit.h):
 * the host three ways, the gate's verdicts, the searches, and the groups
 * of a source opened concurrently. */
#include "models/fit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"
#include "host/host.h"
#include "models/remote.h"
#include "store/db.h"
#include "util/buf.h"
#include "util/errf.h"

static int load_mode(fit_host *h, const mctx *c, const char *mode_id, char *err, size_t errlen)
{
    config_paths paths = {getenv("GPUMOD_CONFIG_DIR"), getenv("GPUMOD_STATE_DIR"),
                          getenv("GPUMOD_SOCKET")};
    config_load(&h->full, &paths);
    h->has_full = true;
    const mode *m = config_mode(&h->full, mode_id);
    if (!m) {
        buf b = BUF_INIT;
        for (size_t i = 0; i < h->full.n_modes; i++)
            buf_printf(&b, "%s%s", i ? ", " : "", h->full.modes[i].id);
        errf(err, errlen, "no mode '%s' in %s (known: %s)", mode_id, h->full.config_dir,
             b.p ? b.p : "none");
        buf_release(&b);
        return -1;
    }
    store *st = NULL;
    bool missing;
    char serr[256];
    if (store_open(&st, h->full.set.state_dir, false, 200, &missing, serr, sizeof serr)) st = NULL;
    int rc = 0;
    for (size_t i = 0; i < m->services.n && h->nres < 64 && !rc; i++) {
        const preset *p = config_preset(&h->full, m->services.v[i]);
        if (!p || p->has_errors) {
            rc = errf_ret(-1, err, errlen, "mode '%s': service '%s' %s (see gpumod config check)",
                          mode_id, m->services.v[i],
                          p ? "has configuration errors" : "is not defined");
            break;
        }
        need_detail nd;
        char e2[512];
        if (service_need(p, &h->full.set, &h->alone, st, &nd, e2, sizeof e2)) {
            rc = errf_ret(-1, err, errlen, "mode '%s': %s", mode_id, e2);
            break;
        }
        if (!strcmp(nd.n.source, "none")) continue;
        h->res[h->nres].service = p->id;
        h->res[h->nres].need = nd.n;
        h->nres++;
    }
    store_close(st);
    return rc;
}

int fit_host_init(fit_host *h, const mctx *c, const char *mode_id, int64_t gpus, char *err,
                  size_t errlen)
{
    memset(h, 0, sizeof *h);
    snapshot_opts o;
    snapshot_opts_from_settings(&c->cfg.set, &o);
    snapshot_take(&h->now, &o);
    policy_from_settings(&c->cfg.set, &h->pol);
    h->alone = h->now;
    for (size_t i = 0; i < h->alone.ngpus; i++) {
        gpu_dev *d = &h->alone.gpus[i];
        d->procs = NULL;
        d->nprocs = 0;
        if (d->unified) continue; /* one pool with the host: host memory stays as it is */
        d->used_bytes = 0;
        d->free_bytes = d->total_bytes;
    }
    if (gpus < 0) gpus = h->now.ngpus > 0 ? 1 : 0;
    if ((size_t)gpus > h->now.ngpus)
        return errf_ret(-1, err, errlen, "--gpus %lld: this host has %zu GPU%s", (long long)gpus,
                        h->now.ngpus, h->now.ngpus == 1 ? "" : "s");
    h->ndev = (size_t)gpus;
    for (size_t i = 0; i < h->ndev; i++)
        h->dev_index[i] = h->now.gpus[i].index;
    h->mode = mode_id;
    if (mode_id) return load_mode(h, c, mode_id, err, errlen);
    return 0;
}

void fit_host_release(fit_host *h)
{
    snapshot_release(&h->now);
    if (h->has_full) config_release(&h->full);
    memset(h, 0, sizeof *h);
}

void fit_need(const fit_host *h, const estimate *e, need *n)
{
    memset(n, 0, sizeof *n);
    snprintf(n->source, sizeof n->source, "estimate");
    n->pageable_host = true; /* llama.cpp under GGML_CUDA_NO_PINNED (daemon/need.c) */
    n->host_bytes = e->host_total;
    n->ngpu = e->ndev < h->ndev ? e->ndev : h->ndev;
    for (size_t i = 0; i < n->ngpu; i++) {
        n->gpu[i].index = h->dev_index[i];
        n->gpu[i].bytes = e->dev_total[i];
    }
}

bool fit_check(const fit_host *h, int against, const estimate *e, verdict *v)
{
    need n;
    fit_need(h, e, &n);
    const snapshot *s = against == FIT_NOW ? &h->now : &h->alone;
    size_t nres = against == FIT_MODE ? h->nres : 0;
    gate_check(s, &n, nres ? h->res : NULL, nres, "model-fit", &h->pol, v);
    return v->ok;
}

int fit_try(const fit_host *h, int against, const gguf_file *g, const est_params *ep, verdict *v,
            char *err, size_t errlen)
{
    estimate e;
    if (estimate_llamacpp(g, ep, &e, err, errlen)) return -1;
    return fit_check(h, against, &e, v) ? 1 : 0;
}

int64_t fit_ctx_train(const model_summary *m)
{
    return m->n_ctx_train > 0 ? m->n_ctx_train : (int64_t)1 << 20;
}

int64_t fit_max_ctx(const fit_host *h, int against, const gguf_file *g, const est_params *base,
                    int64_t ctx_max)
{
    est_params ep = *base;
    if (ctx_max > FIT_CTX_MAX) ctx_max = FIT_CTX_MAX; /* n_ctx_train may say anything */
    int64_t lo = 0, hi = ctx_max / 256;               /* in units of 256; lo fits (0: nothing) */
    if (hi < 1) hi = 1;
    verdict v;
    char err[256];
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        ep.ctx = mid * 256;
        if (fit_try(h, against, g, &ep, &v, err, sizeof err) == 1)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo * 256;
}

/* ---- the groups, opened up to 4 at a time ---- */

typedef struct opener {
    const mctx *c;
    const mhub *hub;
    const msource *s;
    fit_model *out;
    pthread_mutex_t mu;
    size_t next;
} opener;

static void open_one(opener *o, fit_model *fm)
{
    const mgroup *grp = fm->grp;
    int rc;
    if (!grp->parts[0].url) {
        rc = gguf_open(&fm->g, grp->first, fm->err, sizeof fm->err);
    } else {
        mremote m;
        memset(&m, 0, sizeof m);
        if (o->hub) m.base = mhub_opts(o->hub, 0); /* the token for the Hub's origin only */
        if (m.base.timeout_ms <= 0) m.base.timeout_ms = 30000;
        m.base.interrupted = o->c->interrupted;
        gguf_io io;
        mremote_io(&m, &io);
        rc = gguf_open_io(&fm->g, grp->first, &io, fm->err, sizeof fm->err);
        fm->fetched = m.bytes_fetched;
        fm->requests = m.requests;
    }
    if (rc) return;
    fm->opened = true;
    if (model_describe(&fm->g, &fm->m, fm->err, sizeof fm->err) == 0) fm->described = true;
}

static void *worker(void *arg)
{
    opener *o = arg;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        size_t i = o->next++;
        pthread_mutex_unlock(&o->mu);
        if (i >= o->s->ngroups) return NULL;
        if (o->c->interrupted && *o->c->interrupted) {
            snprintf(o->out[i].err, sizeof o->out[i].err, "interrupted");
            continue;
        }
        open_one(o, &o->out[i]);
    }
}

void fit_open_groups(const mctx *c, const mhub *hub, const msource *s, fit_model *out)
{
    opener o = {.c = c, .hub = hub, .s = s, .out = out, .next = 0};
    pthread_mutex_init(&o.mu, NULL);
    for (size_t i = 0; i < s->ngroups; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].grp = &s->groups[i];
    }
    pthread_t th[4];
    size_t nth = s->ngroups < 4 ? s->ngroups : 4, started = 0;
    for (size_t i = 1; i < nth; i++)
        if (pthread_create(&th[started], NULL, worker, &o) == 0) started++;
    worker(&o);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&o.mu);
}

void fit_model_release(fit_model *fm)
{
    if (fm->opened) gguf_release(&fm->g);
    fm->opened = false;
}
