/* searchfit.c (models) - `model search --fit`: for each repository found,
 * what `model fit hf:ID` would say in one line: the best file that fits
 * this host alone (the most bits per weight among those that fit: fit's
 * own order), its quantisation, size and the largest context that fits;
 * or that none fits, or why the repository could not be read.  Headers
 * only, over Range requests (fit.h). */
#include "models/searchfit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fit.h"
#include "util/buf.h"

typedef struct best {
    const fit_model *fm;
    double bpw;
    int64_t max_ctx;
} best;

/* the best group of s that fits alone, into *b (b->fm NULL: none) */
static void pick(const fit_host *h, const est_params *ep, fit_model *fms, size_t n, best *b,
                 int *estimated, char *firsterr, size_t errlen)
{
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < n; i++) {
        fit_model *fm = &fms[i];
        if (!fm->described) {
            if (!firsterr[0]) snprintf(firsterr, errlen, "%s: %s", fm->grp->label, fm->err);
            continue;
        }
        verdict v;
        char err[512];
        int r = fit_try(h, FIT_ALONE, &fm->g, ep, &v, err, sizeof err);
        if (r < 0) {
            if (!firsterr[0]) snprintf(firsterr, errlen, "%s: %s", fm->grp->label, err);
            continue;
        }
        (*estimated)++;
        double bpw = fm->m.n_params ? (double)fm->m.weight_bytes * 8.0 / (double)fm->m.n_params : 0;
        if (r == 1 && (!b->fm || bpw > b->bpw)) {
            b->fm = fm;
            b->bpw = bpw;
        }
    }
    if (b->fm) b->max_ctx = fit_max_ctx(h, FIT_ALONE, &b->fm->g, ep, fit_ctx_train(&b->fm->m));
}

static cJSON *fit_one(const mctx *c, const mhub *hub, const fit_host *h, const est_params *ep,
                      const char *id)
{
    cJSON *o = cJSON_CreateObject();
    char *src = xasprintf("hf:%s", id);
    msource s;
    char err[1024] = "";
    if (msource_resolve(hub, src, &s, err, sizeof err)) {
        cJSON_AddNullToObject(o, "file");
        cJSON_AddStringToObject(o, "reason", "the repository could not be listed");
        cJSON_AddStringToObject(o, "error", err);
        msource_release(&s); /* what a failed listing kept (repo, revision) */
        free(src);
        return o;
    }
    free(src);
    fit_model *fms = xcalloc(s.ngroups ? s.ngroups : 1, sizeof *fms);
    fit_open_groups(c, hub, &s, fms);
    best b;
    int estimated = 0;
    pick(h, ep, fms, s.ngroups, &b, &estimated, err, sizeof err);
    cJSON_AddNumberToObject(o, "files", (double)s.ngroups);
    if (b.fm) {
        const mgroup *g = b.fm->grp;
        cJSON_AddStringToObject(o, "file", g->label);
        cJSON_AddItemToObject(o, "quant",
                              g->quant[0] ? cJSON_CreateString(g->quant) : cJSON_CreateNull());
        uint64_t size = g->bytes != UINT64_MAX ? g->bytes : b.fm->g.file_bytes;
        cJSON_AddNumberToObject(o, "size", (double)size);
        cJSON_AddNumberToObject(o, "bits_per_weight", (double)(int)(b.bpw * 100 + 0.5) / 100);
        cJSON_AddNumberToObject(o, "max_ctx", (double)b.max_ctx);
    } else {
        cJSON_AddNullToObject(o, "file");
        cJSON_AddStringToObject(o, "reason",
                                estimated        ? "none fits this host alone"
                                : s.ngroups == 0 ? "no .gguf model in the repository"
                                                 : "no file could be read");
        if (err[0]) cJSON_AddStringToObject(o, "error", err);
    }
    for (size_t i = 0; i < s.ngroups; i++)
        fit_model_release(&fms[i]);
    free(fms);
    msource_release(&s);
    return o;
}

int msearch_fit(const mctx *c, const mhub *hub, est_params *ep, unsigned given, cJSON *models,
                char *err, size_t errlen)
{
    fit_host h;
    if (fit_host_init(&h, c, NULL, -1, err, errlen)) {
        fit_host_release(&h);
        return -1;
    }
    ep->ndev = h.ndev;
    if (!h.ndev && !(given & EST_GIVEN_NGL)) ep->ngl = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, models)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
        if (c->interrupted && *c->interrupted) break;
        if (cJSON_IsString(id))
            cJSON_AddItemToObject(m, "fit", fit_one(c, hub, &h, ep, id->valuestring));
    }
    fit_host_release(&h);
    return 0;
}

void msearch_fit_text(buf *b, const cJSON *fit)
{
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(fit, "file");
    if (cJSON_IsString(file)) {
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(fit, "size");
        const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(fit, "max_ctx");
        buf_printf(b, "%s, ", file->valuestring);
        buf_bytes(b, (uint64_t)size->valuedouble);
        buf_printf(b, ", ctx up to %.0f", ctx->valuedouble);
        return;
    }
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(fit, "reason");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(fit, "error");
    buf_printf(b, "%s%s%s", cJSON_IsString(why) ? why->valuestring : "cannot tell",
               cJSON_IsString(e) ? ": " : "", cJSON_IsString(e) ? e->valuestring : "");
}
