/* fit.c (models) - `gpumod model fit SOURCE [estimator flags] [--gpus N]
 * [--mode MODE] [--endpoint URL] [--json]`: every model SOURCE names,
 * described and estimated as `model inspect` does (from its header only:
 * remote files cost a few Range requests), and put to the admission gate
 * against the host now, alone (no other GPU process) and beside a mode;
 * with the largest context that fits and bits per weight, best first. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/eflags.h"
#include "model/ggml_type.h"
#include "model/mjson.h"
#include "models/fit.h"
#include "util/buf.h"
#include "util/exitcode.h"

typedef struct fit_args {
    const char *source, *mode, *endpoint;
    est_params ep;
    unsigned given;
    int64_t gpus; /* -1: default */
} fit_args;

typedef struct row {
    fit_model *fm;
    bool estimated;
    estimate e;
    char eerr[512];
    bool fits[3];
    verdict v[3];
    int64_t max_ctx[3]; /* [FIT_ALONE], [FIT_MODE] */
    double bpw;
    uint64_t size; /* UINT64_MAX unknown */
} row;

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpumod: model fit: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: gpumod model fit SOURCE [--ctx N] [--parallel N] [-ctk T] [-ctv T] "
                    "[--ngl N|all] [--n-cpu-moe N] [-fa on|off|auto] [--gpus N] [--mode MODE] "
                    "[--endpoint URL] [--json]\n");
    return EXIT_USAGE;
}

static int parse_args(int argc, char **argv, fit_args *a)
{
    memset(a, 0, sizeof *a);
    est_params_default(&a->ep);
    a->gpus = -1;
    for (int i = 1; i < argc; i++) {
        char err[256];
        int r = est_flag_parse(argc, argv, &i, &a->ep, &a->given, err, sizeof err);
        if (r < 0) return usage("%s", err);
        if (r) continue;
        const char *s = argv[i];
        const char **dst = !strcmp(s, "--mode")       ? &a->mode
                           : !strcmp(s, "--endpoint") ? &a->endpoint
                                                      : NULL;
        if (dst || !strcmp(s, "--gpus")) {
            if (i + 1 >= argc) return usage("%s: expected a value", s);
            if (dst) {
                *dst = argv[++i];
                continue;
            }
            char *end;
            long long n = strtoll(argv[++i], &end, 10);
            if (!*argv[i] || *end || n < 0 || n > HOST_MAX_GPUS)
                return usage("--gpus: expected an integer in 0..16, found '%s'", argv[i]);
            a->gpus = n;
        } else if (s[0] == '-' || a->source) {
            return usage("unexpected argument '%s'", s);
        } else {
            a->source = s;
        }
    }
    if (!a->source)
        return usage("%s", "missing SOURCE (a .gguf file, a directory, a URL or "
                           "hf:ORG/REPO[/FILE])");
    return 0;
}

static void eval_row(const fit_host *h, const est_params *ep, row *r)
{
    fit_model *fm = r->fm;
    r->size = fm->grp->bytes != UINT64_MAX ? fm->grp->bytes
              : fm->opened                 ? fm->g.file_bytes
                                           : UINT64_MAX;
    if (!fm->described) return;
    r->bpw = fm->m.n_params ? (double)fm->m.weight_bytes * 8.0 / (double)fm->m.n_params : 0;
    if (estimate_llamacpp(&fm->g, ep, &r->e, r->eerr, sizeof r->eerr)) return;
    r->estimated = true;
    int last = h->mode ? FIT_MODE : FIT_ALONE;
    for (int k = FIT_NOW; k <= last; k++)
        r->fits[k] = fit_check(h, k, &r->e, &r->v[k]);
    int64_t top = fit_ctx_train(&fm->m);
    for (int k = FIT_ALONE; k <= last; k++)
        r->max_ctx[k] = fit_max_ctx(h, k, &fm->g, ep, top);
}

static int row_fit(const row *r, bool with_mode)
{
    return r->estimated && r->fits[with_mode ? FIT_MODE : FIT_ALONE];
}

static bool sort_mode;

static int row_cmp(const void *pa, const void *pb)
{
    const row *a = pa, *b = pb;
    int fa = row_fit(a, sort_mode), fb = row_fit(b, sort_mode);
    if (fa != fb) return fb - fa;
    if (a->estimated != b->estimated) return (int)b->estimated - (int)a->estimated;
    if (a->bpw != b->bpw) return a->bpw < b->bpw ? 1 : -1;
    return strcmp(a->fm->grp->label, b->fm->grp->label);
}

static const char *row_error(const row *r)
{
    if (!r->fm->described) return r->fm->err;
    if (!r->estimated) return r->eerr;
    return NULL;
}

static void json_row(buf *b, const fit_host *h, const row *r)
{
    const fit_model *fm = r->fm;
    buf_adds(b, "{\"file\":");
    buf_json_str(b, fm->grp->label);
    buf_printf(b, ",\"parts\":%zu,\"size\":", fm->grp->nparts);
    if (r->size == UINT64_MAX)
        buf_adds(b, "null");
    else
        buf_printf(b, "%llu", (unsigned long long)r->size);
    buf_adds(b, ",\"quant\":");
    buf_json_str(b, fm->grp->quant);
    buf_printf(b, ",\"bits_per_weight\":%.4f,\"model\":", r->bpw);
    if (fm->described)
        model_summary_json(b, &fm->m, &fm->g);
    else
        buf_adds(b, "null");
    buf_adds(b, ",\"estimate\":");
    if (r->estimated)
        model_estimate_json(b, &r->e);
    else
        buf_adds(b, "null");
    const char *err = row_error(r);
    if (err) {
        buf_adds(b, ",\"error\":");
        buf_json_str(b, err);
    }
    buf_printf(b, ",\"fits\":{\"now\":%s,\"alone\":%s,\"mode\":", r->fits[0] ? "true" : "false",
               r->fits[1] ? "true" : "false");
    buf_adds(b, !h->mode ? "null" : r->fits[2] ? "true" : "false");
    int key = h->mode ? FIT_MODE : FIT_ALONE;
    buf_adds(b, "},\"reason\":");
    buf_json_str(b, err ? err : r->fits[key] ? "" : r->v[key].reason);
    buf_adds(b, ",\"reasons\":{\"now\":");
    buf_json_str(b, r->estimated && !r->fits[0] ? r->v[0].reason : "");
    buf_adds(b, ",\"alone\":");
    buf_json_str(b, r->estimated && !r->fits[1] ? r->v[1].reason : "");
    buf_adds(b, ",\"mode\":");
    if (h->mode)
        buf_json_str(b, r->estimated && !r->fits[2] ? r->v[2].reason : "");
    else
        buf_adds(b, "null");
    buf_printf(b, "},\"max_ctx\":{\"alone\":%lld,\"mode\":", (long long)r->max_ctx[FIT_ALONE]);
    if (h->mode)
        buf_printf(b, "%lld}}", (long long)r->max_ctx[FIT_MODE]);
    else
        buf_adds(b, "null}}");
}

static void json_head(buf *b, const fit_args *a, const fit_host *h)
{
    const est_params *ep = &a->ep;
    buf_adds(b, "{\"source\":");
    buf_json_str(b, a->source);
    buf_printf(b,
               ",\"params\":{\"ctx\":%lld,\"parallel\":%lld,\"type_k\":\"%s\",\"type_v\":\"%s\","
               "\"ngl\":%lld,\"n_cpu_moe\":%lld,\"flash_attn\":%d,\"gpus\":%zu}",
               (long long)ep->ctx, (long long)ep->parallel, ggml_type_get(ep->type_k)->name,
               ggml_type_get(ep->type_v)->name, (long long)ep->ngl, (long long)ep->n_cpu_moe,
               ep->flash_attn, ep->ndev);
    const host_mem *hm = &h->now.host;
    buf_printf(b,
               ",\"host\":{\"mem_total_bytes\":%llu,\"mem_available_bytes\":%llu,"
               "\"host_margin_bytes\":%llu,\"gpu_margin_bytes\":%llu,\"devices\":[",
               (unsigned long long)hm->mem_total, (unsigned long long)hm->mem_available,
               (unsigned long long)h->pol.host_margin_bytes,
               (unsigned long long)h->pol.gpu_margin_bytes);
    for (size_t i = 0; i < h->ndev; i++)
        buf_printf(b, "%s%d", i ? "," : "", h->dev_index[i]);
    buf_adds(b, "],\"gpus\":[");
    for (size_t i = 0; i < h->now.ngpus; i++) {
        const gpu_dev *g = &h->now.gpus[i];
        buf_printf(b, "%s{\"index\":%d,\"name\":", i ? "," : "", g->index);
        buf_json_str(b, g->name);
        buf_printf(b, ",\"total_bytes\":%llu,\"used_bytes\":%llu,\"free_bytes\":%llu}",
                   (unsigned long long)g->total_bytes, (unsigned long long)g->used_bytes,
                   (unsigned long long)g->free_bytes);
    }
    buf_adds(b, "]},\"mode\":");
    buf_json_str_or_null(b, h->mode);
}

typedef struct totals {
    uint64_t fetched, header, files;
    int requests;
    bool remote, files_known;
} totals;

static void cell_bytes(buf *b, uint64_t n, int w)
{
    buf t = BUF_INIT;
    if (n == UINT64_MAX)
        buf_adds(&t, "?");
    else
        buf_bytes(&t, n);
    buf_printf(b, " %*s", w, t.p);
    buf_release(&t);
}

static void text_head(buf *b, const fit_args *a, const fit_host *h, const totals *t, size_t n)
{
    buf_printf(b, "%s: %zu model%s, ", a->source, n, n == 1 ? "" : "s");
    buf_adds(b, t->remote ? "read " : "headers ");
    buf_bytes(b, t->remote ? t->fetched : t->header);
    buf_adds(b, " of ");
    buf_bytes(b, t->files);
    double pct =
        t->files ? 100.0 * (double)(t->remote ? t->fetched : t->header) / (double)t->files : 0;
    buf_printf(b, " (%.2f %%)", pct);
    if (t->remote) buf_printf(b, " in %d request%s", t->requests, t->requests == 1 ? "" : "s");
    buf_printf(b, "\n-c %lld --parallel %lld -ctk %s -ctv %s -ngl ", (long long)a->ep.ctx,
               (long long)a->ep.parallel, ggml_type_get(a->ep.type_k)->name,
               ggml_type_get(a->ep.type_v)->name);
    if (a->ep.ngl < 0)
        buf_adds(b, "all");
    else
        buf_printf(b, "%lld", (long long)a->ep.ngl);
    if (a->ep.n_cpu_moe) buf_printf(b, " --n-cpu-moe %lld", (long long)a->ep.n_cpu_moe);
    buf_printf(b, " on %zu GPU%s", h->ndev, h->ndev == 1 ? "" : "s");
    if (h->mode) buf_printf(b, "; mode '%s' beside it", h->mode);
    buf_adds(b, " (alone: as if no other process used the GPUs; host memory as it is now)\n");
}

static void text_rows(buf *b, const fit_host *h, const row *rows, size_t n)
{
    buf_printf(b, "%-40s %-8s %10s %6s", "file", "quant", "size", "bpw");
    for (size_t d = 0; d < h->ndev; d++)
        buf_printf(b, "   need gpu%-2d", h->dev_index[d]);
    buf_printf(b, " %12s %-5s %-5s", "host", "now", "alone");
    if (h->mode) buf_printf(b, " %-5s", "mode");
    buf_printf(b, " %8s\n", "max ctx");
    int key = h->mode ? FIT_MODE : FIT_ALONE;
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        buf_printf(b, "%-40s %-8s", r->fm->grp->label,
                   r->fm->grp->quant[0] ? r->fm->grp->quant : "-");
        cell_bytes(b, r->size, 10);
        if (!r->estimated) {
            buf_printf(b, " %6s  error: %s\n", r->fm->described ? "" : "-", row_error(r));
            continue;
        }
        buf_printf(b, " %6.2f", r->bpw);
        for (size_t d = 0; d < h->ndev; d++)
            cell_bytes(b, r->e.dev_total[d], 13);
        cell_bytes(b, r->e.host_total, 12);
        for (int k = FIT_NOW; k <= key; k++)
            buf_printf(b, " %-5s", r->fits[k] ? "yes" : "no");
        if (r->max_ctx[key])
            buf_printf(b, " %8lld\n", (long long)r->max_ctx[key]);
        else
            buf_printf(b, " %8s\n", "none"); /* not even 256 */
    }
    bool any = false;
    for (size_t i = 0; i < n; i++)
        if (rows[i].estimated && !rows[i].fits[key]) {
            if (!any) buf_printf(b, "why not (%s):\n", h->mode ? "beside the mode" : "alone");
            any = true;
            buf_printf(b, "  %s: %s\n", rows[i].fm->grp->label, rows[i].v[key].reason);
        }
}

static void totals_of(const row *rows, size_t n, const msource *s, totals *t)
{
    memset(t, 0, sizeof *t);
    t->remote = s->kind == MSRC_URL || s->kind == MSRC_HF;
    for (size_t i = 0; i < n; i++) {
        t->fetched += rows[i].fm->fetched;
        t->requests += rows[i].fm->requests;
        if (rows[i].fm->opened) t->header += rows[i].fm->g.header_bytes_read;
        if (rows[i].size != UINT64_MAX) t->files += rows[i].size;
    }
}

static int report(const mctx *c, const fit_args *a, const fit_host *h, const msource *s, row *rows)
{
    size_t n = s->ngroups, ok = 0;
    for (size_t i = 0; i < n; i++)
        ok += rows[i].estimated;
    sort_mode = h->mode != NULL;
    qsort(rows, n, sizeof *rows, row_cmp);
    totals t;
    totals_of(rows, n, s, &t);
    buf b = BUF_INIT;
    if (c->json) {
        json_head(&b, a, h);
        buf_printf(&b,
                   ",\"bytes_fetched\":%llu,\"requests\":%d,\"header_bytes\":%llu,"
                   "\"files_bytes\":%llu,\"files\":[",
                   (unsigned long long)t.fetched, t.requests, (unsigned long long)t.header,
                   (unsigned long long)t.files);
        for (size_t i = 0; i < n; i++) {
            if (i) buf_addc(&b, ',');
            json_row(&b, h, &rows[i]);
        }
        buf_adds(&b, "],\"skipped\":[");
        for (size_t i = 0; i < s->skipped.n; i++) {
            if (i) buf_addc(&b, ',');
            buf_json_str(&b, s->skipped.v[i]);
        }
        buf_adds(&b, "]}\n");
    } else {
        text_head(&b, a, h, &t, n);
        text_rows(&b, h, rows, n);
        for (size_t i = 0; i < s->skipped.n; i++)
            buf_printf(&b, "skipped %s\n", s->skipped.v[i]);
    }
    fputs(b.p, stdout);
    buf_release(&b);
    if (!ok) fprintf(stderr, "gpumod: model fit: no model of '%s' could be estimated\n", a->source);
    return ok ? EXIT_OK : EXIT_REFUSED;
}

/* The source listed (hf: needs the Hub; a bad endpoint matters only then). */
static int resolve(const mctx *c, const char *source, const char *endpoint, mhub *hub,
                   bool *has_hub, msource *s)
{
    char err[1024];
    *has_hub = mhub_init(hub, &c->cfg.set, endpoint, err, sizeof err) == 0;
    if (*has_hub) hub->interrupted = c->interrupted;
    if (!*has_hub && (!strncmp(source, "hf:", 3) || endpoint)) {
        fprintf(stderr, "gpumod: %s\n", err);
        return EXIT_USAGE;
    }
    if (msource_resolve(*has_hub ? hub : NULL, source, s, err, sizeof err)) {
        fprintf(stderr, "gpumod: %s\n", err);
        return EXIT_REFUSED;
    }
    if (!s->ngroups) {
        fprintf(stderr, "gpumod: '%s' names no .gguf model\n", source);
        msource_release(s);
        return EXIT_REFUSED;
    }
    return 0;
}

int model_fit_cmd(mctx *c, int argc, char **argv)
{
    fit_args a;
    if (parse_args(argc, argv, &a)) return EXIT_USAGE;
    fit_host h;
    char err[1024];
    if (fit_host_init(&h, c, a.mode, a.gpus, err, sizeof err)) {
        fprintf(stderr, "gpumod: model fit: %s\n", err);
        fit_host_release(&h);
        return EXIT_USAGE;
    }
    a.ep.ndev = h.ndev;
    if (!h.ndev && !(a.given & EST_GIVEN_NGL)) a.ep.ngl = 0;
    mhub hub;
    bool has_hub;
    msource s;
    int rc = resolve(c, a.source, a.endpoint, &hub, &has_hub, &s);
    if (rc) {
        if (has_hub) mhub_release(&hub);
        fit_host_release(&h);
        return rc;
    }
    fit_model *fms = xcalloc(s.ngroups, sizeof *fms);
    row *rows = xcalloc(s.ngroups, sizeof *rows);
    fit_open_groups(c, has_hub ? &hub : NULL, &s, fms);
    for (size_t i = 0; i < s.ngroups; i++) {
        rows[i].fm = &fms[i];
        eval_row(&h, &a.ep, &rows[i]);
    }
    rc = report(c, &a, &h, &s, rows);
    for (size_t i = 0; i < s.ngroups; i++)
        fit_model_release(&fms[i]);
    free(rows);
    free(fms);
    msource_release(&s);
    if (has_hub) mhub_release(&hub);
    fit_host_release(&h);
    return rc;
}
