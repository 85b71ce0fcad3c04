/* ctxsweep.c - the context-depth sweep (`--ctx-sweep START:MAX:STEP`):
 * prefill and decode speed as a function of the context already in the
 * KV cache, the ds4-bench idea over HTTP.
 *
 * One deterministic text is grown word by word; at each depth d it is sent
 * whole with cache_prompt, so the server finds the previous depth's text in
 * its cache and prefills only the new span (timings.cache_n / prompt_n
 * record that it did), then generates --gen-tokens.  Prefill speed comes
 * from the server's own timings (prompt_n / prompt_ms) when it gives them,
 * else from the client's (N_in - N_cached) / TTFT, flagged.  Decode speed
 * is (n_out - 1) / (t_last - t_first).  The sweep stops at MAX, at the
 * first failure (an HTTP error, the context exceeded: "failed" with the
 * server's message), or when the server degrades (decode below a quarter
 * of the first depth's, or a request timed out: "degraded").  Each
 * iteration starts from a different text (the seed moves), so no
 * iteration finds the previous one in the cache. */
#include "oai/docfile.h"
#include "bench/cli.h"

#define CTX_JUDGE_MS 50.0 /* shortest decode whose speed is judged (ms) */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/errf.h"

typedef struct depth_res {
    const char *status; /* "ok" "degraded" "failed" */
    char message[300];
} depth_res;

static cJSON *one_depth(const bopts *o, const btarget *t, long depth, uint64_t seed, btok_fn tok, double first_decode,
                        volatile int *interrupted, depth_res *dr, double *decode_out)
{
    long got = 0;
    bool exact = false;
    char terr[256] = "";
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "depth", (double)depth);
    char *text = bprompt_synth("", depth, seed, tok, (void *)t, &got, &exact, terr, sizeof terr);
    if (!text) {
        dr->status = "failed";
        snprintf(dr->message, sizeof dr->message, "building the prompt: %s", terr);
        cJSON_AddStringToObject(j, "status", dr->status);
        cJSON_AddStringToObject(j, "reason", dr->message);
        return j;
    }
    bbody_opts bo = {t->model, !o->completions, o->gen_tokens, !strcmp(t->flavor, "llamacpp"), 1};
    bprompt p = {text, NULL, -1};
    bload_body body;
    body.json = bbody_json(&bo, "", &p);
    body.len = strlen(body.json);
    free(text);
    char *url = xasprintf("%s%s", t->base_url, t->endpoint);
    bload_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.url = url;
    sp.headers = btarget_headers(t);
    sp.shape = BLOAD_CLOSED;
    sp.concurrency = 1;
    sp.seed = seed;
    sp.requests = 1;
    sp.bodies = &body;
    sp.n_bodies = 1;
    sp.request_timeout_ms = (int64_t)(o->timeout_s * 1000);
    sp.id_prefix = "gpumod-bench-ctx";
    bload_result res;
    memset(&res, 0, sizeof res);
    char lerr[256] = "";
    btele *tl = btele_start(200);
    int rc = bload_run(&sp, &res, interrupted, lerr, sizeof lerr);
    cJSON *mem = btele_stop(tl);
    free(url);
    free(body.json);
    cJSON_AddNumberToObject(j, "prompt_tokens_sent", (double)got);
    cJSON_AddBoolToObject(j, "prompt_tokens_exact", exact);
    if (rc || res.n < 1) {
        dr->status = "failed";
        snprintf(dr->message, sizeof dr->message, "%s", rc ? lerr : "no request was sent");
        cJSON_AddStringToObject(j, "status", dr->status);
        cJSON_AddStringToObject(j, "reason", dr->message);
        cJSON_AddItemToObject(j, "memory", mem);
        bload_result_release(&res);
        return j;
    }
    const breq *r = &res.reqs[0];
    breq_m m;
    breq_metrics(r, &m);
    double prefill = NAN, decode = NAN;
    const char *src = "client";
    if (breq_ok(r)) {
        if (r->has_timings && r->srv_prompt_ms > 0 && r->srv_prompt_n >= 0) {
            prefill = (double)r->srv_prompt_n * 1000.0 / r->srv_prompt_ms;
            src = "server";
        } else {
            prefill = m.prefill_tps;
        }
        /* decode speed: the server's own timings when it gives them
         * (llama-server), else the client's first-to-last token span */
        double decode_ms = NAN;
        if (r->has_timings && r->srv_predicted_ms > 0 && r->srv_predicted_n >= 2) {
            decode = (double)r->srv_predicted_n * 1000.0 / r->srv_predicted_ms;
            decode_ms = r->srv_predicted_ms;
        } else if (r->n_out >= 2 && r->t_last > r->t_first) {
            decode = (double)(r->n_out - 1) * 1e9 / (double)(r->t_last - r->t_first);
            decode_ms = (double)(r->t_last - r->t_first) / 1e6;
        }
        dr->status = "ok";
        /* A decode shorter than CTX_JUDGE_MS is one scheduler hiccup away
         * from any figure: it is reported, not judged (a tiny model's 16
         * tokens take 0.3 ms). */
        if (isfinite(first_decode) && isfinite(decode) && decode_ms >= CTX_JUDGE_MS && decode < first_decode / 4) {
            dr->status = "degraded";
            snprintf(dr->message, sizeof dr->message, "decode %.1f tok/s is below a quarter of the first depth's %.1f",
                     decode, first_decode);
        }
    } else {
        const char *e = r->error ? r->error : "the request failed";
        dr->status = strstr(e, "timed out") ? "degraded" : "failed";
        if (r->status && !strstr(e, "HTTP"))
            snprintf(dr->message, sizeof dr->message, "HTTP %d: %s", r->status, e);
        else
            snprintf(dr->message, sizeof dr->message, "%s", e);
    }
    *decode_out = decode;
    cJSON_AddStringToObject(j, "status", dr->status);
    if (dr->message[0])
        cJSON_AddStringToObject(j, "reason", dr->message);
    else
        cJSON_AddNullToObject(j, "reason");
    docfile_num(j, "n_in", r->n_in >= 0 ? (double)r->n_in : NAN);
    docfile_num(j, "n_cached", r->n_cached >= 0 ? (double)r->n_cached : NAN);
    docfile_num(j, "n_out", r->n_out >= 0 ? (double)r->n_out : NAN);
    docfile_num(j, "prefill_tokens", r->n_in >= 0 ? (double)(r->n_in - (r->n_cached > 0 ? r->n_cached : 0)) : NAN);
    docfile_num(j, "gen_tokens", r->n_out >= 0 ? (double)r->n_out : NAN);
    docfile_num(j, "prompt_n", r->has_timings ? (double)r->srv_prompt_n : NAN);
    docfile_num(j, "cache_n", r->has_timings ? (double)r->srv_cache_n : NAN);
    cJSON_AddStringToObject(j, "prefill_tps_source", src);
    cJSON_AddBoolToObject(j, "tokens_out_estimated", r->out_estimated);
    cJSON *v = cJSON_AddObjectToObject(j, "values");
    docfile_num(v, "prefill_tps", prefill);
    docfile_num(v, "gen_tps", decode);
    docfile_num(v, "ttft_ms", m.ttft_ms);
    docfile_num(v, "e2el_ms", m.e2el_ms);
    cJSON_AddItemToObject(j, "memory", mem);
    bload_result_release(&res);
    return j;
}

int bctx_run(cJSON *doc, const bopts *o, const btarget *t, volatile int *interrupted, char *err, size_t errlen)
{
    if (o->ctx_start < 1 || o->ctx_step < 1 || o->ctx_max < o->ctx_start) {
        errf(err, errlen, "--ctx-sweep %ld:%ld:%ld: expected START:MAX:STEP with 1 <= START <= MAX and STEP >= 1",
             o->ctx_start, o->ctx_max, o->ctx_step);
        return -1;
    }
    btok_fn tok = t->tokenize_url ? bprompt_tokenize_http : NULL;
    if (!tok)
        bresult_warn(doc, "the server has no /tokenize: depths are approximate (about 4 characters a token); "
                          "n_in shows what the server counted");
    size_t nd = (size_t)((o->ctx_max - o->ctx_start) / o->ctx_step) + 1;
    cJSON *points = cJSON_GetObjectItem(doc, "points");
    /* a depth's array is made when it is first reached: the sweep stops
     * at the first failure, so most of a long range may never run */
    cJSON **its = NULL;
    size_t n_its = 0;
    long deepest_ok = -1;
    bool tty = !o->quiet && isatty(2);
    const char *stopped = "max";
    char stop_msg[300] = "";
    for (long it = 0; it < o->iterations && !*interrupted; it++) {
        uint64_t seed = o->seed + (uint64_t)it * 7919u;
        double first_decode = NAN;
        for (size_t i = 0; i < nd && !*interrupted; i++) {
            long d = o->ctx_start + (long)i * o->ctx_step;
            depth_res dr = {"ok", ""};
            double dec = NAN;
            if (tty) fprintf(stderr, "\rctx sweep: iteration %ld/%ld, depth %ld   ", it + 1, o->iterations, d);
            cJSON *j = one_depth(o, t, d, seed, tok, first_decode, interrupted, &dr, &dec);
            if (*interrupted && !strcmp(dr.status, "failed")) { /* cut by Ctrl-C, not the server's */
                cJSON_Delete(j);
                break;
            }
            if (i >= n_its) {
                its = xrealloc(its, (i + 1) * sizeof *its);
                while (n_its <= i) its[n_its++] = cJSON_CreateArray();
            }
            cJSON_AddItemToArray(its[i], j);
            if (i == 0) first_decode = dec;
            if (strcmp(dr.status, "ok")) {
                stopped = dr.status;
                snprintf(stop_msg, sizeof stop_msg, "depth %ld: %s", d, dr.message);
                break;
            }
            if (d > deepest_ok) deepest_ok = d;
        }
        if (strcmp(stopped, "max")) break;
    }
    if (tty) fputs("\r\033[K", stderr);
    for (size_t i = 0; i < n_its; i++) {
        if (cJSON_GetArraySize(its[i]) == 0) {
            cJSON_Delete(its[i]);
            continue;
        }
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddStringToObject(pt, "x_name", "depth");
        cJSON_AddNumberToObject(pt, "x", (double)(o->ctx_start + (long)i * o->ctx_step));
        cJSON_AddItemToObject(pt, "summary", bresult_summary(its[i], o->seed));
        cJSON_AddItemToObject(pt, "iterations", its[i]);
        cJSON_AddItemToArray(points, pt);
    }
    free(its);
    cJSON *cs = cJSON_AddObjectToObject(doc, "ctx_sweep");
    if (deepest_ok > 0)
        cJSON_AddNumberToObject(cs, "deepest_ok", (double)deepest_ok);
    else
        cJSON_AddNullToObject(cs, "deepest_ok");
    cJSON_AddStringToObject(cs, "stopped", *interrupted ? "interrupted" : stopped);
    if (stop_msg[0])
        cJSON_AddStringToObject(cs, "message", stop_msg);
    else
        cJSON_AddNullToObject(cs, "message");
    if (strcmp(stopped, "max")) bresult_warn(doc, "the sweep stopped (%s) at %s", stopped, stop_msg);
    return 0;
}
