/* link.c (tune) - the run's requests to the daemon (link.h). */
#include "tune/link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/ctl.h"
#include "util/buf.h"
#include "util/url.h"

void tlink_init(tlink *l, const config_paths *paths, const char *service)
{
    memset(l, 0, sizeof *l);
    l->paths = *paths;
    l->service = service;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    free(ctl_socket_path(&l->paths)); /* resolved once, before any thread asks */
}

/* the daemon's error as one line: "CODE: message" */
static void reply_text(const http_reply *r, char *out, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(r->body.p ? r->body.p : "", r->body.len);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const char *m = jstr(e, "message"), *c = jstr(e, "code");
    if (m)
        snprintf(out, len, "%s%s%s", c ? c : "", c ? ": " : "", m);
    else
        snprintf(out, len, "HTTP %d", r->status);
    cJSON_Delete(j);
}

/* method path body: the reply's JSON when status is want (caller deletes),
 * else NULL with err */
static cJSON *call(tlink *l, const char *method, const char *path, const char *body, int64_t ms, int want,
                   int *status, char *err, size_t errlen)
{
    http_reply r;
    int rc = ctl_call(&l->paths, method, path, body, ms, true, &r);
    if (status) *status = rc ? 0 : r.status;
    if (rc) {
        snprintf(err, errlen, "%s %s: the daemon %s", method, path,
                 rc == EXIT_DAEMON ? "does not answer (is gpumod serve running?)" : "did not answer in time");
        return NULL;
    }
    cJSON *j = NULL;
    if (r.status != want) {
        char t[1024];
        reply_text(&r, t, sizeof t);
        snprintf(err, errlen, "%s", t);
    } else if (!(j = cJSON_ParseWithLength(r.body.p ? r.body.p : "", r.body.len))) {
        snprintf(err, errlen, "%s %s: the daemon's answer is not JSON", method, path);
    }
    http_reply_release(&r);
    return j;
}

cJSON *tlink_get(tlink *l, const char *path, char *err, size_t errlen)
{
    return call(l, "GET", path, NULL, CTL_QUICK_MS, 200, NULL, err, errlen);
}

static void renew(tlink *l)
{
    pthread_mutex_lock(&l->mu);
    char *body = xasprintf("{\"state\":%s}", l->state ? l->state : "null");
    l->state_dirty = false;
    pthread_mutex_unlock(&l->mu);
    char path[128], err[512];
    snprintf(path, sizeof path, "/tune/%s", l->lease_id);
    int status = 0;
    cJSON *j = call(l, "PUT", path, body, CTL_QUICK_MS, 200, &status, err, sizeof err);
    free(body);
    cJSON_Delete(j);
    if (!j && status == 404) {
        pthread_mutex_lock(&l->mu);
        snprintf(l->lost, sizeof l->lost, "the daemon let the lease %s go (%s); it restored the host", l->lease_id,
                 err);
        pthread_mutex_unlock(&l->mu);
    }
}

static void *hb_main(void *ud)
{
    tlink *l = ud;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + (l->ttl_ms / 3) * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        while (!l->stop && !l->state_dirty &&
               pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT) {
        }
        if (l->stop) break;
        pthread_mutex_unlock(&l->mu);
        renew(l);
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int tlink_lease(tlink *l, bool allow_traffic, int64_t ttl_ms, const char *state, char *err, size_t errlen)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"service\":");
    buf_json_str(&b, l->service);
    buf_printf(&b, ",\"allow_traffic\":%s,\"ttl_ms\":%lld,\"state\":%s}", allow_traffic ? "true" : "false",
               (long long)ttl_ms, state);
    cJSON *j = call(l, "POST", "/tune", b.p, CTL_QUICK_MS, 201, NULL, err, errlen);
    buf_release(&b);
    if (!j) return -1;
    const char *id = jstr(j, "id");
    if (!id) {
        snprintf(err, errlen, "POST /tune: the answer has no lease id");
        cJSON_Delete(j);
        return -1;
    }
    l->lease_id = xstrdup(id);
    l->ttl_ms = ttl_ms;
    l->state = xstrdup(state);
    cJSON_Delete(j);
    if (pthread_create(&l->hb, NULL, hb_main, l) == 0) l->hb_running = true;
    return 0;
}

void tlink_save(tlink *l, const char *state)
{
    pthread_mutex_lock(&l->mu);
    free(l->state);
    l->state = xstrdup(state);
    l->state_dirty = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

const char *tlink_lost(tlink *l)
{
    pthread_mutex_lock(&l->mu);
    const char *r = l->lost[0] ? l->lost : NULL;
    pthread_mutex_unlock(&l->mu);
    return r;
}

static void hb_stop(tlink *l)
{
    if (!l->hb_running) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->hb, NULL);
    l->hb_running = false;
}

int tlink_release(tlink *l, char *err, size_t errlen)
{
    hb_stop(l);
    if (!l->lease_id) return 0;
    renew(l); /* the last state first, so that GET /tune's "last" has it */
    char path[128];
    snprintf(path, sizeof path, "/tune/%s", l->lease_id);
    cJSON *j = call(l, "DELETE", path, NULL, CTL_QUICK_MS, 200, NULL, err, errlen);
    free(l->lease_id);
    l->lease_id = NULL;
    if (!j) return -1;
    cJSON_Delete(j);
    return 0;
}

void tlink_free(tlink *l)
{
    hb_stop(l);
    free(l->lease_id);
    free(l->state);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
}

static void svc_path(buf *t, const char *id, const char *tail)
{
    buf_adds(t, "/services/");
    url_query_escape(t, id);
    buf_adds(t, tail);
}

static bool canary_failed(const cJSON *svc)
{
    const char *st = jstr(cJSON_GetObjectItemCaseSensitive(svc, "canary"), "state");
    return st && !strcmp(st, "failed");
}

void tlink_restart(tlink *l, const char *overrides, int64_t timeout_ms, tstart *out)
{
    memset(out, 0, sizeof *out);
    buf t = BUF_INIT, body = BUF_INIT;
    svc_path(&t, l->service, "/restart?origin=tune");
    buf_printf(&body, "{\"overrides\":%s}", overrides);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    http_reply r;
    int rc = ctl_call(&l->paths, "POST", t.p, body.p, timeout_ms, true, &r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    out->ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    buf_release(&body);
    buf_release(&t);
    if (rc) {
        out->kind = TSTART_ERROR;
        snprintf(out->msg, sizeof out->msg, "restart: the daemon %s",
                 rc == EXIT_DAEMON ? "went away" : "did not answer in time");
        return;
    }
    cJSON *j = cJSON_ParseWithLength(r.body.p ? r.body.p : "", r.body.len);
    const char *code = jstr(cJSON_GetObjectItemCaseSensitive(j, "error"), "code");
    if (r.status == 200) {
        out->kind = TSTART_READY;
        out->svc = j;
        j = NULL;
    } else {
        reply_text(&r, out->msg, sizeof out->msg);
        out->kind = code && !strcmp(code, "gate_refused") ? TSTART_REFUSED
                    : r.status == 422                    ? TSTART_FAILED
                                                         : TSTART_ERROR;
        if (out->kind == TSTART_FAILED) {
            char err[256];
            buf p = BUF_INIT;
            svc_path(&p, l->service, "");
            cJSON *s = tlink_get(l, p.p, err, sizeof err);
            if (canary_failed(s)) out->kind = TSTART_CANARY;
            cJSON_Delete(s);
            buf_release(&p);
        }
    }
    cJSON_Delete(j);
    http_reply_release(&r);
}

int tlink_preflight(tlink *l, const char *overrides, char *why, size_t whylen)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"service\":");
    buf_json_str(&b, l->service);
    buf_printf(&b, ",\"overrides\":%s}", overrides);
    cJSON *j = call(l, "POST", "/preflight", b.p, CTL_QUICK_MS * 3, 200, NULL, why, whylen);
    buf_release(&b);
    if (!j) return -1;
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
    int rc = cJSON_IsTrue(ok) ? 1 : 0;
    if (!rc) snprintf(why, whylen, "%s", jstr(j, "reason") ? jstr(j, "reason") : "the gate refused it");
    cJSON_Delete(j);
    return rc;
}

char *tlink_log_tail(tlink *l, int n)
{
    buf t = BUF_INIT;
    svc_path(&t, l->service, "");
    buf_printf(&t, "/logs?n=%d", n);
    char err[256];
    cJSON *j = tlink_get(l, t.p, err, sizeof err);
    buf_release(&t);
    char *s = xstrdup(jstr(j, "data") ? jstr(j, "data") : "");
    cJSON_Delete(j);
    return s;
}
