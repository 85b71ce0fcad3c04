/* api_services.c - the supervisor's services as JSON (api_services.h).
 *
 * The supervisor lends read-only views (sup_svc_view, sup_slot) and
 * results with their detail as values; the control API alone turns them
 * into JSON, so the shape of docs/api.md lives in one place. */
#include "daemon/api_services.h"
#include "config/preset.h"
#include "daemon/verdict.h"
#include "util/jstrict.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void time_or_null(buf *b, int64_t ms)
{
    if (ms > 0)
        buf_json_time(b, ms);
    else
        buf_adds(b, "null");
}

static void footprint_json(buf *out, const footprint *fp, int64_t load_ms)
{
    buf_printf(out, "{\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)fp->host_bytes);
    for (size_t g = 0; g < fp->ngpu; g++)
        buf_printf(out, "%s\"%d\":%llu", g ? "," : "", fp->gpu[g].index, (unsigned long long)fp->gpu[g].bytes);
    buf_adds(out, "},\"gpu_how\":{");
    for (size_t g = 0; g < fp->ngpu; g++)
        buf_printf(out, "%s\"%d\":\"%s\"", g ? "," : "", fp->gpu[g].index, fp_gpu_how_names[fp->gpu[g].how]);
    buf_printf(out, "},\"partial\":%s,\"detail\":", footprint_partial(fp) ? "true" : "false");
    buf_json_str(out, fp->detail);
    buf_printf(out, ",\"load_ms\":%lld,\"measured_at\":", (long long)load_ms);
    buf_json_time(out, fp->measured_at_ms);
    buf_adds(out, "}");
}

/* ,"canary": the last canary's report, or null (docs/api.md) */
static void canary_json(buf *out, const sup_svc_view *v)
{
    const canary_report *c = v->canary;
    buf_printf(out, ",\"canary\":");
    if (!c && !v->canary_running) {
        buf_adds(out, "null");
        return;
    }
    if (v->canary_running) {
        buf_adds(out, "{\"state\":\"running\"}");
        return;
    }
    buf_printf(out, "{\"state\":\"%s\",\"ms\":%lld,\"sent\":%d,\"passed\":%d,\"at\":", c->ok ? "passed" : "failed",
               (long long)c->ms, c->sent, c->passed);
    buf_json_time(out, v->canary_at_ms);
    buf_adds(out, ",\"prompt\":");
    buf_json_str(out, c->prompt);
    buf_adds(out, ",\"answer\":");
    buf_json_str(out, c->sample);
    buf_adds(out, ",\"why\":");
    buf_json_str_or_null(out, c->ok ? NULL : c->why);
    buf_addc(out, '}');
}

/* restarts, health, last_exit, last_start, queued, log_file, canary */
static void history_json(buf *out, const sup_svc_view *v)
{
    buf_printf(out, ",\"restarts\":{\"in_window\":%lld,\"max\":%lld,\"window_ms\":%lld,\"next_at\":",
               (long long)v->restarts_in_window, (long long)v->max_restarts, (long long)v->restart_window_ms);
    time_or_null(out, v->next_restart_ms);
    buf_printf(out, "},\"health\":{\"failures\":%lld,\"last_ok\":", (long long)v->health_failures);
    time_or_null(out, v->last_ok_ms);
    buf_adds(out, "},\"last_exit\":");
    if (v->has_exit) {
        if (v->exit_sig)
            buf_printf(out, "{\"code\":null,\"signal\":%d,\"at\":", v->exit_sig);
        else
            buf_printf(out, "{\"code\":%d,\"signal\":null,\"at\":", v->exit_code);
        buf_json_time(out, v->exit_ms);
        buf_adds(out, "}");
    } else {
        buf_adds(out, "null");
    }
    buf_adds(out, ",\"last_start\":");
    if (v->start_seq) {
        buf_printf(out, "{\"seq\":%llu,\"origin\":", (unsigned long long)v->start_seq);
        buf_json_str(out, v->start_origin);
        buf_adds(out, ",\"outcome\":");
        buf_json_str(out, v->start_outcome);
        buf_adds(out, ",\"code\":");
        buf_json_str_or_null(out, sup_outcome_code(v->start_result));
        buf_adds(out, ",\"message\":");
        buf_json_str_or_null(out, v->start_message);
        buf_adds(out, ",\"at\":");
        buf_json_time(out, v->start_at_ms);
        buf_adds(out, "}");
    } else {
        buf_adds(out, "null");
    }
    if (v->queued)
        buf_printf(out, ",\"queued\":%d", v->queued);
    else
        buf_adds(out, ",\"queued\":null");
    buf_adds(out, ",\"log_file\":");
    buf_json_str(out, v->log_file);
    canary_json(out, v);
}

/* ---- overrides: one table for the body's keys and the JSON ---- */

static const struct {
    const char *key; /* as in a preset, whose schema gives the range */
    size_t off;      /* an int64_t of sup_overrides; 0 there: unset */
} override_keys[] = {
    {"context_size", offsetof(sup_overrides, context_size)},
};
#define N_OVERRIDE_KEYS (sizeof override_keys / sizeof *override_keys)

static int64_t *override_at(sup_overrides *ov, size_t k)
{
    return (int64_t *)((char *)ov + override_keys[k].off);
}

static void override_names(char *out, size_t len)
{
    size_t n = 0;
    out[0] = 0;
    for (size_t k = 0; k < N_OVERRIDE_KEYS && n < len; k++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", k ? ", " : "", override_keys[k].key);
}

static int overrides_from(const char *what, const cJSON *o, sup_overrides *out, char *err, size_t errlen)
{
    char names[256];
    override_names(names, sizeof names);
    if (!cJSON_IsObject(o)) {
        snprintf(err, errlen, "%s: \"overrides\" must be an object (keys: %s) or null", what, names);
        return -1;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        size_t k = 0;
        while (k < N_OVERRIDE_KEYS && strcmp(override_keys[k].key, it->string)) k++;
        if (k == N_OVERRIDE_KEYS) {
            snprintf(err, errlen, "%s: overrides: unknown key '%s' (allowed: %s)", what, it->string, names);
            return -1;
        }
        int64_t lo = 1, hi = INT64_MAX;
        preset_int_range(override_keys[k].key, &lo, &hi);
        if (cJSON_IsNull(it)) continue; /* the preset's */
        double d = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!(d >= (double)lo && d <= (double)hi) || d != floor(d)) {
            snprintf(err, errlen, "%s: overrides.%s must be an integer from %lld to %lld, or null for the preset's",
                     what, override_keys[k].key, (long long)lo, (long long)hi);
            return -1;
        }
        *override_at(out, k) = (int64_t)d;
    }
    return 0;
}

int api_overrides_parse(const char *what, const view *body, sup_overrides *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t i = 0;
    while (i < body->len && strchr(" \t\r\n", body->p[i])) i++;
    if (i == body->len) return 0; /* no body: the preset as configured */
    char jerr[256];
    cJSON *j = jstrict_parse(body->p, body->len, jerr, sizeof jerr);
    if (!j || !cJSON_IsObject(j)) {
        snprintf(err, errlen, "%s: the body must be a JSON object {\"overrides\": {...}}: %s", what,
                 j ? "found another JSON value" : jerr);
        cJSON_Delete(j);
        return -1;
    }
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, j)
    {
        if (strcmp(it->string, "overrides") != 0) {
            snprintf(err, errlen, "%s: unknown key '%s' in the body (allowed: overrides)", what, it->string);
            rc = -1;
            break;
        }
        if (!cJSON_IsNull(it) && overrides_from(what, it, out, err, errlen) != 0) {
            rc = -1;
            break;
        }
    }
    cJSON_Delete(j);
    return rc;
}

void api_overrides_json(buf *out, const sup_overrides *ov)
{
    if (!sup_overrides_any(ov)) {
        buf_adds(out, "null");
        return;
    }
    sup_overrides c = *ov;
    buf_addc(out, '{');
    bool first = true;
    for (size_t k = 0; k < N_OVERRIDE_KEYS; k++) {
        int64_t x = *override_at(&c, k);
        if (!x) continue;
        buf_printf(out, "%s\"%s\":%lld", first ? "" : ",", override_keys[k].key, (long long)x);
        first = false;
    }
    buf_addc(out, '}');
}

static void service_json(buf *out, const sup_svc_view *v)
{
    buf_adds(out, "{\"id\":");
    buf_json_str(out, v->id);
    buf_adds(out, ",\"driver\":");
    buf_json_str_or_null(out, v->driver);
    if (v->port > 0)
        buf_printf(out, ",\"port\":%d", v->port);
    else
        buf_adds(out, ",\"port\":null");
    buf_printf(out, ",\"configured\":%s,\"state\":\"%s\",\"since\":", v->configured ? "true" : "false",
               svc_state_names[v->state]);
    buf_json_time(out, v->since_ms);
    if (v->pgid > 0)
        buf_printf(out, ",\"pid\":%d,\"pgid\":%d", (int)v->pid, (int)v->pgid);
    else
        buf_adds(out, ",\"pid\":null,\"pgid\":null");
    if (v->progress_pct >= 0)
        buf_printf(out, ",\"progress_pct\":%d", v->progress_pct);
    else
        buf_adds(out, ",\"progress_pct\":null");
    buf_adds(out, ",\"config_hash\":");
    buf_json_str_or_null(out, v->config_hash);
    buf_adds(out, ",\"running_hash\":");
    buf_json_str_or_null(out, v->running_hash);
    bool changed = v->running_hash && v->config_hash && strcmp(v->config_hash, v->running_hash) != 0;
    buf_printf(out, ",\"config_changed\":%s", changed ? "true" : "false");
    buf_adds(out, ",\"overrides\":");
    api_overrides_json(out, v->overrides);
    buf_adds(out, ",\"admitted\":");
    if (v->admitted)
        need_json(out, v->admitted);
    else
        buf_adds(out, "null");
    buf_adds(out, ",\"footprint\":");
    if (v->footprint)
        footprint_json(out, v->footprint, v->load_ms);
    else
        buf_adds(out, "null");
    history_json(out, v);
    buf_adds(out, "}");
}

int api_service_json(sup *s, const char *id, buf *out)
{
    sup_svc *v = sup_lookup(s, id);
    sup_svc_view sv;
    if (!v || !sup_svc_view_of(v, &sv)) return -1;
    service_json(out, &sv);
    return 0;
}

void api_services_json(sup *s, buf *out)
{
    size_t max = sup_nsvcs(s);
    sup_state_info *in = xcalloc(max + 1, sizeof *in);
    size_t n = sup_states(s, NULL, in, max);
    sup_svc_view sv;
    bool first = true;
    buf_addc(out, '[');
    for (size_t i = 0; i < n; i++) {
        if (!sup_svc_view_of(in[i].svc, &sv)) continue;
        if (!first) buf_addc(out, ',');
        first = false;
        service_json(out, &sv);
    }
    buf_addc(out, ']');
    free(in);
}

void api_slot_json(sup *s, buf *out)
{
    size_t max = sup_nsvcs(s);
    const char **waiting = xcalloc(max + 1, sizeof *waiting);
    const char *holder;
    size_t n = sup_slot(s, &holder, waiting, max);
    buf_adds(out, "{\"holder\":");
    buf_json_str_or_null(out, holder);
    buf_adds(out, ",\"waiting\":[");
    for (size_t i = 0; i < n && i < max; i++) {
        if (i) buf_addc(out, ',');
        buf_json_str(out, waiting[i]);
    }
    buf_adds(out, "]}");
    free(waiting);
}

void api_result_detail_json(buf *out, const sup_result *r)
{
    if (r->gate) {
        verdict_json(out, "daemon", r->gate->service, r->gate->vd, r->gate->nd, r->gate->snap);
    } else if (r->holder) {
        buf_printf(out, "{\"pid\":%d,\"cmdline\":", (int)r->holder->pid);
        buf_json_str(out, r->holder->cmdline);
        buf_printf(out, ",\"port\":%d}", r->port);
    } else if (r->detail) {
        buf_adds(out, r->detail);
    }
}
