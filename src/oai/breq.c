/* breq.c - one benchmark request: what each SSE data payload says, and
 * the per-request metrics (breq.h; docs/bench.md "Metric definitions").
 *
 * The design decision is what counts as a token.  An event is
 * token-bearing when any channel carries generated text (delta.content,
 * delta.reasoning_content, delta.reasoning, delta.tool_calls,
 * choices[].text, llama's native "content"), or when a continuous counter
 * (usage.completion_tokens, timings.predicted_n) that was already seen on
 * an earlier event rises.  "Already seen" matters: llama-server puts its
 * timings on the finish chunk whether or not timings_per_token was asked
 * for, and a one-off total there is not a token arriving.  Events with no
 * choices (the trailing usage chunk) never count: the spec's "usage-only".
 * The server's numbers win over our counting everywhere; the count of
 * events is only the fallback, and says so (out_estimated, k_estimated). */
#include "oai/breq.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

void breq_init(breq *r)
{
    memset(r, 0, sizeof *r);
    r->n_in = r->n_out = r->n_cached = -1;
    r->usage_out_last = r->timings_out_last = -1;
    r->srv_prompt_ms = r->srv_predicted_ms = NAN;
    r->srv_prompt_n = r->srv_predicted_n = r->srv_cache_n = -1;
    r->srv_draft_n = r->srv_draft_accepted = -1;
}

void breq_release(breq *r)
{
    free(r->ev);
    free(r->error);
    r->ev = NULL;
    r->error = NULL;
    r->n_ev = r->ev_cap = 0;
}

void breq_fail(breq *r, const char *fmt, ...)
{
    if (r->error)
        return;
    buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    r->error = buf_detach(&b);
}

/* A JSON number as a count; -1 when absent, not a number or negative. */
static long num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9e15)
        return -1;
    return (long)v->valuedouble;
}

static bool nonempty_str(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s && *s;
}

/* {"error": "..."}, {"error": {"message": ...}} (OpenAI, llama-server,
 * newer vLLM) or {"object": "error", "message": ...} (older vLLM).
 * Returns true when j is one; the request is failed with its message. */
static bool stream_error(breq *r, const cJSON *j)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const char *obj = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "object"));
    if (!e && !(obj && strcmp(obj, "error") == 0))
        return false;
    if (!e)
        e = j;
    const char *msg = cJSON_IsString(e) ? e->valuestring
                                        : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
    if (msg) {
        breq_fail(r, "server error: %s", msg);
    } else {
        char *s = cJSON_PrintUnformatted(e);
        breq_fail(r, "server error: %s", s ? s : "(unprintable)");
        free(s);
    }
    return true;
}

static void copy_str(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s);
}

static void take_timings(breq *r, const cJSON *t)
{
    r->has_timings = true;
    const cJSON *v;
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(t, "prompt_ms")))
        r->srv_prompt_ms = v->valuedouble;
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(t, "predicted_ms")))
        r->srv_predicted_ms = v->valuedouble;
    long x;
    if ((x = num(t, "prompt_n")) >= 0)
        r->srv_prompt_n = x;
    if ((x = num(t, "predicted_n")) >= 0)
        r->srv_predicted_n = x;
    if ((x = num(t, "cache_n")) >= 0)
        r->srv_cache_n = x;
    if ((x = num(t, "draft_n")) >= 0)
        r->srv_draft_n = x;
    if ((x = num(t, "draft_n_accepted")) >= 0)
        r->srv_draft_accepted = x;
}

static void add_event(breq *r, int64_t t_ns, long k)
{
    if (r->n_ev == r->ev_cap) {
        r->ev_cap = r->ev_cap ? r->ev_cap * 2 : 64;
        r->ev = xrealloc(r->ev, r->ev_cap * sizeof *r->ev);
    }
    r->ev[r->n_ev].t_ns = t_ns;
    r->ev[r->n_ev].k = (int32_t)(k > INT32_MAX ? INT32_MAX : k);
    r->n_ev++;
}

bool breq_on_data(breq *r, int64_t t_ns, const char *json, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return false;
    }
    if (stream_error(r, j)) {
        cJSON_Delete(j);
        return false;
    }
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "id"));
    if (id && !r->id[0])
        copy_str(r->id, sizeof r->id, id);

    /* the counters this event carries (-1: none) */
    long u = -1, tp = -1;
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
    if (cJSON_IsObject(usage)) {
        u = num(usage, "completion_tokens");
        long pin = num(usage, "prompt_tokens");
        if (pin >= 0)
            r->n_in = pin;
        long cached = num(cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens_details"), "cached_tokens");
        if (cached >= 0)
            r->n_cached = cached;
    }
    const cJSON *timings = cJSON_GetObjectItemCaseSensitive(j, "timings");
    if (cJSON_IsObject(timings)) {
        take_timings(r, timings);
        tp = num(timings, "predicted_n");
    }

    /* the channels */
    bool text = false, content = false, has_choice = false;
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(j, "choices"), *c;
    const cJSON *list = cJSON_IsArray(choices) ? choices : NULL;
    cJSON_ArrayForEach(c, list) {
        has_choice = true;
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "delta");
        if (nonempty_str(d, "content") || nonempty_str(c, "text"))
            text = content = true;
        if (nonempty_str(d, "reasoning_content") || nonempty_str(d, "reasoning"))
            text = true;
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "tool_calls")) > 0)
            text = true;
        const char *fr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "finish_reason"));
        if (fr)
            copy_str(r->finish_reason, sizeof r->finish_reason, fr);
    }
    /* llama-server's native /completion stream */
    if (!cJSON_IsArray(choices) && cJSON_GetObjectItemCaseSensitive(j, "content")) {
        has_choice = true;
        if (nonempty_str(j, "content"))
            text = content = true;
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "stop_type"));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stop")) && st)
            copy_str(r->finish_reason, sizeof r->finish_reason, strcmp(st, "limit") == 0 ? "length" : "stop");
    }

    /* rises of the continuous counters */
    long du = u >= 0 ? u - (r->usage_out_last > 0 ? r->usage_out_last : 0) : -1;
    long dt = tp >= 0 ? tp - (r->timings_out_last > 0 ? r->timings_out_last : 0) : -1;
    bool rose = (du > 0 && r->usage_out_last >= 0) || (dt > 0 && r->timings_out_last >= 0);
    bool bearing = has_choice && (text || rose);
    if (bearing) {
        /* a counter's rise is k only when the counter was seen on an
         * earlier event (or this is the first event: a rise from 0, e.g.
         * timings_per_token's predicted_n = 1); a total first seen after
         * other events (usage on the last content chunk) is not a rise */
        bool first = r->n_ev == 0;
        long k = du > 0 && (r->usage_out_last >= 0 || first)     ? du
                 : dt > 0 && (r->timings_out_last >= 0 || first) ? dt
                                                                  : 0;
        if (k <= 0) {
            k = 1;
            r->k_estimated = true;
        }
        add_event(r, t_ns, k);
        if (!r->t_first)
            r->t_first = t_ns;
        if (content && !r->t_first_content)
            r->t_first_content = t_ns;
        r->t_last = t_ns;
    }
    if (u >= 0)
        r->usage_out_last = u;
    if (tp >= 0)
        r->timings_out_last = tp;
    cJSON_Delete(j);
    return bearing;
}

void breq_finish(breq *r, int64_t t_done)
{
    r->t_done = t_done;
    r->out_estimated = false;
    if (r->usage_out_last >= 0) {
        r->n_out = r->usage_out_last;
    } else if (r->timings_out_last >= 0) {
        r->n_out = r->timings_out_last;
    } else if (r->n_ev) {
        long sum = 0;
        for (size_t i = 0; i < r->n_ev; i++)
            sum += r->ev[i].k;
        r->n_out = sum;
        r->out_estimated = true;
    }
    /* N_in and N_cached from llama's timings when there was no usage */
    if (r->n_in < 0 && r->srv_prompt_n >= 0)
        r->n_in = r->srv_prompt_n + (r->srv_cache_n > 0 ? r->srv_cache_n : 0);
    if (r->n_cached < 0 && r->srv_cache_n >= 0)
        r->n_cached = r->srv_cache_n;
    if (!r->error && r->status >= 200 && r->status < 300 && r->n_ev == 0)
        breq_fail(r, "no token-bearing event in the stream");
}

bool breq_ok(const breq *r)
{
    return !r->error && r->status >= 200 && r->status < 300;
}

static double ms(int64_t a, int64_t b)
{
    return a && b ? (double)(a - b) / 1e6 : NAN;
}

void breq_metrics(const breq *r, breq_m *m)
{
    m->queue_client_ms = m->ttft_ms = m->ttft_sched_ms = m->ttfc_ms = NAN;
    m->e2el_ms = m->tpot_ms = m->prefill_tps = m->chunk_tokens = NAN;
    if (!breq_ok(r) || !r->n_ev)
        return;
    m->queue_client_ms = ms(r->t_send, r->t_sched);
    m->ttft_ms = ms(r->t_first, r->t_send);
    m->ttft_sched_ms = ms(r->t_first, r->t_sched);
    m->ttfc_ms = ms(r->t_first_content, r->t_send);
    m->e2el_ms = ms(r->t_last, r->t_send);
    if (r->n_out >= 2)
        m->tpot_ms = ms(r->t_last, r->t_first) / (double)(r->n_out - 1);
    if (r->n_in >= 0 && m->ttft_ms > 0)
        m->prefill_tps = (double)(r->n_in - (r->n_cached > 0 ? r->n_cached : 0)) / (m->ttft_ms / 1000);
    long sum = 0;
    for (size_t i = 0; i < r->n_ev; i++)
        sum += r->ev[i].k;
    m->chunk_tokens = (double)sum / (double)r->n_ev;
}
