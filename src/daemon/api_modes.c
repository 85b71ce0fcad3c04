/* api_modes.c - the mode routes (api_modes.h): a switch request is
 * handed to the executor (src/daemon/switch.c) and answered from its
 * callback, which comes exactly once; the connection stays valid until
 * then even when the client has gone (src/net/server.c). */
#include "daemon/api_modes.h"
#include "daemon/switch.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUN 64

static void send_json(srv_conn *c, int status, buf *b)
{
    buf_addc(b, '\n');
    srv_respond(c, status, "application/json", b->p, b->len);
}

static void send_error(srv_conn *c, int status, const char *code, const char *message, const char *detail)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"error\":{\"code\":");
    buf_json_str(&b, code);
    buf_adds(&b, ",\"message\":");
    buf_json_str(&b, message);
    if (detail && *detail) {
        buf_adds(&b, ",\"detail\":");
        buf_adds(&b, detail);
    }
    buf_adds(&b, "}}");
    send_json(c, status, &b);
    buf_release(&b);
}

static void switched(const switch_result *r, void *ud)
{
    srv_conn *c = ud;
    if (r->status == 200) {
        buf b = BUF_INIT;
        buf_adds(&b, r->json ? r->json : "null");
        send_json(c, 200, &b);
        buf_release(&b);
    } else {
        send_error(c, r->status, r->code ? r->code : "start_failed", r->message ? r->message : "failed", r->json);
    }
}

void api_modes_switch(gpumodd *d, srv_conn *c, const view *body, const char *origin)
{
    if (!d->sw) {
        send_error(c, 503, "shutting_down", "mode switching is not available: the daemon is not up yet", NULL);
        return;
    }
    const char *end = NULL;
    cJSON *j = body->len ? cJSON_ParseWithLengthOpts(body->p, body->len, &end, false) : NULL;
    if (!j || !cJSON_IsObject(j)) {
        send_error(c, 400, "bad_request", "modes/switch: the body must be a JSON object {\"mode\", \"dry_run\", \"timeout\"}",
                   NULL);
        cJSON_Delete(j);
        return;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "mode");
    const cJSON *dry = cJSON_GetObjectItemCaseSensitive(j, "dry_run");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(j, "timeout");
    const cJSON *to_ms = cJSON_GetObjectItemCaseSensitive(j, "timeout_ms");
    const char *bad = NULL;
    if (!cJSON_IsString(m) || !*m->valuestring)
        bad = "modes/switch: \"mode\" must be a mode id (a non-empty string; \"none\" is the empty mode)";
    else if (dry && !cJSON_IsNull(dry) && !cJSON_IsBool(dry))
        bad = "modes/switch: \"dry_run\" must be true or false";
    else if (to && !cJSON_IsNull(to) && (!cJSON_IsNumber(to) || !(to->valuedouble > 0) || to->valuedouble > 86400))
        bad = "modes/switch: \"timeout\" must be a number of seconds above 0 and at most 86400";
    else if (to_ms && !cJSON_IsNull(to_ms) &&
             (!cJSON_IsNumber(to_ms) || !(to_ms->valuedouble >= 1) || to_ms->valuedouble > 86400000.0))
        bad = "modes/switch: \"timeout_ms\" must be a number of milliseconds from 1 to 86400000";
    if (bad) {
        send_error(c, 400, "bad_request", bad, NULL);
        cJSON_Delete(j);
        return;
    }
    switch_req rq = {.mode = m->valuestring,
                     .origin = origin && !strcmp(origin, "cli") ? "cli" : "api",
                     .dry_run = cJSON_IsTrue(dry)};
    if (cJSON_IsNumber(to_ms))
        rq.timeout_ms = (int64_t)to_ms->valuedouble;
    else if (cJSON_IsNumber(to))
        rq.timeout_ms = (int64_t)llround(to->valuedouble * 1000.0);
    switch_request(d->sw, &rq, switched, c);
    cJSON_Delete(j);
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
    send_json(c, 200, &b);
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
            send_error(c, 400, "bad_request", "switches: limit must be an integer from 1 to 1000", NULL);
            return;
        }
    }
    if (!d->sw) {
        send_error(c, 503, "shutting_down", "the switch journal is not available: the daemon is not up yet", NULL);
        return;
    }
    buf b = BUF_INIT;
    char err[256];
    if (switch_journal_json(d->sw, (size_t)n, &b, err, sizeof err)) {
        buf_clear(&b);
        send_error(c, 503, "unavailable", err, NULL);
    } else {
        send_json(c, 200, &b);
    }
    buf_release(&b);
}
