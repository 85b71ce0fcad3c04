/* api_tune.c - the tune lease's routes (api_tune.h): each body read
 * strictly, as every body of the API is, then handed to tunelease.c,
 * whose answer is written back at once (nothing here waits: a release
 * answers with the restore's plan and the restore runs on). */
#include "daemon/api_tune.h"
#include "daemon/reply.h"
#include "util/jstrict.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAKE_KEYS "service, allow_traffic, ttl_ms, state"

static void send_answer(srv_conn *c, tl_answer *a)
{
    if (a->status < 300)
        api_reply(c, a->status, &a->body);
    else
        api_error(c, a->status, a->code, a->body.p, "%s", a->message);
    buf_release(&a->body);
}

static bool body_empty(const view *body)
{
    for (size_t i = 0; i < body->len; i++)
        if (!strchr(" \t\r\n", body->p[i])) return false;
    return true;
}

/* The body as an object, or NULL with err saying what (what leads it). */
static cJSON *body_object(const view *body, const char *what, const char *shape, char *err, size_t errlen)
{
    char jerr[256];
    cJSON *j = jstrict_parse(body->p, body->len, jerr, sizeof jerr);
    if (j && cJSON_IsObject(j)) return j;
    snprintf(err, errlen, "%s: the body must be a JSON object %s: %s", what, shape,
             j ? "found another JSON value" : jerr);
    cJSON_Delete(j);
    return NULL;
}

/* "state": an object (its JSON text into *out) or null (*out NULL). */
static int state_of(const cJSON *v, const char *what, char **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cJSON_IsNull(v)) return 0;
    if (!cJSON_IsObject(v)) {
        snprintf(err, errlen, "%s: \"state\" must be an object (the run's state, kept for --resume) or null", what);
        return -1;
    }
    *out = cJSON_PrintUnformatted(v);
    return 0;
}

/* One key of POST /tune's body into out; -1 with err. */
static int take_key(const cJSON *it, tl_take *out, char *err, size_t errlen)
{
    const char *k = it->string;
    bool null = cJSON_IsNull(it);
    if (!strcmp(k, "service")) {
        if (cJSON_IsString(it) && *it->valuestring) {
            free(out->service);
            out->service = xstrdup(it->valuestring);
            return 0;
        }
        snprintf(err, errlen, "tune: \"service\" must be a service id (a non-empty string)");
    } else if (!strcmp(k, "allow_traffic")) {
        if (null || cJSON_IsBool(it)) {
            out->allow_traffic = cJSON_IsTrue(it);
            return 0;
        }
        snprintf(err, errlen, "tune: \"allow_traffic\" must be true or false");
    } else if (!strcmp(k, "ttl_ms")) {
        double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (null || (v >= TL_TTL_MIN_MS && v <= TL_TTL_MAX_MS && v == floor(v))) {
            out->ttl_ms = null ? TL_TTL_DEFAULT_MS : (int64_t)v;
            return 0;
        }
        snprintf(err, errlen, "tune: \"ttl_ms\" must be an integer from %d to %d (milliseconds), or null for %d",
                 TL_TTL_MIN_MS, TL_TTL_MAX_MS, TL_TTL_DEFAULT_MS);
    } else if (!strcmp(k, "state")) {
        free(out->state);
        return state_of(it, "tune", &out->state, err, errlen);
    } else {
        snprintf(err, errlen, "tune: unknown key '%.64s' in the body (allowed: " TAKE_KEYS ")", k);
    }
    return -1;
}

int api_tune_take_parse(const view *body, tl_take *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->ttl_ms = TL_TTL_DEFAULT_MS;
    cJSON *j = body_object(body, "tune", "{\"service\": ID, \"allow_traffic\", \"ttl_ms\", \"state\"}", err, errlen);
    if (!j) return -1;
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, j)
    {
        if ((rc = take_key(it, out, err, errlen))) break;
    }
    cJSON_Delete(j);
    if (!rc && !out->service) {
        snprintf(err, errlen, "tune: \"service\" is missing: the service to tune (a service id)");
        rc = -1;
    }
    if (rc) tl_take_release(out);
    return rc;
}

int api_tune_renew_parse(const view *body, char **state, char *err, size_t errlen)
{
    *state = NULL;
    if (body_empty(body)) return 0; /* a heartbeat only */
    cJSON *j = body_object(body, "tune/ID", "{\"state\": {...}}", err, errlen);
    if (!j) return -1;
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, j)
    {
        if (strcmp(it->string, "state")) {
            snprintf(err, errlen, "tune/ID: unknown key '%.64s' in the body (allowed: state)", it->string);
            rc = -1;
            break;
        }
        free(*state);
        if ((rc = state_of(it, "tune/ID", state, err, errlen))) break;
    }
    cJSON_Delete(j);
    if (rc) {
        free(*state);
        *state = NULL;
    }
    return rc;
}

static bool up(gpumodd *d, srv_conn *c)
{
    if (d->tl) return true;
    api_error(c, 503, "shutting_down", NULL, "%s", "tune: the daemon is not up yet");
    return false;
}

void api_tune_post(gpumodd *d, srv_conn *c, const view *body)
{
    char err[512];
    tl_take rq;
    if (!up(d, c)) return;
    if (api_tune_take_parse(body, &rq, err, sizeof err)) {
        api_error(c, 400, "bad_request", NULL, "%s", err);
        return;
    }
    tl_answer a = {.body = BUF_INIT};
    tunelease_take(d->tl, &rq, &a);
    tl_take_release(&rq);
    send_answer(c, &a);
}

void api_tune_get(gpumodd *d, srv_conn *c)
{
    if (!up(d, c)) return;
    buf b = BUF_INIT;
    tunelease_json(d->tl, &b);
    api_reply(c, 200, &b);
    buf_release(&b);
}

void api_tune_put(gpumodd *d, srv_conn *c, const char *id, const view *body)
{
    char err[512], *state = NULL;
    if (!up(d, c)) return;
    if (api_tune_renew_parse(body, &state, err, sizeof err)) {
        api_error(c, 400, "bad_request", NULL, "%s", err);
        return;
    }
    tl_answer a = {.body = BUF_INIT};
    tunelease_renew(d->tl, id, state, &a);
    send_answer(c, &a);
}

void api_tune_delete(gpumodd *d, srv_conn *c, const char *id)
{
    if (!up(d, c)) return;
    tl_answer a = {.body = BUF_INIT};
    tunelease_release(d->tl, id, &a);
    send_answer(c, &a);
}
