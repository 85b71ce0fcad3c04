/* tiercall.c - see tiercall.h.  One request at a time: a step names the
 * request to send, its answer picks the next step; a confirmation polls
 * on the call's own timer.  Everything starts from the timer, so the
 * callback never runs inside tiercall_sleep/tiercall_wake. */
#include "daemon/tiercall.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tier.h"
#include "daemon/health.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/errf.h"
#include "util/strv.h"

enum {
    ST_SLEEP,        /* POST /sleep?level=N */
    ST_POLL_ASLEEP,  /* GET /is_sleeping until true */
    ST_LIST,         /* router: GET /models, the loaded ones */
    ST_UNLOAD,       /* router: POST /models/unload for models[mi] */
    ST_POLL_NONE,    /* router: GET /models until none loaded or loading */
    ST_WAKE,         /* POST /wake_up */
    ST_WAKE_WEIGHTS, /* POST /wake_up?tags=weights */
    ST_RELOAD,       /* POST /collective_rpc reload_weights */
    ST_WAKE_KV,      /* POST /wake_up?tags=kv_cache */
    ST_POLL_AWAKE,   /* GET /is_sleeping until false */
    ST_LOAD,         /* router: POST /models/load for models[mi] */
    ST_POLL_LOADED,  /* router: GET /models until every one of models is loaded */
};

#define POLL_FIRST_MS 50
#define POLL_MAX_MS 500
#define LAST_LOOK_MS 200

struct tiercall {
    uv_loop_t *loop;
    uv_timer_t timer;
    health_probe *req;
    int step;
    bool first; /* the first request: a 404/405 is "unsupported" */
    bool done;
    char *host;
    int port, tier;
    int64_t t0, deadline, confirm_ms, poll;
    strv models; /* router: to unload (sleep) or to load (wake) */
    size_t mi;
    char *loaded; /* router sleep: what was loaded before */
    char last[160];
    tiercall_cb cb;
    void *ud;
};

static void issue(tiercall *t);

static void closed(uv_handle_t *h)
{
    tiercall *t = h->data;
    free(t->host);
    free(t->loaded);
    strv_release(&t->models);
    free(t);
}

static void finish(tiercall *t, tc_result r, const char *why)
{
    if (t->done) return;
    t->done = true;
    uv_timer_stop(&t->timer);
    if (t->cb)
        t->cb(r, r == TC_OK ? NULL : why, t->loaded ? t->loaded : "", clock_mono_ms() - t->t0,
              t->ud);
    uv_close((uv_handle_t *)&t->timer, closed);
}

void tiercall_cancel(tiercall *t)
{
    if (!t || t->done) return;
    t->cb = NULL;
    if (t->req) health_cancel(t->req);
    t->req = NULL;
    finish(t, TC_FAILED, "cancelled");
}

static void fired(uv_timer_t *h)
{
    issue(h->data);
}

static void go(tiercall *t, int step)
{
    t->step = step;
    t->first = false;
    uv_timer_start(&t->timer, fired, 0, 0);
}

/* A confirmation not seen yet: poll again, or fail at the deadline. */
static void poll_again(tiercall *t, const char *what)
{
    int64_t now = clock_mono_ms();
    if (now >= t->deadline) {
        char why[300];
        snprintf(why, sizeof why, "%s after %.1f s)", what, (double)(now - t->t0) / 1000.0);
        finish(t, TC_FAILED, why);
        return;
    }
    int64_t wait = t->poll;
    t->poll = t->poll * 2 > POLL_MAX_MS ? POLL_MAX_MS : t->poll * 2;
    if (now + wait > t->deadline) wait = t->deadline - now;
    uv_timer_start(&t->timer, fired, (uint64_t)wait, 0);
}

/* The confirmation phase begins: its own bound from now. */
static void confirm(tiercall *t, int step)
{
    int64_t now = clock_mono_ms();
    if (t->confirm_ms > 0 && now + t->confirm_ms < t->deadline) t->deadline = now + t->confirm_ms;
    t->poll = POLL_FIRST_MS;
    go(t, step);
}

/* /is_sleeping's answer: 1 true, 0 false, -1 unreadable. */
static int is_sleeping(const char *body)
{
    cJSON *j = cJSON_Parse(body ? body : "");
    cJSON *v = cJSON_GetObjectItem(j, "is_sleeping");
    int r = cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
    cJSON_Delete(j);
    return r;
}

/* A router's GET /models: the ids loaded or loading into out (when not
 * NULL), and whether every id of want is "loaded".  -1 unreadable. */
static int router_models(const char *body, strv *out, const strv *want, bool *all_loaded)
{
    cJSON *j = cJSON_Parse(body ? body : "");
    cJSON *data = cJSON_GetObjectItem(j, "data");
    if (!cJSON_IsArray(data)) {
        cJSON_Delete(j);
        return -1;
    }
    size_t nloaded = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, data)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(m, "id"));
        cJSON *st = cJSON_GetObjectItem(m, "status");
        const char *val = cJSON_IsString(st)
                              ? st->valuestring
                              : cJSON_GetStringValue(cJSON_GetObjectItem(st, "value"));
        if (!id || !val) continue;
        bool loaded = !strcmp(val, "loaded"), loading = !strcmp(val, "loading");
        if ((loaded || loading) && out) strv_push(out, id);
        for (size_t i = 0; want && loaded && i < want->n; i++)
            if (!strcmp(want->v[i], id)) nloaded++;
    }
    if (all_loaded) *all_loaded = want && nloaded >= want->n;
    cJSON_Delete(j);
    return 0;
}

/* The answer to a request that only has to succeed: the next step, or the end. */
static bool ok_or_fail(tiercall *t, int status, const char *err)
{
    if (status >= 200 && status < 300) return true;
    char why[320];
    if (!status)
        snprintf(why, sizeof why, "%s: %s", t->last, err ? err : "no answer");
    else
        snprintf(why, sizeof why, "%s: %d", t->last, status);
    finish(t, t->first && (status == 404 || status == 405) ? TC_UNSUPPORTED : TC_FAILED, why);
    return false;
}

static void after_list(tiercall *t, const char *body)
{
    strv got = STRV_INIT;
    if (router_models(body, &got, NULL, NULL) != 0) {
        strv_release(&got);
        finish(t, TC_FAILED, "GET /models: no model list in the answer");
        return;
    }
    buf b = BUF_INIT;
    for (size_t i = 0; i < got.n; i++)
        buf_printf(&b, "%s%s", i ? "," : "", got.v[i]);
    free(t->loaded);
    t->loaded = xstrdup(b.p ? b.p : "");
    buf_release(&b);
    strv_release(&t->models);
    t->models = got;
    t->mi = 0;
    if (t->models.n)
        go(t, ST_UNLOAD);
    else
        confirm(t, ST_POLL_NONE);
}

static void answered(int status, const char *body, size_t len, const char *err, void *ud)
{
    tiercall *t = ud;
    (void)len;
    t->req = NULL;
    switch (t->step) {
    case ST_SLEEP:
        if (ok_or_fail(t, status, err)) confirm(t, ST_POLL_ASLEEP);
        return;
    case ST_WAKE:
    case ST_WAKE_KV:
        if (ok_or_fail(t, status, err)) confirm(t, ST_POLL_AWAKE);
        return;
    case ST_WAKE_WEIGHTS:
        if (status >= 400 && status < 500) { /* no tags in this version: a plain wake */
            go(t, ST_WAKE);
            return;
        }
        if (ok_or_fail(t, status, err)) go(t, ST_RELOAD);
        return;
    case ST_RELOAD:
        if (ok_or_fail(t, status, err)) go(t, ST_WAKE_KV);
        return;
    case ST_LIST:
        if (ok_or_fail(t, status, err)) after_list(t, body);
        return;
    case ST_UNLOAD:
    case ST_LOAD:
        /* llama-server answers an unload of a model that is not running
         * (unloaded between the GET and the POST) 400: done, the GET /models
         * confirmation decides */
        if (!(t->step == ST_UNLOAD && status == 400) && !ok_or_fail(t, status, err)) return;
        if (++t->mi < t->models.n)
            go(t, t->step);
        else
            confirm(t, t->step == ST_UNLOAD ? ST_POLL_NONE : ST_POLL_LOADED);
        return;
    default:
        break;
    }
    /* the confirmations: an answer that is not yet the one wanted polls again */
    int want_asleep = t->step == ST_POLL_ASLEEP;
    if (status == 200 && (t->step == ST_POLL_ASLEEP || t->step == ST_POLL_AWAKE)) {
        if (is_sleeping(body) == want_asleep) {
            finish(t, TC_OK, NULL);
            return;
        }
        poll_again(t, want_asleep ? "the engine did not confirm the sleep (GET /is_sleeping: false"
                                  : "the engine did not confirm the wake (GET /is_sleeping: true");
        return;
    }
    if (status == 200) {
        strv got = STRV_INIT;
        bool all = false;
        int rc = router_models(body, &got, &t->models, &all);
        size_t n = got.n;
        strv_release(&got);
        if (rc == 0 && (t->step == ST_POLL_NONE ? n == 0 : all)) {
            finish(t, TC_OK, NULL);
            return;
        }
    }
    poll_again(t, t->step == ST_POLL_NONE
                      ? "the engine did not confirm the unload (GET /models: a model "
                        "still loaded"
                  : t->step == ST_POLL_LOADED
                      ? "the engine did not confirm the load (GET /models: not loaded"
                  : status ? "no confirmation (an error status"
                           : "no confirmation (no answer");
}

/* The request of t's step. */
static void issue(tiercall *t)
{
    if (t->done) return;
    const char *method = "GET", *path = "/is_sleeping";
    buf body = BUF_INIT;
    char p[64];
    switch (t->step) {
    case ST_SLEEP:
        snprintf(p, sizeof p, "/sleep?level=%d", t->tier == TIER_L2 ? 2 : 1);
        method = "POST", path = p;
        break;
    case ST_WAKE:
        method = "POST", path = "/wake_up";
        break;
    case ST_WAKE_WEIGHTS:
        method = "POST", path = "/wake_up?tags=weights";
        break;
    case ST_WAKE_KV:
        method = "POST", path = "/wake_up?tags=kv_cache";
        break;
    case ST_RELOAD:
        method = "POST", path = "/collective_rpc";
        buf_adds(&body, "{\"method\":\"reload_weights\"}");
        break;
    case ST_LIST:
    case ST_POLL_NONE:
    case ST_POLL_LOADED:
        path = "/models";
        break;
    case ST_UNLOAD:
    case ST_LOAD:
        method = "POST", path = t->step == ST_LOAD ? "/models/load" : "/models/unload";
        buf_adds(&body, "{\"model\":");
        buf_json_str(&body, t->models.v[t->mi]);
        buf_addc(&body, '}');
        break;
    default:
        break;
    }
    snprintf(t->last, sizeof t->last, "%s %s", method, path);
    int64_t left = t->deadline - clock_mono_ms();
    bool poll = t->step == ST_POLL_ASLEEP || t->step == ST_POLL_AWAKE || t->step == ST_POLL_NONE ||
                t->step == ST_POLL_LOADED;
    if (poll && left < LAST_LOOK_MS)
        left = LAST_LOOK_MS; /* one last look: its answer says what was seen */
    char err[256];
    if (left <= 0) {
        char why[300];
        snprintf(why, sizeof why, "%s: no time left (deadline passed)", t->last);
        finish(t, TC_FAILED, why);
    } else if (!(t->req = health_request(t->loop, t->host, t->port, method, path, body.p, left,
                                         answered, t, err, sizeof err))) {
        char why[400];
        snprintf(why, sizeof why, "%s: %s", t->last, err);
        finish(t, TC_FAILED, why);
    }
    buf_release(&body);
}

static tiercall *begin(uv_loop_t *loop, const tiercall_spec *sp, int step, tiercall_cb cb, void *ud)
{
    tiercall *t = xcalloc(1, sizeof *t);
    t->loop = loop;
    t->host = xstrdup(sp->host ? sp->host : "127.0.0.1");
    t->port = sp->port;
    t->tier = sp->tier;
    t->t0 = clock_mono_ms();
    t->deadline = t->t0 + (sp->timeout_ms > 0 ? sp->timeout_ms : 60000);
    t->confirm_ms = sp->confirm_ms;
    t->poll = POLL_FIRST_MS;
    t->cb = cb;
    t->ud = ud;
    for (const char *m = sp->models; m && *m;) {
        size_t n = strcspn(m, ",");
        if (n) strv_push_own(&t->models, xstrndup(m, n));
        m += n + (m[n] == ',');
    }
    uv_timer_init(loop, &t->timer);
    t->timer.data = t;
    t->step = step;
    t->first = true;
    uv_timer_start(&t->timer, fired, 0, 0);
    return t;
}

tiercall *tiercall_sleep(uv_loop_t *loop, const tiercall_spec *sp, tiercall_cb cb, void *ud)
{
    return begin(loop, sp, sp->tier == TIER_ROUTER ? ST_LIST : ST_SLEEP, cb, ud);
}

tiercall *tiercall_wake(uv_loop_t *loop, const tiercall_spec *sp, tiercall_cb cb, void *ud)
{
    int step = sp->tier == TIER_ROUTER ? ST_LOAD : sp->tier == TIER_L2 ? ST_WAKE_WEIGHTS : ST_WAKE;
    tiercall *t = begin(loop, sp, step, cb, ud);
    if (step == ST_LOAD && !t->models.n)
        t->step = ST_POLL_LOADED; /* nothing to load: confirm at once */
    return t;
}
