/* canary.c - see canary.h.  The requests go through health_request (one
 * connection each, Connection: close); the answers are read with cJSON and
 * judged by core/canary.c. */
#include "daemon/canary.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/canary.h"
#include "daemon/health.h"
#include "util/buf.h"
#include "util/clock.h"

struct canary_run {
    uv_loop_t *loop;
    canary_spec spec; /* strings owned */
    canary_cb cb;
    void *ud;
    health_probe *req;
    int idx; /* the prompt in flight */
    int64_t t0;
    canary_report rep;
};

static int nprompts(const canary_run *c)
{
    return c->spec.embed || c->spec.prompt ? 1 : CANARY_BUILTIN_N;
}

static const char *prompt_of(const canary_run *c, int i)
{
    if (c->spec.embed) return "embeddings";
    return c->spec.prompt ? c->spec.prompt : canary_builtin[i].prompt;
}

static const char *expect_of(const canary_run *c, int i)
{
    return c->spec.prompt ? c->spec.expect : canary_builtin[i].expect;
}

static void run_free(canary_run *c)
{
    free((char *)c->spec.host);
    free((char *)c->spec.prompt);
    free((char *)c->spec.expect);
    free(c);
}

static void done(canary_run *c, bool ok)
{
    c->rep.ok = ok;
    c->rep.ms = clock_mono_ms() - c->t0;
    c->req = NULL;
    if (c->cb) c->cb(&c->rep, c->ud);
    run_free(c);
}

/* The run failed at the prompt in flight: why, then the verdict. */
static void fail(canary_run *c, const char *what, const char *detail)
{
    char why[220];
    snprintf(why, sizeof why, "%s%s", what, detail ? detail : "");
    if (nprompts(c) > 1)
        snprintf(c->rep.why, sizeof c->rep.why, "prompt %d of %d: %s", c->idx + 1, nprompts(c), why);
    else
        snprintf(c->rep.why, sizeof c->rep.why, "%s", why);
    done(c, false);
}

/* choices[0].message.content of a chat answer ("" when null). */
static const char *content_of(const cJSON *doc)
{
    const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "choices"), 0);
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(ch, "message");
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (!msg) return NULL;
    return cJSON_IsString(ct) ? ct->valuestring : "";
}

/* data[i].embedding as doubles (allocated; *n values), NULL when absent. */
static double *vector_of(const cJSON *doc, int i, size_t *n)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "data"), i), "embedding");
    *n = 0;
    if (!cJSON_IsArray(e)) return NULL;
    double *v = xcalloc((size_t)cJSON_GetArraySize(e) + 1, sizeof *v);
    const cJSON *x;
    cJSON_ArrayForEach(x, e) v[(*n)++] = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    return v;
}

static void judge_embed(canary_run *c, const cJSON *doc, canary_verdict *v)
{
    size_t na, nb;
    double *a = vector_of(doc, 0, &na), *b = vector_of(doc, 1, &nb);
    canary_judge_vectors(a, na, b, nb, v);
    free(a);
    free(b);
}

static bool send_next(canary_run *c);

static void answered(int status, const char *body, size_t len, const char *err, void *ud)
{
    canary_run *c = ud;
    c->req = NULL;
    c->rep.sent++;
    snprintf(c->rep.prompt, sizeof c->rep.prompt, "%s", prompt_of(c, c->idx));
    if (!status) {
        fail(c, "no answer: ", err ? err : "?");
        return;
    }
    if (status != 200) {
        char d[160];
        snprintf(d, sizeof d, "HTTP %d: %.*s", status, (int)(len < 120 ? len : 120), body ? body : "");
        fail(c, d, NULL);
        return;
    }
    cJSON *doc = cJSON_ParseWithLength(body, len);
    canary_verdict v = {0};
    const char *content = doc && !c->spec.embed ? content_of(doc) : NULL;
    if (!doc || (!c->spec.embed && !content)) {
        cJSON_Delete(doc);
        fail(c, doc ? "the answer has no choices[0].message" : "the answer is not JSON", NULL);
        return;
    }
    if (c->spec.embed)
        judge_embed(c, doc, &v);
    else
        canary_judge_text(content, expect_of(c, c->idx), &v);
    cJSON_Delete(doc);
    snprintf(c->rep.sample, sizeof c->rep.sample, "%s", v.sample);
    if (!v.ok) {
        fail(c, v.why, NULL);
        return;
    }
    c->rep.passed++;
    if (++c->idx < nprompts(c))
        send_next(c);
    else
        done(c, true);
}

/* The request of prompt c->idx: true when it is on its way; false when
 * it could not be sent (c answered and freed). */
static bool send_next(canary_run *c)
{
    buf b = BUF_INIT;
    if (c->spec.embed)
        canary_embed_body(&b);
    else
        canary_chat_body(prompt_of(c, c->idx), c->spec.max_tokens, &b);
    char err[256];
    c->req = health_request(c->loop, c->spec.host, c->spec.port, "POST",
                            c->spec.embed ? "/v1/embeddings" : "/v1/chat/completions", b.p, c->spec.timeout_ms,
                            answered, c, err, sizeof err);
    buf_release(&b);
    if (c->req) return true;
    fail(c, "cannot send: ", err);
    return false;
}

canary_run *canary_start(uv_loop_t *loop, const canary_spec *spec, canary_cb cb, void *ud)
{
    canary_run *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->spec = *spec;
    c->spec.host = spec->host ? xstrdup(spec->host) : NULL;
    c->spec.prompt = spec->prompt ? xstrdup(spec->prompt) : NULL;
    c->spec.expect = spec->expect ? xstrdup(spec->expect) : NULL;
    c->cb = cb;
    c->ud = ud;
    c->t0 = clock_mono_ms();
    return send_next(c) ? c : NULL;
}

void canary_cancel(canary_run *c)
{
    if (!c) return; /* a live run always has its request in flight */
    health_cancel(c->req);
    run_free(c);
}
