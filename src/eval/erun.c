/* erun.c - the eval runner (erun.h): a closed loop of items on one libuv
 * loop, two libcurl clients (the model's, the judge's).
 *
 * A job is one item x repetition: it takes a slot, sends the model's
 * request, gathers the streamed reply (content, reasoning, tool-call
 * fragments merged by index), scores it, maybe asks the judge, maybe
 * retries once, and settles its record; then the slot takes the next job.
 * Jobs start in repetition-major order (every item once, then again), so
 * a run cut short has touched every item.  Nothing is printed here: the
 * progress callback and the records carry everything. */
#include "eval/erun.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <uv.h>

#include "eval/score.h"
#include "oai/client.h"
#include "util/errf.h"

typedef struct tcall {
    buf id, name, args;
} tcall;

typedef struct job {
    struct runner *R;
    size_t ri;         /* the record */
    bool judging;
    int judge_tries;
    breq r;
    char *body;
    buf content, reasoning;
    bool has_content, has_reasoning;
    tcall *calls;
    size_t n_calls;
} job;

typedef struct runner {
    const erun_opts *o;
    erun_result *res;
    uv_loop_t loop;
    uv_timer_t tick;
    bclient *model, *judge;
    size_t next, total;  /* jobs started, jobs in all */
    long in_flight;
    size_t pass, fail, error;
    int64_t t0;
    bool stopping;
} runner;

/* ---- request bodies ---------------------------------------------------------- */

static void add_stream(cJSON *b, long max_tokens, double temperature, uint64_t seed)
{
    cJSON_AddNumberToObject(b, "max_tokens", (double)max_tokens);
    cJSON_AddNumberToObject(b, "temperature", temperature);
    cJSON_AddNumberToObject(b, "seed", (double)seed);
    cJSON_AddBoolToObject(b, "stream", true);
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(b, "stream_options"), "include_usage", true);
}

char *erun_body(const erun_opts *o, const eval_item *it, uint64_t seed)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "model", o->model);
    cJSON_AddItemToObject(b, "messages", eval_item_messages(it));
    cJSON *tools = it->tools ? cJSON_Parse(it->tools) : NULL;
    if (tools) cJSON_AddItemToObject(b, "tools", tools);
    add_stream(b, it->max_tokens > 0 ? (long)it->max_tokens : o->max_tokens, o->temperature, seed);
    char *s = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    return s;
}

static char *judge_body(const runner *R, const eval_item *it, const erec *rec)
{
    buf p = BUF_INIT;
    judge_prompt(&p, it, rec->answer ? rec->answer : "");
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "model", R->o->judge_model);
    cJSON *m = cJSON_AddArrayToObject(b, "messages"), *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "role", "user");
    cJSON_AddStringToObject(u, "content", p.p);
    cJSON_AddItemToArray(m, u);
    add_stream(b, R->o->max_tokens, 0, rec->seed);
    char *s = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    buf_release(&p);
    return s;
}

/* ---- the streamed reply ------------------------------------------------------- */

static void reply_reset(job *j)
{
    buf_clear(&j->content);
    buf_clear(&j->reasoning);
    j->has_content = j->has_reasoning = false;
    for (size_t i = 0; i < j->n_calls; i++) {
        buf_release(&j->calls[i].id);
        buf_release(&j->calls[i].name);
        buf_release(&j->calls[i].args);
    }
    free(j->calls);
    j->calls = NULL;
    j->n_calls = 0;
}

static void add_text(buf *b, bool *has, const cJSON *v)
{
    if (!cJSON_IsString(v)) return;
    buf_adds(b, v->valuestring);
    *has = true;
}

/* a tool call's fragments: the entry at its index grows */
static void add_call(job *j, const cJSON *tc, size_t pos)
{
    const cJSON *ix = cJSON_GetObjectItemCaseSensitive(tc, "index");
    size_t i = cJSON_IsNumber(ix) && ix->valuedouble >= 0 && ix->valuedouble < 256 ? (size_t)ix->valuedouble : pos;
    if (i >= j->n_calls) {
        j->calls = xrealloc(j->calls, (i + 1) * sizeof *j->calls);
        for (size_t k = j->n_calls; k <= i; k++) {
            buf_init(&j->calls[k].id);
            buf_init(&j->calls[k].name);
            buf_init(&j->calls[k].args);
        }
        j->n_calls = i + 1;
    }
    tcall *c = &j->calls[i];
    bool dummy;
    add_text(&c->id, &dummy, cJSON_GetObjectItemCaseSensitive(tc, "id"));
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
    add_text(&c->name, &dummy, cJSON_GetObjectItemCaseSensitive(fn, "name"));
    add_text(&c->args, &dummy, cJSON_GetObjectItemCaseSensitive(fn, "arguments"));
}

static void on_data(void *ud, breq *r, void *req_ud, const char *json, size_t len)
{
    job *j = req_ud;
    cJSON *e = cJSON_ParseWithLength(json, len);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "choices"), 0);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(c0, "delta");
    if (!d) d = cJSON_GetObjectItemCaseSensitive(c0, "message"); /* a server that did not stream */
    if (d) {
        add_text(&j->content, &j->has_content, cJSON_GetObjectItemCaseSensitive(d, "content"));
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(d, "reasoning_content");
        add_text(&j->reasoning, &j->has_reasoning, rc ? rc : cJSON_GetObjectItemCaseSensitive(d, "reasoning"));
        const cJSON *tc;
        size_t pos = 0;
        cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(d, "tool_calls")) add_call(j, tc, pos++);
    }
    cJSON_Delete(e);
}

static cJSON *calls_json(const job *j)
{
    if (!j->n_calls) return NULL;
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < j->n_calls; i++) {
        cJSON *c = cJSON_CreateObject(), *fn;
        cJSON_AddStringToObject(c, "id", j->calls[i].id.p);
        cJSON_AddStringToObject(c, "type", "function");
        fn = cJSON_AddObjectToObject(c, "function");
        cJSON_AddStringToObject(fn, "name", j->calls[i].name.p);
        cJSON_AddStringToObject(fn, "arguments", j->calls[i].args.p);
        cJSON_AddItemToArray(a, c);
    }
    return a;
}

/* ---- jobs -------------------------------------------------------------------------- */

static void start_next(runner *R);

static void send_job(runner *R, job *j)
{
    erec *rec = &R->res->recs[j->ri];
    const eval_item *it = &R->o->suite->items[rec->item];
    free(j->body);
    breq_release(&j->r);
    breq_init(&j->r);
    reply_reset(j);
    j->r.t_sched = bclient_now_ns();
    if (j->judging) {
        j->body = judge_body(R, it, rec);
        j->judge_tries++;
    } else {
        j->body = erun_body(R->o, it, rec->seed);
        rec->attempts++;
    }
    R->in_flight++;
    if (R->in_flight > R->res->max_in_flight) R->res->max_in_flight = R->in_flight;
    bclient_send(j->judging ? R->judge : R->model, &j->r, j->body, strlen(j->body), NULL, j);
}

static void set_error(erec *rec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(erec *rec, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(rec->error);
    rec->error = xvasprintf(fmt, ap);
    va_end(ap);
    rec->state = SCORE_ERROR;
}

static void settle(runner *R, job *j)
{
    erec *rec = &R->res->recs[j->ri];
    /* an item Ctrl-C cut is left out of the results, like one never sent */
    rec->settled = !(R->stopping && rec->state == SCORE_ERROR);
    R->res->settled += rec->settled;
    R->pass += rec->state == SCORE_PASS;
    R->fail += rec->state == SCORE_FAIL;
    R->error += rec->state == SCORE_ERROR;
    breq_release(&j->r);
    reply_reset(j);
    buf_release(&j->content);
    buf_release(&j->reasoning);
    free(j->body);
    free(j);
    start_next(R);
}

/* the model's reply is in: keep it, score it */
static void take_reply(runner *R, job *j, erec *rec, const eval_item *it)
{
    free(rec->content);
    free(rec->reasoning);
    free(rec->tool_calls);
    free(rec->answer);
    rec->answer = rec->tool_calls = NULL;
    rec->content = j->has_content ? xstrdup(j->content.p) : NULL;
    rec->reasoning = j->has_reasoning ? xstrdup(j->reasoning.p) : NULL;
    cJSON *calls = calls_json(j);
    if (calls) rec->tool_calls = cJSON_PrintUnformatted(calls);
    snprintf(rec->finish_reason, sizeof rec->finish_reason, "%s", j->r.finish_reason);
    rec->n_in = j->r.n_in;
    rec->n_out = j->r.n_out;
    rec->latency_ms = j->r.t_done && j->r.t_send ? (double)(j->r.t_done - j->r.t_send) / 1e6 : NAN;
    rec->ttft_ms = j->r.t_first && j->r.t_send ? (double)(j->r.t_first - j->r.t_send) / 1e6 : NAN;
    if (!strcmp(rec->finish_reason, "length")) R->res->length_hits++;
    eval_reply rp = {rec->content, rec->reasoning, calls};
    eval_score sc;
    score_reply(&sc, it, &rp);
    rec->state = sc.state;
    rec->rule = sc.rule;
    rec->answer = sc.answer;
    sc.answer = NULL;
    snprintf(rec->reason, sizeof rec->reason, "%s", sc.reason);
    free(rec->error);
    rec->error = sc.state == SCORE_ERROR ? xstrdup(sc.reason[0] ? sc.reason : "empty reply") : NULL;
    score_release(&sc);
    cJSON_Delete(calls);
}

static void judged(runner *R, job *j, erec *rec, const eval_item *it)
{
    eval_score sc = {.state = SCORE_JUDGE, .rule = rec->rule, .answer = rec->answer};
    score_judged(&sc, it, j->has_content ? j->content.p : NULL, j->has_reasoning ? j->reasoning.p : NULL);
    rec->state = sc.state;
    rec->judge = sc.judge;
    snprintf(rec->reason, sizeof rec->reason, "%s", sc.reason);
    free(rec->error);
    rec->error = sc.state == SCORE_ERROR ? xasprintf("judge: %s", sc.reason) : NULL;
}

static void on_done(void *ud, breq *r, void *req_ud, int64_t now_ns)
{
    runner *R = ud;
    job *j = req_ud;
    erec *rec = &R->res->recs[j->ri];
    const eval_item *it = &R->o->suite->items[rec->item];
    R->in_flight--;
    bool ok = breq_ok(r) || (r->error && strstr(r->error, "no token-bearing event") && r->status / 100 == 2);
    if (!ok) {
        if (j->judging)
            set_error(rec, "judge: %s", r->error ? r->error : "no reply");
        else
            set_error(rec, "%s", r->error ? r->error : "no reply");
    } else if (j->judging) {
        judged(R, j, rec, it);
    } else {
        take_reply(R, j, rec, it);
    }
    bool retry = rec->state == SCORE_ERROR && !R->stopping && (j->judging ? j->judge_tries < 2 : rec->attempts < 2);
    if (retry) {
        send_job(R, j);
        return;
    }
    if (rec->state == SCORE_JUDGE && !R->stopping) {
        if (!R->judge) {
            set_error(rec, "a judge item, but no --judge was given");
        } else {
            j->judging = true;
            send_job(R, j);
            return;
        }
    }
    if (rec->state == SCORE_JUDGE) set_error(rec, "interrupted before the judge answered");
    settle(R, j);
}

static void start_next(runner *R)
{
    const erun_opts *o = R->o;
    size_t n = o->suite->n_items;
    while (!R->stopping && R->next < R->total && R->in_flight < o->concurrency) {
        size_t q = R->next++, rep = q / n, item = q % n;
        job *j = xcalloc(1, sizeof *j);
        j->R = R;
        j->ri = item * o->k + rep;
        buf_init(&j->content);
        buf_init(&j->reasoning);
        breq_init(&j->r);
        send_job(R, j);
    }
    if ((R->stopping || R->next >= R->total) && R->in_flight == 0) {
        uv_timer_stop(&R->tick);
        if (R->model) bclient_close(R->model);
        if (R->judge) bclient_close(R->judge);
        R->model = R->judge = NULL;
        uv_close((uv_handle_t *)&R->tick, NULL);
    }
}

static double secs_since(int64_t t0)
{
    return (double)(bclient_now_ns() - t0) / 1e9;
}

static void on_tick(uv_timer_t *t)
{
    runner *R = t->data;
    if (R->o->interrupted && *R->o->interrupted && !R->stopping) {
        R->stopping = true;
        bclient_abort_all(R->model, "interrupted");
        if (R->judge) bclient_abort_all(R->judge, "interrupted");
        return;
    }
    if (R->o->progress) {
        erun_progress p = {R->res->settled, R->total, R->pass, R->fail, R->error, secs_since(R->t0)};
        R->o->progress(R->o->ud, &p);
    }
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static bclient *client(runner *R, const char *url, const char *const *headers, char *err, size_t errlen)
{
    bclient_opts co = {.url = url,
                       .headers = headers,
                       .timeout_ms = (int64_t)(R->o->timeout_s * 1000),
                       .max_conns = R->o->concurrency + 16,
                       .done = on_done,
                       .data = on_data,
                       .ud = R};
    return bclient_new(&R->loop, &co, err, errlen);
}

int erun(const erun_opts *o, erun_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t n = o->suite->n_items;
    out->n = n * o->k;
    out->recs = xcalloc(out->n ? out->n : 1, sizeof *out->recs);
    for (size_t i = 0; i < out->n; i++) {
        erec *r = &out->recs[i];
        r->item = i / o->k;
        r->rep = (unsigned)(i % o->k);
        r->seed = o->seed + r->rep;
        r->n_in = r->n_out = -1;
        r->latency_ms = r->ttft_ms = NAN;
        r->state = SCORE_ERROR;
    }
    if (bclient_fd_budget(o->concurrency, err, errlen)) {
        erun_release(out);
        return -1;
    }
    runner R = {.o = o, .res = out, .total = out->n};
    if (uv_loop_init(&R.loop) < 0) {
        errf(err, errlen, "eval: uv_loop_init failed");
        erun_release(out);
        return -1;
    }
    R.model = client(&R, o->url, o->headers, err, errlen);
    if (R.model && o->judge_url) R.judge = client(&R, o->judge_url, o->judge_headers, err, errlen);
    if (!R.model || (o->judge_url && !R.judge)) {
        if (R.model) bclient_close(R.model);
        uv_run(&R.loop, UV_RUN_DEFAULT);
        bclient_free(R.model);
        uv_loop_close(&R.loop);
        erun_release(out);
        return -1;
    }
    bclient *m = R.model, *jc = R.judge;
    uv_timer_init(&R.loop, &R.tick);
    R.tick.data = &R;
    uv_timer_start(&R.tick, on_tick, 200, 200);
    double c0 = cpu_now();
    R.t0 = bclient_now_ns();
    start_next(&R);
    uv_run(&R.loop, UV_RUN_DEFAULT);
    out->wall_s = secs_since(R.t0);
    out->cpu_s = cpu_now() - c0;
    bclient_free(m);
    bclient_free(jc);
    uv_loop_close(&R.loop);
    return 0;
}

void erun_release(erun_result *r)
{
    for (size_t i = 0; i < r->n; i++) erec_release(&r->recs[i]);
    free(r->recs);
    memset(r, 0, sizeof *r);
}
