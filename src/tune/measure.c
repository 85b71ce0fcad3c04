/* measure.c (tune) - gpumod-bench as a subprocess, its document read
 * back (measure.h). */
#include "tune/measure.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oai/docfile.h"
#include "util/buf.h"
#include "util/run.h"
#include "util/strv.h"

const char *const tune_obj_names[] = {"throughput", "engine_tps", "tpot", "ttft", "goodput", "score", "prefill", NULL};
const char *const tune_obj_units[] = {"tok/s", "tok/s", "ms", "ms", "req/s", "", "tok/s", NULL};

bool tune_obj_higher_better(tune_obj o)
{
    return o != OBJ_TPOT && o != OBJ_TTFT;
}

int tune_parse_weights(const char *s, tune_weights *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *tmp = xstrdup(s), *save = NULL;
    int rc = 0, n = 0;
    for (char *it = strtok_r(tmp, ",", &save); it && !rc; it = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(it, '=');
        int k = -1;
        if (eq) {
            *eq = 0;
            for (int i = 0; i < OBJ_SCORE; i++)
                if (!strcmp(tune_obj_names[i], it)) k = i;
        }
        char *end = NULL;
        double w = eq ? strtod(eq + 1, &end) : NAN;
        if (k < 0 || !end || *end || end == eq + 1 || !isfinite(w) || w <= 0) {
            snprintf(err, errlen, "--weights '%s': expected METRIC=W,... with METRIC one of throughput, engine_tps, "
                     "tpot, ttft, goodput and W a positive number", s);
            rc = -1;
        } else {
            out->w[k] = w;
            n++;
        }
    }
    free(tmp);
    if (!rc && !n) {
        snprintf(err, errlen, "--weights '%s': no metric given", s);
        rc = -1;
    }
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* the engine's decode speed per request, median over the iteration's
 * requests (timings.predicted_n >= 2) */
static double engine_tps(const cJSON *it)
{
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(it, "requests"), *r;
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(reqs);
    double *v = xcalloc(cap ? cap : 1, sizeof *v);
    cJSON_ArrayForEach(r, reqs)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "timings");
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(t, "predicted_n");
        const cJSON *pm = cJSON_GetObjectItemCaseSensitive(t, "predicted_ms");
        if (cJSON_IsNumber(pn) && cJSON_IsNumber(pm) && pn->valuedouble >= 2 && pm->valuedouble > 0)
            v[n++] = pn->valuedouble * 1000.0 / pm->valuedouble;
    }
    double m = n ? median_of(v, n) : NAN;
    free(v);
    return m;
}

static double num_at(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static double p90_of(const cJSON *it, const char *metric)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "metrics"), metric);
    return num_at(m, "p90");
}

static int take_doc(const cJSON *doc, const tune_load *l, tune_meas *m, char *err, size_t errlen)
{
    const cJSON *pt = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "points"), 0);
    const cJSON *it = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pt, "iterations"), 0);
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(it, "values");
    if (!vals) {
        snprintf(err, errlen, "the bench document has no measured iteration");
        return -1;
    }
    m->completed = (long)num_at(it, "completed");
    m->failed = (long)num_at(it, "failed");
    m->v[OBJ_THROUGHPUT] = num_at(vals, "out_tput");
    m->v[OBJ_ENGINE_TPS] = engine_tps(it);
    m->v[OBJ_TPOT] = num_at(vals, "tpot_ms");
    m->v[OBJ_TTFT] = num_at(vals, "ttft_ms");
    m->v[OBJ_GOODPUT] = num_at(vals, "goodput");
    m->p90 = p90_of(it, l->obj == OBJ_TTFT ? "ttft_ms" : "tpot_ms");
    if (m->failed > 0) {
        const cJSON *errs = cJSON_GetObjectItemCaseSensitive(it, "errors");
        const cJSON *e1 = errs ? errs->child : NULL;
        snprintf(err, errlen, "%ld of %ld requests failed%s%s", m->failed, m->failed + m->completed,
                 e1 ? ": " : "", e1 ? e1->string : "");
        return -1;
    }
    if (l->obj == OBJ_SCORE) {
        double s = 0;
        for (int k = 0; k < OBJ_SCORE; k++) {
            if (l->weights->w[k] <= 0) continue;
            double x = m->v[k];
            if (!(x > 0)) {
                snprintf(err, errlen, "the score needs %s, which this run did not give", tune_obj_names[k]);
                return -1;
            }
            s += l->weights->w[k] * log(x) * (tune_obj_higher_better((tune_obj)k) ? 1 : -1);
        }
        m->obj = s;
    } else {
        m->obj = m->v[l->obj];
    }
    if (!isfinite(m->obj)) {
        snprintf(err, errlen, "the run gave no %s%s", tune_obj_names[l->obj],
                 l->obj == OBJ_ENGINE_TPS ? " (the engine reported no timings: use --objective throughput)"
                 : l->obj == OBJ_GOODPUT  ? " (give --slo)"
                                          : "");
        return -1;
    }
    return 0;
}

static void bench_argv(strv *a, const tune_load *l, uint64_t seed, const char *json)
{
    strv_push(a, "gpumod-bench");
    strv_push(a, l->url);
    strv_pushf(a, "--concurrency=%d", l->concurrency);
    strv_pushf(a, "--requests=%ld", l->requests);
    strv_pushf(a, "--warmup=%ld", l->warmup);
    strv_push(a, "--iterations=1");
    strv_pushf(a, "--prompt-tokens=%ld", l->prompt_tokens);
    strv_pushf(a, "--gen-tokens=%ld", l->gen_tokens);
    strv_pushf(a, "--seed=%llu", (unsigned long long)seed);
    strv_pushf(a, "--timeout=%g", l->timeout_s);
    if (l->model) strv_pushf(a, "--model=%s", l->model);
    if (l->slo) strv_pushf(a, "--slo=%s", l->slo);
    strv_pushf(a, "--json=%s", json);
    strv_push(a, "--raw");
    strv_push(a, "--no-store");
    strv_push(a, "-q");
}

int tune_measure(const tune_load *l, uint64_t seed, const char *tmpdir, volatile int *interrupted, tune_meas *m,
                 char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    for (int k = 0; k < OBJ_SCORE; k++) m->v[k] = NAN;
    m->obj = m->p90 = NAN;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(err, errlen, "cannot find this program (/proc/self/exe) to run gpumod-bench");
        return -1;
    }
    self[n] = 0;
    char *json = xasprintf("%s/bench-%llu.json", tmpdir, (unsigned long long)seed);
    strv a = STRV_INIT;
    bench_argv(&a, l, seed, json);
    double per_req = l->timeout_s > 0 ? l->timeout_s : 600;
    long rounds = (l->requests + l->warmup) / (l->concurrency > 0 ? l->concurrency : 1) + 2;
    run_opts o = {.timeout_ms = (int64_t)(per_req * 1000 * (double)rounds) + 60000, .file = self,
                  .max_output = 65536, .cancel = interrupted}; /* Ctrl-C ends the bench too */
    buf out = BUF_INIT;
    run_result res;
    char rerr[256];
    int rc = run_capture(a.v, &o, &out, &res, rerr, sizeof rerr);
    cJSON *doc = NULL;
    if (rc != 0) {
        /* the bench's own words: its last line */
        while (out.len && out.p[out.len - 1] == '\n') out.p[--out.len] = 0;
        const char *last = out.len ? strrchr(out.p, '\n') : NULL;
        snprintf(err, errlen, "gpumod-bench: %s%s%s", rerr, out.len ? ": " : "",
                 out.len ? (last ? last + 1 : out.p) : "");
    } else if (!(doc = docfile_read(json, rerr, sizeof rerr))) {
        snprintf(err, errlen, "gpumod-bench's document: %s", rerr);
        rc = -1;
    } else {
        rc = take_doc(doc, l, m, err, errlen);
    }
    cJSON_Delete(doc);
    unlink(json);
    free(json);
    buf_release(&out);
    strv_release(&a);
    return rc;
}
