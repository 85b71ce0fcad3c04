/* ebench.c (tune) - measurements through the daemon's llama-bench
 * (ebench.h).  The daemon's answer is read back here only: its argv,
 * exit, the reduced results and stderr's tail. */
#include "tune/ebench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "util/buf.h"
#include "util/exitcode.h"
#include "util/url.h"

static char *svc_path(const tlink *l, const char *what)
{
    buf p = BUF_INIT;
    buf_adds(&p, "/services/");
    url_query_escape(&p, l->service);
    buf_printf(&p, "/%s", what);
    return buf_detach(&p);
}

/* the answer's JSON (caller deletes), or NULL */
static cJSON *reply_json(const http_reply *r)
{
    return cJSON_ParseWithLength(r->body.p ? r->body.p : "", r->body.len);
}

/* the daemon's error as one line, llama-bench's stderr tail appended */
static void error_text(const http_reply *r, char *out, size_t len)
{
    cJSON *j = reply_json(r);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const char *m = jstr(e, "message");
    const char *tail = jstr(cJSON_GetObjectItemCaseSensitive(e, "detail"), "stderr_tail");
    buf b = BUF_INIT;
    buf_adds(&b, m ? m : "");
    if (!m) buf_printf(&b, "HTTP %d", r->status);
    if (tail && *tail) {
        buf_adds(&b, " | stderr: ");
        for (const char *p = tail; *p; p++) buf_addc(&b, *p == '\n' || *p == '\t' ? ' ' : *p);
    }
    snprintf(out, len, "%s", b.p);
    buf_release(&b);
    cJSON_Delete(j);
}

int tune_ebench_stop(tlink *l, int64_t timeout_ms, char *err, size_t errlen)
{
    char *path = svc_path(l, "stop");
    http_reply r;
    int rc = ctl_call(&l->paths, "POST", path, NULL, timeout_ms, true, &r);
    free(path);
    if (rc) {
        snprintf(err, errlen, "stopping '%s': the daemon %s", l->service,
                 rc == EXIT_DAEMON ? "does not answer" : "did not answer in time");
        return -1;
    }
    if (r.status != 200) {
        char t[1024];
        error_text(&r, t, sizeof t);
        snprintf(err, errlen, "stopping '%s': %s", l->service, t);
    }
    int st = r.status;
    http_reply_release(&r);
    return st == 200 ? 0 : -1;
}

int tune_ebench_objective(const cJSON *results, tune_obj obj, double *out, char *err, size_t errlen)
{
    bool pp = obj == OBJ_PREFILL;
    const cJSON *e;
    cJSON_ArrayForEach(e, results)
    {
        const cJSON *np = cJSON_GetObjectItemCaseSensitive(e, "n_prompt");
        const cJSON *ng = cJSON_GetObjectItemCaseSensitive(e, "n_gen");
        const cJSON *avg = cJSON_GetObjectItemCaseSensitive(e, "avg_ts");
        if (!cJSON_IsNumber(np) || !cJSON_IsNumber(ng) || !cJSON_IsNumber(avg)) continue;
        bool is_pp = np->valuedouble > 0 && ng->valuedouble == 0, is_tg = np->valuedouble == 0 && ng->valuedouble > 0;
        if ((pp ? is_pp : is_tg) && isfinite(avg->valuedouble)) {
            *out = avg->valuedouble;
            return 0;
        }
    }
    snprintf(err, errlen, "llama-bench reported no %s test (%s)", pp ? "pp (prompt processing)" : "tg (generation)",
             pp ? "n_prompt > 0, n_gen 0" : "n_prompt 0, n_gen > 0");
    return -1;
}

static char *body_of(const tune_ebench *e, const char *overrides)
{
    return xasprintf("{\"overrides\":%s,\"n_prompt\":%ld,\"n_gen\":%ld,\"repetitions\":%d,\"timeout_ms\":%lld}",
                     overrides ? overrides : "null", e->n_prompt, e->n_gen, e->repetitions,
                     (long long)e->timeout_ms);
}

int tune_ebench_measure(tlink *l, const tune_ebench *e, const char *overrides, tune_meas *m, char *why,
                        size_t whylen)
{
    memset(m, 0, sizeof *m);
    m->p90 = NAN;
    for (int k = 0; k < OBJ_SCORE; k++) m->v[k] = NAN;
    char *path = svc_path(l, "engine-bench"), *body = body_of(e, overrides);
    http_reply r;
    /* the daemon's deadline, then its answer: a minute more */
    int rc = ctl_call(&l->paths, "POST", path, body, e->timeout_ms + 60000, true, &r);
    free(path);
    free(body);
    if (rc) {
        snprintf(why, whylen, "engine-bench: the daemon %s",
                 rc == EXIT_DAEMON ? "does not answer (is gpumod serve running?)" : "did not answer in time");
        return TSTART_FAILED;
    }
    int out = TSTART_FAILED;
    if (r.status == 409 && strstr(r.body.p ? r.body.p : "", "\"gate_refused\"")) {
        error_text(&r, why, whylen);
        out = TSTART_REFUSED;
    } else if (r.status != 200) {
        error_text(&r, why, whylen);
    } else {
        cJSON *j = reply_json(&r);
        double v;
        if (tune_ebench_objective(cJSON_GetObjectItemCaseSensitive(j, "results"), e->obj, &v, why, whylen) == 0) {
            m->obj = v;
            if (e->obj == OBJ_ENGINE_TPS) m->v[OBJ_ENGINE_TPS] = v;
            m->completed = e->repetitions;
            out = 0;
        }
        cJSON_Delete(j);
    }
    http_reply_release(&r);
    return out;
}
