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
        buf_printf(out, ",\"woke\":%s,\"fell_back\":%s", v->start_woke ? "true" : "false",
                   v->start_fell_back ? "true" : "false");
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

/* ---- the body of a start: its overrides (config/overrides.c) ---- */

int api_overrides_parse(const char *what, const view *body, int driver, overrides *out, char *err, size_t errlen)
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
        char e[768];
        if (strcmp(it->string, "overrides") != 0) {
            snprintf(err, errlen, "%s: unknown key '%s' in the body (allowed: overrides)", what, it->string);
            rc = -1;
        } else if (overrides_parse(it, driver, out, e, sizeof e) != 0) {
            snprintf(err, errlen, "%s: %s", what, e);
            rc = -1;
        }
        if (rc) break;
    }
    cJSON_Delete(j);
    return rc;
}

void api_sleep_json(buf *out, const char *id, const sup_result *r)
{
    buf_adds(out, "{\"service\":");
    buf_json_str(out, id);
    int t = r->tier >= 0 && r->tier < TIER__COUNT ? r->tier : TIER_STOP;
    buf_printf(out, ",\"slept\":%s,\"tier\":\"%s\",\"fell_back\":%s,\"ms\":%lld,\"message\":",
               r->slept ? "true" : "false", tier_names[r->slept ? t : TIER_STOP], r->fell_back ? "true" : "false",
               (long long)r->ms);
    buf_json_str_or_null(out, r->message);
    buf_addc(out, '}');
}

/* ,"tier","asleep","wake_ms" (docs/api.md) */
static void tier_json(buf *out, const sup_svc_view *v)
{
    int t = v->tier >= 0 && v->tier < TIER__COUNT ? v->tier : TIER_STOP;
    buf_printf(out, ",\"tier\":\"%s\",\"asleep\":", tier_names[t]);
    if (v->asleep) {
        buf_printf(out, "{\"tier\":\"%s\",\"since\":", tier_names[t]);
        buf_json_time(out, v->asleep_since_ms);
        buf_adds(out, ",\"held\":");
        need_json(out, &v->asleep_held);
        buf_printf(out, ",\"measured\":%s}", v->asleep_measured ? "true" : "false");
    } else {
        buf_adds(out, "null");
    }
    if (v->wake_ms >= 0)
        buf_printf(out, ",\"wake_ms\":%lld", (long long)v->wake_ms);
    else
        buf_adds(out, ",\"wake_ms\":null");
}

static void service_json(sup *s, buf *out, const sup_svc_view *v)
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
    overrides_json(out, v->overrides);
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
    tier_json(out, v);
    history_json(out, v);
    sup_json_ext(s, v->id, out);
    buf_adds(out, "}");
}

int api_service_json(sup *s, const char *id, buf *out)
{
    sup_svc *v = sup_lookup(s, id);
    sup_svc_view sv;
    if (!v || !sup_svc_view_of(v, &sv)) return -1;
    service_json(s, out, &sv);
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
        service_json(s, out, &sv);
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
