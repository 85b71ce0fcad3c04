/* api_modes.c - the mode routes (api_modes.h): a switch request is
 * handed to the executor (src/daemon/switch.c) and answered from its
 * callback, which comes exactly once; the connection stays valid until
 * then even when the client has gone (src/net/server.c). */
#include "daemon/api_modes.h"
#include "daemon/reply.h"
#include "util/jstrict.h"
#include "daemon/switch.h"
#include "daemon/tunelease.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUN 64
#define SIM_ID_MAX 200 /* bytes in a what-if's service id (an alias may be as long: it is named back) */

/* One request: answered from the executor's callback, or, with wait=0,
 * at once with 202 and the switch's id once switch_request has returned
 * it (the callback then only frees this). */
typedef struct sw_req {
    gpumodd *d;
    srv_conn *c;
    bool nowait, in_call, fired, answered;
    int64_t timeout_ms;
} sw_req;

static void switched(const switch_result *r, void *ud)
{
    sw_req *q = ud;
    q->fired = true;
    if (q->answered) { /* a 202 went out: the client polls GET /switches/ID */
        free(q);
        return;
    }
    q->answered = true;
    srv_conn *c = q->c;
    if (!q->in_call) free(q);
    if (r->status == 200) {
        buf b = BUF_INIT;
        buf_adds(&b, r->json ? r->json : "null");
        api_reply(c, 200, &b);
        buf_release(&b);
    } else {
        api_error(c, r->status, r->code ? r->code : "start_failed", r->json, "%s", r->message ? r->message : "failed");
    }
}

/* v as JSON for an error message, cut at 64 bytes. */
static void found_text(char *out, size_t outlen, const cJSON *v)
{
    char *j = cJSON_PrintUnformatted(v);
    snprintf(out, outlen, "%.64s%s", j ? j : "?", j && strlen(j) > 64 ? "..." : "");
    cJSON_free(j);
}

static bool sim_id_ok(const cJSON *v)
{
    if (!cJSON_IsString(v) || !*v->valuestring || strlen(v->valuestring) > SIM_ID_MAX) return false;
    for (const unsigned char *p = (const unsigned char *)v->valuestring; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return false;
    return true;
}

/* "add_services" or "remove_services" (name) of the body into ids,
 * duplicates dropped.  0, or -1 with msg. */
static int sim_ids(const cJSON *j, const char *name, strv *ids, char *msg, size_t msglen)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, name);
    char f[80];
    if (!a || cJSON_IsNull(a)) return 0;
    if (!cJSON_IsArray(a)) {
        found_text(f, sizeof f, a);
        snprintf(msg, msglen, "modes/switch: \"%s\" must be an array of service ids (strings), found %s", name, f);
        return -1;
    }
    int n = cJSON_GetArraySize(a);
    if (n > SWITCH_SIM_MAX) {
        snprintf(msg, msglen, "modes/switch: \"%s\" has %d entries: at most %d", name, n, SWITCH_SIM_MAX);
        return -1;
    }
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!sim_id_ok(v)) {
            found_text(f, sizeof f, v);
            snprintf(msg, msglen,
                     "modes/switch: %s[%d] must be a service id (a non-empty string of at most %d bytes without "
                     "control characters), found %s", name, i, SIM_ID_MAX, f);
            return -1;
        }
        if (strv_find(ids, v->valuestring) < 0) strv_push(ids, v->valuestring);
        i++;
    }
    return 0;
}

/* "context_overrides": {"id": N} into s->ctx_id and s->ctx.  0, or -1 with msg. */
static int sim_ctx(const cJSON *j, switch_sim *s, char *msg, size_t msglen)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "context_overrides");
    char f[80];
    if (!o || cJSON_IsNull(o)) return 0;
    if (!cJSON_IsObject(o)) {
        found_text(f, sizeof f, o);
        snprintf(msg, msglen,
                 "modes/switch: \"context_overrides\" must be an object of service id -> context size, found %s", f);
        return -1;
    }
    if (cJSON_GetArraySize(o) > SWITCH_SIM_MAX) {
        snprintf(msg, msglen, "modes/switch: \"context_overrides\" has %d entries: at most %d",
                 cJSON_GetArraySize(o), SWITCH_SIM_MAX);
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, o)
    {
        size_t kl = strlen(v->string);
        bool key_ok = kl && kl <= SIM_ID_MAX;
        for (size_t i = 0; key_ok && i < kl; i++) key_ok = (unsigned char)v->string[i] >= 0x20 && v->string[i] != 0x7f;
        if (!key_ok) {
            snprintf(msg, msglen, "modes/switch: context_overrides: a key must be a service id (a non-empty string of "
                                  "at most %d bytes without control characters)", SIM_ID_MAX);
            return -1;
        }
        double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
        if (!cJSON_IsNumber(v) || x != floor(x) || x < 1 || x > 16777216) {
            found_text(f, sizeof f, v);
            snprintf(msg, msglen, "modes/switch: context_overrides.%s must be an integer from 1 to 16777216 "
                                  "(a context size in tokens), found %s", v->string, f);
            return -1;
        }
        s->ctx[s->ctx_id.n] = (int64_t)x;
        strv_push(&s->ctx_id, v->string);
    }
    return 0;
}

/* The body's what-if (switch.h: switch_sim).  0, or -1 with msg. */
static int sim_parse(const cJSON *j, bool dry, switch_sim *s, char *msg, size_t msglen)
{
    if (sim_ids(j, "add_services", &s->add, msg, msglen) || sim_ids(j, "remove_services", &s->remove, msg, msglen) ||
        sim_ctx(j, s, msg, msglen))
        return -1;
    if (switch_sim_any(s) && !dry) {
        snprintf(msg, msglen, "modes/switch: add_services, remove_services and context_overrides apply only with "
                              "\"dry_run\": true (a simulation); nothing was changed");
        return -1;
    }
    return 0;
}

void api_modes_switch(gpumodd *d, srv_conn *c, const view *body, const char *origin, const char *wait)
{
    if (!d->sw) {
        api_error(c, 503, "shutting_down", NULL, "%s", "mode switching is not available: the daemon is not up yet");
        return;
    }
    char err[256], msg[600];
    cJSON *j = jstrict_parse(body->p, body->len, err, sizeof err);
    if (!j || !cJSON_IsObject(j)) {
        snprintf(msg, sizeof msg, "modes/switch: the body must be a JSON object {\"mode\", \"dry_run\", \"timeout\"}: %s",
                 j ? "found another JSON value" : err);
        api_error(c, 400, "bad_request", NULL, "%s", msg);
        cJSON_Delete(j);
        return;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "mode");
    const cJSON *dry = cJSON_GetObjectItemCaseSensitive(j, "dry_run");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(j, "timeout");
    const cJSON *to_ms = cJSON_GetObjectItemCaseSensitive(j, "timeout_ms");
    const cJSON *wt = cJSON_GetObjectItemCaseSensitive(j, "wait");
    const char *bad = NULL;
    switch_sim sim = {0};
    if (!cJSON_IsString(m) || !*m->valuestring)
        bad = "modes/switch: \"mode\" must be a mode id (a non-empty string; \"none\" is the empty mode)";
    else if (dry && !cJSON_IsNull(dry) && !cJSON_IsBool(dry))
        bad = "modes/switch: \"dry_run\" must be true or false";
    else if (to && !cJSON_IsNull(to) &&
             (!cJSON_IsNumber(to) || !(to->valuedouble >= 0.001) || to->valuedouble > 86400))
        bad = "modes/switch: \"timeout\" must be a number of seconds from 0.001 (1 ms) to 86400";
    else if (to_ms && !cJSON_IsNull(to_ms) &&
             (!cJSON_IsNumber(to_ms) || !(to_ms->valuedouble >= 1) || to_ms->valuedouble > 86400000.0))
        bad = "modes/switch: \"timeout_ms\" must be a number of milliseconds from 1 to 86400000";
    else if (wt && !cJSON_IsNull(wt) && !cJSON_IsBool(wt))
        bad = "modes/switch: \"wait\" must be true or false";
    else if (wait && strcmp(wait, "0") && strcmp(wait, "1") && strcmp(wait, "false") && strcmp(wait, "true"))
        bad = "modes/switch: the query's wait must be 0 or 1";
    else if (sim_parse(j, cJSON_IsTrue(dry), &sim, msg, sizeof msg))
        bad = msg;
    if (bad) {
        api_error(c, 400, "bad_request", NULL, "%s", bad);
        switch_sim_release(&sim);
        cJSON_Delete(j);
        return;
    }
    switch_req rq = {.mode = m->valuestring,
                     .origin = origin && !strcmp(origin, "cli") ? "cli" : "api",
                     .dry_run = cJSON_IsTrue(dry),
                     .sim = &sim};
    if (cJSON_IsNumber(to_ms))
        rq.timeout_ms = (int64_t)to_ms->valuedouble;
    else if (cJSON_IsNumber(to))
        rq.timeout_ms = (int64_t)llround(to->valuedouble * 1000.0);
    if (rq.timeout_ms < 0) rq.timeout_ms = 0;
    buf tdet = BUF_INIT;
    if (!rq.dry_run && d->tl && tunelease_refuses_switch(d->tl, msg, sizeof msg, &tdet)) {
        /* a tune run holds the host: the lease's restore owns the way back */
        api_error(c, 409, "tune_in_progress", tdet.p, "%s", msg);
        buf_release(&tdet);
        switch_sim_release(&sim);
        cJSON_Delete(j);
        return;
    }
    buf_release(&tdet);
    sw_req *q = xcalloc(1, sizeof *q);
    q->d = d;
    q->c = c;
    /* wait=0 (query) or "wait": false (body); a dry run is answered at once anyway */
    q->nowait = !rq.dry_run && ((wait && (!strcmp(wait, "0") || !strcmp(wait, "false"))) || cJSON_IsFalse(wt));
    q->timeout_ms = rq.timeout_ms;
    int64_t bound = switch_wait_bound(d->sw, rq.timeout_ms); /* before the switch holds anything */
    q->in_call = true;
    int64_t id = switch_request(d->sw, &rq, switched, q);
    q->in_call = false;
    switch_sim_release(&sim);
    cJSON_Delete(j);
    if (q->fired) { /* answered already (an error found at once): nothing more */
        free(q);
        return;
    }
    if (!q->nowait) return; /* answered from the callback */
    buf b = BUF_INIT;
    buf_printf(&b, "{\"switch_id\":%lld,\"wait_ms\":%lld,\"poll\":\"/switches/%lld\",\"switch\":",
               (long long)id, (long long)bound, (long long)id);
    switch_current_json(d->sw, &b);
    buf_addc(&b, '}');
    q->answered = true; /* switched() frees q when the switch ends */
    api_reply(c, 202, &b);
    buf_release(&b);
}

void api_modes_current(gpumodd *d, srv_conn *c)
{
    sup_usage u[MAX_RUN];
    size_t n = sup_usages(d->sup, u, MAX_RUN), k = 0;
    const char *ids[MAX_RUN];
    for (size_t i = 0; i < n; i++)
        if (u[i].state == SVC_STARTING || u[i].state == SVC_READY || u[i].state == SVC_UNHEALTHY) ids[k++] = u[i].id;
    const char *cur = k ? NULL : "none";
    for (size_t i = 0; k && !cur && i < d->cfg->n_modes; i++) {
        const mode *m = &d->cfg->modes[i];
        if (m->services.n != k) continue;
        bool all = true;
        for (size_t s = 0; s < k && all; s++) all = strv_find(&m->services, ids[s]) >= 0;
        if (all) cur = m->id;
    }
    char base[128];
    bool has_base = d->sw && switch_committed(d->sw, base, sizeof base);
    buf b = BUF_INIT;
    buf_adds(&b, "{\"mode\":");
    if (cur)
        buf_json_str(&b, cur);
    else
        buf_adds(&b, "null");
    buf_adds(&b, ",\"running\":[");
    for (size_t i = 0; i < k; i++) {
        if (i) buf_addc(&b, ',');
        buf_json_str(&b, ids[i]);
    }
    buf_adds(&b, "],\"base_mode\":");
    if (has_base)
        buf_json_str(&b, base);
    else
        buf_adds(&b, "null");
    buf_adds(&b, ",\"switching\":");
    if (d->sw)
        switch_current_json(d->sw, &b);
    else
        buf_adds(&b, "null");
    buf_addc(&b, '}');
    api_reply(c, 200, &b);
    buf_release(&b);
}

void api_switch_get(gpumodd *d, srv_conn *c, const char *id_text)
{
    char *e;
    errno = 0;
    long long id = id_text ? strtoll(id_text, &e, 10) : 0;
    if (!id_text || !*id_text || *e || errno || id < 1) {
        api_error(c, 400, "bad_request", NULL, "%s", "switches/ID: ID must be a switch id (a positive integer)");
        return;
    }
    if (!d->sw) {
        api_error(c, 503, "shutting_down", NULL, "%s", "the switch journal is not available: the daemon is not up yet");
        return;
    }
    buf b = BUF_INIT;
    char err[256];
    int rc = switch_get_json(d->sw, (int64_t)id, &b, err, sizeof err);
    if (rc < 0) {
        api_error(c, 503, "unavailable", NULL, "%s", err);
    } else if (rc == 0) {
        char m[128];
        snprintf(m, sizeof m, "no switch %lld in the journal", id);
        api_error(c, 404, "not_found", NULL, "%s", m);
    } else {
        api_reply(c, 200, &b);
    }
    buf_release(&b);
}

void api_switches(gpumodd *d, srv_conn *c, const char *limit)
{
    long n = 20;
    if (limit) {
        char *e;
        errno = 0;
        n = strtol(limit, &e, 10);
        if (!*limit || *e || errno || n < 1 || n > 1000) {
            api_error(c, 400, "bad_request", NULL, "%s", "switches: limit must be an integer from 1 to 1000");
            return;
        }
    }
    if (!d->sw) {
        api_error(c, 503, "shutting_down", NULL, "%s", "the switch journal is not available: the daemon is not up yet");
        return;
    }
    buf b = BUF_INIT;
    char err[256];
    if (switch_journal_json(d->sw, (size_t)n, &b, err, sizeof err)) {
        buf_clear(&b);
        api_error(c, 503, "unavailable", NULL, "%s", err);
    } else {
        api_reply(c, 200, &b);
    }
    buf_release(&b);
}
