/* propose.c (tune) - the proposer's prompt, its call and its reply
 * checked against the menu (propose.h). */
#include "tune/propose.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "oai/fetch.h"
#include "util/buf.h"

static const char sys_prompt[] =
    "You tune the flags of an LLM inference server for speed. Each turn you see the menu of allowed values per "
    "key, the incumbent configuration (the best so far), the history of measured changes with their outcomes, "
    "and the hardware. Propose exactly one change: one key of the menu set to one of its listed values, "
    "different from the incumbent's. Reply with JSON only, no prose: "
    "{\"key\": \"KEY\", \"value\": \"VALUE\", \"reason\": \"one line\"} or, when nothing is left worth trying, "
    "{\"stop\": true, \"reason\": \"one line\"}.";

static cJSON *menu_json(const tune_space *s, const tune_variant *inc)
{
    cJSON *m = cJSON_CreateObject();
    for (size_t i = 0; i < s->n; i++) {
        char *k = xasprintf("%s%s", s->dims[i].env ? "env." : "", s->dims[i].key);
        cJSON *d = cJSON_AddObjectToObject(m, k);
        cJSON *a = cJSON_AddArrayToObject(d, "values");
        for (size_t j = 0; j < s->dims[i].values.n; j++)
            cJSON_AddItemToArray(a, cJSON_CreateString(s->dims[i].values.v[j]));
        if (inc->idx[i] >= 0)
            cJSON_AddStringToObject(d, "incumbent", s->dims[i].values.v[inc->idx[i]]);
        else
            cJSON_AddStringToObject(d, "incumbent", "(the preset's)");
        free(k);
    }
    return m;
}

char *propose_body(const tune_opts *o, const tune_variant *inc, const tune_result *res, const char *hardware)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "objective", tune_obj_names[o->obj]);
    cJSON_AddBoolToObject(u, "higher_is_better", tune_obj_higher_better(o->obj));
    cJSON_AddItemToObject(u, "menu", menu_json(&o->space, inc));
    cJSON *h = cJSON_AddArrayToObject(u, "history");
    for (size_t i = 0; i < res->n; i++) {
        const tune_row *r = &res->rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "change", r->key);
        cJSON_AddStringToObject(e, "against", r->ref_key ? r->ref_key : "baseline");
        cJSON_AddStringToObject(e, "outcome", tune_outcome_names[r->outcome]);
        if (r->has_decision) cJSON_AddNumberToObject(e, "delta_pct", r->d.delta_pct);
        if (r->reason) cJSON_AddStringToObject(e, "note", r->reason);
        cJSON_AddItemToArray(h, e);
    }
    cJSON_AddStringToObject(u, "hardware", hardware ? hardware : "unknown");
    char *ut = cJSON_PrintUnformatted(u);
    cJSON_Delete(u);
    cJSON *b = cJSON_CreateObject();
    if (o->proposer_model) cJSON_AddStringToObject(b, "model", o->proposer_model);
    cJSON *msgs = cJSON_AddArrayToObject(b, "messages");
    cJSON *m1 = cJSON_CreateObject(), *m2 = cJSON_CreateObject();
    cJSON_AddStringToObject(m1, "role", "system");
    cJSON_AddStringToObject(m1, "content", sys_prompt);
    cJSON_AddStringToObject(m2, "role", "user");
    cJSON_AddStringToObject(m2, "content", ut);
    cJSON_AddItemToArray(msgs, m1);
    cJSON_AddItemToArray(msgs, m2);
    cJSON_AddNumberToObject(b, "temperature", 0);
    cJSON_AddNumberToObject(b, "max_tokens", 256);
    cJSON_AddBoolToObject(b, "stream", false);
    char *s = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    free(ut);
    return s;
}

static void invalid(tune_proposal *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void invalid(tune_proposal *p, const char *fmt, ...)
{
    p->kind = PROP_INVALID;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
}

/* the first {...} of the text (a model may wrap it in ``` fences) */
static cJSON *first_object(const char *t)
{
    const char *a = strchr(t, '{'), *b = strrchr(t, '}');
    if (!a || !b || b < a) return NULL;
    return cJSON_ParseWithLength(a, (size_t)(b - a + 1));
}

static bool measured_against(const tune_result *res, const char *key, const char *ref)
{
    for (size_t i = 0; i < res->n; i++)
        if (res->rows[i].key && res->rows[i].ref_key && !strcmp(res->rows[i].key, key) &&
            !strcmp(res->rows[i].ref_key, ref))
            return true;
    return false;
}

void propose_parse(const char *content, const tune_space *s, const tune_variant *inc, const tune_result *res,
                   tune_proposal *out)
{
    memset(out, 0, sizeof *out);
    cJSON *j = first_object(content ? content : "");
    const char *key = jstr(j, "key"), *val = jstr(j, "value"), *why = jstr(j, "reason");
    cJSON *num = cJSON_GetObjectItemCaseSensitive(j, "value");
    char nbuf[64];
    if (!val && cJSON_IsNumber(num)) { /* {"value": 8} is meant as "8" */
        snprintf(nbuf, sizeof nbuf, "%.17g", num->valuedouble);
        val = nbuf;
    }
    snprintf(out->reason, sizeof out->reason, "%s", why ? why : "");
    if (!j) {
        invalid(out, "the reply is not the asked JSON object: '%.200s'", content ? content : "");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stop"))) {
        out->kind = PROP_STOP;
    } else if (!key || !val) {
        invalid(out, "the reply has no \"key\" and \"value\" strings");
    } else {
        snprintf(out->key, sizeof out->key, "%s", key);
        snprintf(out->value, sizeof out->value, "%s", val);
        bool env = !strncmp(key, "env.", 4);
        const char *k = env ? key + 4 : key;
        size_t d = 0;
        while (d < s->n && (s->dims[d].env != env || strcmp(s->dims[d].key, k))) d++;
        int vi = d < s->n ? strv_find(&s->dims[d].values, val) : -1;
        if (d == s->n) {
            invalid(out, "the key '%s' is not on the menu", key);
        } else if (vi < 0) {
            invalid(out, "the value '%s' of '%s' is not on the menu", val, key);
        } else if (inc->idx[d] == vi) {
            invalid(out, "'%s=%s' is the incumbent's own value", key, val);
        } else {
            out->v = *inc;
            out->v.idx[d] = vi;
            buf vk = BUF_INIT, ik = BUF_INIT;
            variant_key(s, &out->v, &vk);
            variant_key(s, inc, &ik);
            if (measured_against(res, vk.p, ik.p))
                invalid(out, "'%s' was measured against this incumbent already (%s)", vk.p, ik.p);
            else
                out->kind = PROP_CHANGE;
            buf_release(&vk);
            buf_release(&ik);
        }
    }
    cJSON_Delete(j);
}

static char *chat_url(const char *u)
{
    size_t n = strlen(u);
    while (n && u[n - 1] == '/') n--;
    if (n >= 17 && !strncmp(u + n - 17, "/chat/completions", 17)) return xstrndup(u, n);
    if (n >= 3 && !strncmp(u + n - 3, "/v1", 3)) return xasprintf("%.*s/chat/completions", (int)n, u);
    return xasprintf("%.*s/v1/chat/completions", (int)n, u);
}

void propose_next(const tune_opts *o, const tune_variant *inc, const tune_result *res, const char *hardware,
                  int64_t timeout_ms, tune_proposal *out)
{
    memset(out, 0, sizeof *out);
    char *body = propose_body(o, inc, res, hardware), *url = chat_url(o->proposer);
    const char *key = o->proposer_key_env ? getenv(o->proposer_key_env) : NULL;
    char *auth = key && *key ? xasprintf("Authorization: Bearer %s", key) : NULL;
    const char *hdrs[] = {auth, NULL};
    bfetch f;
    int rc = bfetch_do(url, auth ? hdrs : NULL, body, timeout_ms, &f);
    if (rc || f.status != 200) {
        out->kind = PROP_ERROR;
        if (rc)
            snprintf(out->reason, sizeof out->reason, "the proposer %s: %s", url, f.err);
        else
            snprintf(out->reason, sizeof out->reason, "the proposer %s answered HTTP %d: %.200s", url, f.status,
                     f.body.p ? f.body.p : "");
    } else {
        cJSON *j = cJSON_ParseWithLength(f.body.p ? f.body.p : "", f.body.len);
        const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
        const char *content = jstr(cJSON_GetObjectItemCaseSensitive(c0, "message"), "content");
        propose_parse(content, &o->space, inc, res, out);
        cJSON_Delete(j);
    }
    bfetch_release(&f);
    free(auth);
    free(url);
    free(body);
}
