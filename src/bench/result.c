/* result.c - the result document of docs/bench.md, built from what a run
 * measured.  Every figure that cannot be computed is null, never 0 or a
 * guess; every estimate carries its flag.  The document is the one source
 * of every rendering (table, CSV, Markdown, SVG, compare). */
#include "bench/cli.h"
#include "oai/docfile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bstats.h"
#include "util/buf.h"
#include "util/clock.h"

#define SUMMARY_CONF 0.95
#define SUMMARY_B 2000

void bresult_warn(cJSON *doc, const char *fmt, ...)
{
    cJSON *w = cJSON_GetObjectItem(doc, "warnings");
    if (!w) w = cJSON_AddArrayToObject(doc, "warnings");
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const cJSON *x;
    cJSON_ArrayForEach(x, w) if (!strcmp(cJSON_GetStringValue(x) ?: "", msg)) return; /* once */
    cJSON_AddItemToArray(w, cJSON_CreateString(msg));
}

static cJSON *bsum_json(const bsum *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "n", (double)s->n);
    docfile_num(j, "mean", s->mean);
    docfile_num(j, "sd", s->sd);
    docfile_num(j, "min", s->min);
    docfile_num(j, "max", s->max);
    docfile_num(j, "median", s->median);
    for (int i = 0; i < BSUM_NP; i++) docfile_num(j, bsum_pct_names[i], s->p_ok[i] ? s->p[i] : NAN);
    return j;
}

static cJSON *server_json(const bserver_delta *d)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "flavor", d->flavor ? d->flavor : "unknown");
    cJSON_AddBoolToObject(j, "reset", d->reset);
    docfile_num(j, "prompt_tokens", d->prompt_tokens);
    docfile_num(j, "predicted_tokens", d->predicted_tokens);
    docfile_num(j, "prompt_s", d->prompt_s);
    docfile_num(j, "predicted_s", d->predicted_s);
    docfile_num(j, "n_decode", d->n_decode);
    docfile_num(j, "prefill_tps", d->prefill_tps);
    docfile_num(j, "decode_tps", d->decode_tps);
    docfile_num(j, "tokens_per_decode", d->tokens_per_decode);
    docfile_num(j, "busy_slots_per_decode", d->busy_slots_per_decode);
    docfile_num(j, "requests_deferred", d->requests_deferred);
    docfile_num(j, "requests_running", d->requests_running);
    docfile_num(j, "requests_waiting", d->requests_waiting);
    docfile_num(j, "kv_cache_usage", d->kv_cache_usage);
    docfile_num(j, "requests_success", d->requests_success);
    if (d->spec) {
        cJSON *s = cJSON_AddObjectToObject(j, "spec");
        docfile_num(s, "drafts", d->drafts);
        docfile_num(s, "draft_tokens", d->draft_tokens);
        docfile_num(s, "accepted", d->accepted);
        docfile_num(s, "acceptance_rate", d->acceptance_rate);
        docfile_num(s, "acceptance_length", d->acceptance_length);
        cJSON *pp = cJSON_AddArrayToObject(s, "per_pos");
        for (int i = 0; i < d->n_pos && i < BSERVER_MAX_POS; i++)
            cJSON_AddItemToArray(pp, isfinite(d->per_pos[i]) ? cJSON_CreateNumber(d->per_pos[i]) : cJSON_CreateNull());
    } else {
        cJSON_AddNullToObject(j, "spec");
    }
    return j;
}

static cJSON *self_json(const bself *s)
{
    cJSON *j = cJSON_CreateObject();
    docfile_num(j, "cpu_pct", s->cpu_pct);
    if (!isfinite(s->cpu_pct))
        cJSON_AddStringToObject(j, "cpu_note", "not judged: the run took less than 1 s of wall time");
    else
        cJSON_AddNullToObject(j, "cpu_note");
    docfile_num(j, "user_s", s->user_s);
    docfile_num(j, "sys_s", s->sys_s);
    docfile_num(j, "wall_s", s->wall_s);
    cJSON_AddItemToObject(j, "sched_lag_ms", bsum_json(&s->sched_lag_ms));
    cJSON_AddItemToObject(j, "loop_lag_ms", bsum_json(&s->loop_lag_ms));
    cJSON_AddItemToObject(j, "loop_busy_ms", bsum_json(&s->loop_busy_ms));
    docfile_num(j, "runq_wait_s", s->runq_wait_s);
    docfile_num(j, "bytes_per_s", s->bytes_per_s);
    cJSON_AddNumberToObject(j, "max_in_flight", (double)s->max_in_flight);
    cJSON_AddBoolToObject(j, "client_bound", s->client_bound);
    cJSON *w = cJSON_AddArrayToObject(j, "warnings");
    for (int i = 0; i < s->n_warnings && i < 4; i++) cJSON_AddItemToArray(w, cJSON_CreateString(s->warnings[i]));
    return j;
}

static double ms_rel(int64_t t, int64_t base)
{
    return t && base ? (double)(t - base) / 1e6 : NAN;
}

static cJSON *request_json(const breq *r, int64_t w_start)
{
    cJSON *j = cJSON_CreateObject();
    if (r->id[0]) cJSON_AddStringToObject(j, "id", r->id);
    cJSON_AddNumberToObject(j, "status", r->status);
    docfile_num(j, "t_sched_ms", ms_rel(r->t_sched, w_start)); /* from the window's start */
    docfile_num(j, "t_send_ms", ms_rel(r->t_send, w_start));
    docfile_num(j, "t_hdr_ms", ms_rel(r->t_hdr, r->t_send)); /* from t_send */
    docfile_num(j, "t_first_ms", ms_rel(r->t_first, r->t_send));
    docfile_num(j, "t_first_content_ms", ms_rel(r->t_first_content, r->t_send));
    docfile_num(j, "t_last_ms", ms_rel(r->t_last, r->t_send));
    docfile_num(j, "t_done_ms", ms_rel(r->t_done, r->t_send));
    docfile_num(j, "n_in", r->n_in >= 0 ? (double)r->n_in : NAN);
    docfile_num(j, "n_out", r->n_out >= 0 ? (double)r->n_out : NAN);
    docfile_num(j, "n_cached", r->n_cached >= 0 ? (double)r->n_cached : NAN);
    cJSON_AddBoolToObject(j, "out_estimated", r->out_estimated);
    cJSON_AddBoolToObject(j, "k_estimated", r->k_estimated);
    cJSON_AddStringToObject(j, "finish_reason", r->finish_reason);
    cJSON_AddNumberToObject(j, "bytes_in", (double)r->bytes_in);
    if (r->error)
        cJSON_AddStringToObject(j, "error", r->error);
    else
        cJSON_AddNullToObject(j, "error");
    if (r->has_timings) {
        cJSON *t = cJSON_AddObjectToObject(j, "timings");
        cJSON_AddNumberToObject(t, "prompt_n", (double)r->srv_prompt_n);
        docfile_num(t, "prompt_ms", r->srv_prompt_ms);
        cJSON_AddNumberToObject(t, "predicted_n", (double)r->srv_predicted_n);
        docfile_num(t, "predicted_ms", r->srv_predicted_ms);
        cJSON_AddNumberToObject(t, "cache_n", (double)r->srv_cache_n);
        if (r->srv_draft_n >= 0) cJSON_AddNumberToObject(t, "draft_n", (double)r->srv_draft_n);
        if (r->srv_draft_accepted >= 0) cJSON_AddNumberToObject(t, "draft_n_accepted", (double)r->srv_draft_accepted);
    } else {
        cJSON_AddNullToObject(j, "timings");
    }
    cJSON *ev = cJSON_AddArrayToObject(j, "events");
    for (size_t i = 0; i < r->n_ev; i++) {
        cJSON *p = cJSON_CreateArray();
        cJSON_AddItemToArray(p, cJSON_CreateNumber(round((double)(r->ev[i].t_ns - r->t_send) / 1e3) / 1e3));
        cJSON_AddItemToArray(p, cJSON_CreateNumber(r->ev[i].k));
        cJSON_AddItemToArray(ev, p);
    }
    return j;
}

cJSON *bresult_iteration(const bload_result *r, const bagg *a, const bserver_delta *sd, cJSON *memory, bool raw)
{
    cJSON *j = cJSON_CreateObject();
    docfile_num(j, "window_s", a->window_s);
    cJSON_AddNumberToObject(j, "sent", (double)a->sent);
    cJSON_AddNumberToObject(j, "completed", (double)a->completed);
    cJSON_AddNumberToObject(j, "failed", (double)a->failed);
    cJSON_AddNumberToObject(j, "warmup", (double)r->n_warmup);
    cJSON_AddNumberToObject(j, "interrupted", (double)r->n_cut); /* cut by SIGINT: not in sent */
    cJSON *errs = cJSON_AddObjectToObject(j, "errors");
    for (size_t i = 0; i < r->n; i++) {
        const char *e = r->reqs[i].error;
        if (!e) continue;
        char key[300];
        snprintf(key, sizeof key, "%s", e); /* long messages share their start */
        cJSON *c = cJSON_GetObjectItem(errs, key);
        if (c)
            cJSON_SetNumberValue(c, c->valuedouble + 1);
        else
            cJSON_AddNumberToObject(errs, key, 1);
    }
    cJSON_AddNumberToObject(j, "tokens_in", (double)a->tokens_in);
    cJSON_AddNumberToObject(j, "tokens_out", (double)a->tokens_out);
    cJSON_AddBoolToObject(j, "tokens_in_unknown", a->in_unknown);
    cJSON_AddBoolToObject(j, "tokens_out_estimated", a->out_estimated);
    cJSON_AddBoolToObject(j, "k_estimated", a->k_estimated);
    docfile_num(j, "req_tput", a->req_tput);
    docfile_num(j, "out_tput", a->out_tput);
    docfile_num(j, "total_tput", a->total_tput);
    docfile_num(j, "goodput", a->goodput);
    docfile_num(j, "good_fraction", a->good_fraction);
    docfile_num(j, "concurrency_avg", a->concurrency_avg);
    docfile_num(j, "concurrency_peak", a->concurrency_peak);
    docfile_num(j, "littles_law", a->littles_law);
    docfile_num(j, "chunk_tokens", a->chunk_tokens);
    cJSON *m = cJSON_AddObjectToObject(j, "metrics");
    cJSON_AddItemToObject(m, "ttft_ms", bsum_json(&a->ttft));
    cJSON_AddItemToObject(m, "ttfc_ms", bsum_json(&a->ttfc));
    cJSON_AddItemToObject(m, "tpot_ms", bsum_json(&a->tpot));
    cJSON_AddItemToObject(m, "e2el_ms", bsum_json(&a->e2el));
    cJSON_AddItemToObject(m, "itl_token_ms", bsum_json(&a->itl_token));
    cJSON_AddItemToObject(m, "itl_chunk_ms", bsum_json(&a->itl_chunk));
    cJSON_AddItemToObject(m, "queue_client_ms", bsum_json(&a->queue_client));
    cJSON_AddItemToObject(m, "ttft_sched_ms", bsum_json(&a->ttft_sched));
    cJSON_AddItemToObject(m, "prefill_tps", bsum_json(&a->prefill_tps));
    cJSON *v = cJSON_AddObjectToObject(j, "values");
    const char *names[64];
    double vals[64];
    size_t nv = bagg_values(a, names, vals, 64);
    for (size_t i = 0; i < nv && i < 64; i++) docfile_num(v, names[i], vals[i]);
    if (sd)
        cJSON_AddItemToObject(j, "server", server_json(sd));
    else
        cJSON_AddNullToObject(j, "server");
    cJSON_AddItemToObject(j, "self_check", self_json(&r->self));
    cJSON_AddItemToObject(j, "memory", memory ? memory : cJSON_CreateNull());
    if (raw) {
        /* the requests' t_send_ms origin as CLOCK_MONOTONIC ms, so that a
         * server's own log on this host can be joined (t80-bench-agree) */
        docfile_num(j, "w_start_mono_ms", (double)r->w_start / 1e6);
        cJSON *rq = cJSON_AddArrayToObject(j, "requests");
        for (size_t i = 0; i < r->n; i++) cJSON_AddItemToArray(rq, request_json(&r->reqs[i], r->w_start));
        for (size_t i = r->n; i < r->n + r->n_cut; i++) {
            cJSON *c = request_json(&r->reqs[i], r->w_start);
            cJSON_AddTrueToObject(c, "interrupted");
            cJSON_AddItemToArray(rq, c);
        }
    }
    return j;
}

cJSON *bresult_summary(const cJSON *iterations, uint64_t seed)
{
    cJSON *sum = cJSON_CreateObject();
    const cJSON *first = cJSON_GetArrayItem(iterations, 0);
    const cJSON *names = cJSON_GetObjectItem(first, "values"), *nm;
    int ni = cJSON_GetArraySize(iterations);
    double *v = xcalloc((size_t)(ni > 0 ? ni : 1), sizeof *v);
    cJSON_ArrayForEach(nm, names) {
        size_t n = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, iterations) {
            const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(it, "values"), nm->string);
            if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) v[n++] = x->valuedouble;
        }
        bci ci;
        if (bstat_median_ci(v, n, SUMMARY_CONF, SUMMARY_B, seed, &ci) != 0) ci.est = ci.lo = ci.hi = NAN;
        cJSON *o = cJSON_AddObjectToObject(sum, nm->string);
        docfile_num(o, "median", n ? ci.est : NAN);
        docfile_num(o, "lo", n ? ci.lo : NAN);
        docfile_num(o, "hi", n ? ci.hi : NAN);
        cJSON_AddNumberToObject(o, "n", (double)n);
    }
    free(v);
    return sum;
}

static cJSON *nums(const double *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

cJSON *bresult_settings(const bopts *o, bool prompt_exact, long prompt_measured)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "shape", o->n_rate ? "open" : "closed");
    if (o->n_rate || o->ctx_sweep) { /* no closed-loop concurrency: the cap is max_concurrency */
        cJSON_AddNullToObject(s, "concurrency");
    } else {
        cJSON *c = cJSON_AddArrayToObject(s, "concurrency");
        for (size_t i = 0; i < o->n_conc; i++) cJSON_AddItemToArray(c, cJSON_CreateNumber((double)o->conc[i]));
    }
    if (o->n_rate)
        cJSON_AddItemToObject(s, "rate", nums(o->rate, o->n_rate));
    else
        cJSON_AddNullToObject(s, "rate");
    docfile_num(s, "burstiness", o->burstiness); /* inf: null (constant gaps) */
    if (o->max_concurrency > 0)
        cJSON_AddNumberToObject(s, "max_concurrency", (double)o->max_concurrency);
    else
        cJSON_AddNullToObject(s, "max_concurrency");
    if (o->duration_s > 0) {
        cJSON_AddNullToObject(s, "requests");
        cJSON_AddNumberToObject(s, "duration_s", o->duration_s);
    } else {
        if (o->requests > 0)
            cJSON_AddNumberToObject(s, "requests", (double)o->requests);
        else
            cJSON_AddStringToObject(s, "requests", "auto");
        cJSON_AddNullToObject(s, "duration_s");
    }
    if (o->warmup >= 0)
        cJSON_AddNumberToObject(s, "warmup", (double)o->warmup);
    else
        cJSON_AddStringToObject(s, "warmup", "auto");
    cJSON_AddNumberToObject(s, "iterations", (double)o->iterations);
    if (o->prompts_file) {
        cJSON_AddNullToObject(s, "prompt_tokens");
    } else {
        cJSON_AddNumberToObject(s, "prompt_tokens", (double)o->prompt_tokens);
    }
    cJSON_AddBoolToObject(s, "prompt_tokens_exact", prompt_exact);
    if (prompt_measured >= 0)
        cJSON_AddNumberToObject(s, "prompt_tokens_measured", (double)prompt_measured);
    else
        cJSON_AddNullToObject(s, "prompt_tokens_measured");
    if (o->prompts_file)
        cJSON_AddStringToObject(s, "prompts_file", o->prompts_file);
    else
        cJSON_AddNullToObject(s, "prompts_file");
    cJSON_AddNumberToObject(s, "gen_tokens", (double)o->gen_tokens);
    cJSON_AddBoolToObject(s, "ignore_eos", true);
    cJSON_AddStringToObject(s, "endpoint", o->completions ? "completions" : "chat");
    cJSON *slo = cJSON_AddObjectToObject(s, "slo");
    docfile_num(slo, "ttft_ms", o->slo.ttft_ms > 0 ? o->slo.ttft_ms : NAN);
    docfile_num(slo, "tpot_ms", o->slo.tpot_ms > 0 ? o->slo.tpot_ms : NAN);
    docfile_num(slo, "e2el_ms", o->slo.e2el_ms > 0 ? o->slo.e2el_ms : NAN);
    cJSON_AddNumberToObject(s, "seed", (double)o->seed);
    if (o->ctx_sweep) {
        cJSON *cs = cJSON_AddObjectToObject(s, "ctx_sweep");
        cJSON_AddNumberToObject(cs, "start", (double)o->ctx_start);
        cJSON_AddNumberToObject(cs, "max", (double)o->ctx_max);
        cJSON_AddNumberToObject(cs, "step", (double)o->ctx_step);
    } else {
        cJSON_AddNullToObject(s, "ctx_sweep");
    }
    cJSON_AddNumberToObject(s, "timeout_s", o->timeout_s);
    return s;
}

cJSON *bresult_new(const char *kind, const bopts *o, int64_t started_unix_ms)
{
    return docfile_new("gpumod.bench/1", kind, "bench", started_unix_ms, o->argc, o->argv);
}
