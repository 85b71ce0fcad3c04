/* fuzz_sse.c - libFuzzer target for the bench client's stream parsing:
 * the SSE parser (src/oai/sse.c) and the request classifier that eats
 * its payloads (src/oai/breq.c); replay_sse.c #includes it, so there is
 * one definition of a correct parse.
 *
 * Input: byte 0 is a control byte, the rest is the response body.
 *   bit 0      max_event 64 (the error path) instead of 1 MiB
 *   bits 1..7  seed of the random split points
 *
 * The body is parsed three times: in one piece, one byte at a time and in
 * random pieces, each piece a fresh allocation of exactly its bytes.  The
 * three logs (every event's type and data, every comment, the error and
 * sse_pending at the end) must be equal.  Each event: data NUL-terminated
 * at len, no CR in data, no CR or LF in the type.  Then every event of
 * the one-piece parse, except [DONE], goes to breq_on_data 1 ms apart and:
 *   - the token-bearing events are what breq_on_data said, in time order,
 *     each with k >= 1; t_first / t_last are the first / last of them and
 *     t_first_content, when set, lies between;
 *   - after breq_finish a 2xx request with no error has events, and n_out
 *     >= 1 is the server's count or the sum of k (out_estimated);
 *   - the metrics are NaN for a failed request; for a good one ttft and
 *     e2el are >= 0, tpot is NaN exactly when n_out < 2, chunk_tokens
 *     >= 1. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oai/breq.h"
#include "oai/sse.h"

static char fz_why[1024];

static const char *fz_broke(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fz_broke(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fz_why, sizeof fz_why, fmt, ap);
    va_end(ap);
    return fz_why;
}

typedef struct sse_run {
    buf log;         /* "E<type>\0<len>:<data>" / "C<len>:<text>" records */
    const char *bad; /* the first broken event rule, or NULL */
    int rc;
    bool pending;
    char err[128];
    /* the events, for breq (one-piece run only) */
    char **data;
    size_t *len, n, cap;
} sse_run;

static void fz_event(void *ud, const char *type, const char *data, size_t len)
{
    sse_run *r = ud;
    if (!r->bad && data[len]) r->bad = "data not NUL-terminated at len";
    if (!r->bad && memchr(data, '\r', len)) r->bad = "CR inside event data";
    if (!r->bad && strpbrk(type, "\r\n")) r->bad = "CR or LF inside the event type";
    buf_printf(&r->log, "E%s", type);
    buf_addc(&r->log, 0);
    buf_printf(&r->log, "%zu:", len);
    buf_add(&r->log, data, len);
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->data = realloc(r->data, r->cap * sizeof *r->data);
        r->len = realloc(r->len, r->cap * sizeof *r->len);
    }
    r->data[r->n] = malloc(len + 1);
    memcpy(r->data[r->n], data, len + 1);
    r->len[r->n++] = len;
}

static void fz_comment(void *ud, const char *text, size_t len)
{
    sse_run *r = ud;
    if (!r->bad && memchr(text, '\r', len)) r->bad = "CR inside a comment";
    buf_printf(&r->log, "C%zu:", len);
    buf_add(&r->log, text, len);
}

static void sse_run_release(sse_run *r)
{
    buf_release(&r->log);
    for (size_t i = 0; i < r->n; i++) free(r->data[i]);
    free(r->data);
    free(r->len);
    memset(r, 0, sizeof *r);
}

/* mode 0: one piece, 1: a byte at a time, 2: random pieces */
static void sse_run_parse(const char *body, size_t len, size_t max_event, int mode, uint32_t seed, sse_run *r)
{
    memset(r, 0, sizeof *r);
    buf_init(&r->log);
    sse_parser p;
    sse_init(&p, max_event, fz_event, fz_comment, r);
    size_t at = 0;
    while (at < len && r->rc == 0) {
        size_t step = len - at;
        if (mode == 1) step = 1;
        if (mode == 2) {
            seed = seed * 1103515245u + 12345u;
            step = 1 + (seed >> 16) % (step < 61 ? step : 61);
        }
        char *tmp = malloc(step);
        memcpy(tmp, body + at, step);
        r->rc = sse_feed(&p, tmp, step);
        free(tmp);
        at += step;
    }
    r->pending = sse_pending(&p);
    snprintf(r->err, sizeof r->err, "%s", sse_error(&p) ? sse_error(&p) : "");
    if (!r->bad && (r->rc < 0) != (sse_error(&p) != NULL)) r->bad = "sse_feed's -1 and sse_error disagree";
    if (!r->bad && p.n_events != r->n) r->bad = "n_events is not the number of events";
    sse_release(&p);
}

#define FZ_MS 1000000LL

static const char *breq_check(breq *r, const sse_run *s)
{
    breq_init(r);
    r->t_sched = 1 * FZ_MS;
    r->t_send = 2 * FZ_MS;
    r->status = 200;
    int64_t t = 3 * FZ_MS;
    size_t said = 0;
    for (size_t i = 0; i < s->n; i++, t += FZ_MS) {
        if (!strcmp(s->data[i], "[DONE]")) continue;
        size_t before = r->n_ev;
        bool bearing = breq_on_data(r, t, s->data[i], s->len[i]);
        if (bearing != (r->n_ev == before + 1) || r->n_ev > before + 1)
            return fz_broke("event %zu: breq_on_data said %d, events %zu -> %zu", i, bearing, before, r->n_ev);
        said += bearing;
    }
    breq_finish(r, t);
    if (said != r->n_ev) return fz_broke("%zu bearing events, %zu recorded", said, r->n_ev);
    for (size_t i = 0; i < r->n_ev; i++) {
        if (r->ev[i].k < 1) return fz_broke("event %zu: k %d", i, (int)r->ev[i].k);
        if (i && r->ev[i].t_ns < r->ev[i - 1].t_ns) return fz_broke("event %zu out of order", i);
    }
    if (r->n_ev) {
        if (r->t_first != r->ev[0].t_ns || r->t_last != r->ev[r->n_ev - 1].t_ns)
            return fz_broke("t_first/t_last are not the first/last events");
        if (r->t_first_content && (r->t_first_content < r->t_first || r->t_first_content > r->t_last))
            return fz_broke("t_first_content outside [t_first, t_last]");
    } else if (r->t_first || r->t_last || r->t_first_content) {
        return fz_broke("timestamps without events");
    }
    if (!r->error && !r->n_ev) return fz_broke("a request without tokens succeeded");
    if (r->n_ev && r->n_out < 0) return fz_broke("events but no n_out");
    if (r->out_estimated) {
        long sum = 0;
        for (size_t i = 0; i < r->n_ev; i++) sum += r->ev[i].k;
        if (sum != r->n_out) return fz_broke("estimated n_out %ld, sum of k %ld", r->n_out, sum);
    }
    if (strlen(r->finish_reason) >= sizeof r->finish_reason || strlen(r->id) >= sizeof r->id)
        return fz_broke("unterminated finish_reason or id");
    breq_m m;
    breq_metrics(r, &m);
    if (!breq_ok(r)) {
        if (!isnan(m.ttft_ms) || !isnan(m.e2el_ms) || !isnan(m.tpot_ms) || !isnan(m.chunk_tokens))
            return fz_broke("metrics of a failed request are not NaN");
    } else {
        if (!(m.ttft_ms >= 0) || !(m.e2el_ms >= m.ttft_ms)) return fz_broke("ttft %g e2el %g", m.ttft_ms, m.e2el_ms);
        if (isnan(m.tpot_ms) != (r->n_out < 2)) return fz_broke("tpot %g with n_out %ld", m.tpot_ms, r->n_out);
        if (!(m.chunk_tokens >= 1)) return fz_broke("chunk_tokens %g", m.chunk_tokens);
        if (!(m.queue_client_ms == 1)) return fz_broke("queue_client %g", m.queue_client_ms);
    }
    return NULL;
}

/* the last input's runs and request (replay_sse.c reads them) */
static sse_run runs[3];
static breq fz_req;

/* NULL when the input passes every check. */
static const char *sse_check_input(const uint8_t *data, size_t size)
{
    for (int i = 0; i < 3; i++) sse_run_release(&runs[i]);
    breq_release(&fz_req);
    breq_init(&fz_req);
    if (!size) return NULL;
    int flags = data[0];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    size_t max_event = (flags & 1) ? 64 : 1 << 20;
    static const char *names[3] = {"one piece", "byte at a time", "random pieces"};
    for (int mode = 0; mode < 3; mode++) {
        sse_run *r = &runs[mode];
        sse_run_parse(body, len, max_event, mode, (uint32_t)(flags >> 1) * 2654435761u, r);
        if (r->bad) return fz_broke("%s: %s", names[mode], r->bad);
        if (!mode) continue;
        const sse_run *a = &runs[0];
        if (a->rc != r->rc || strcmp(a->err, r->err))
            return fz_broke("%s: error '%s' vs one piece '%s'", names[mode], r->err, a->err);
        if (a->pending != r->pending) return fz_broke("%s: pending %d vs %d", names[mode], r->pending, a->pending);
        /* the bound trips in the same line however the bytes came */
        if (a->log.len != r->log.len || memcmp(a->log.p, r->log.p, a->log.len))
            return fz_broke("%s: events differ from one piece", names[mode]);
    }
    return breq_check(&fz_req, &runs[0]);
}

#ifndef FUZZ_SSE_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *err = sse_check_input(data, size);
    if (err) {
        fprintf(stderr, "fuzz_sse: %s\n", err);
        abort();
    }
    return 0;
}
#endif
