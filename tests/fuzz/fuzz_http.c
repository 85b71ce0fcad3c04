/* fuzz_http.c - libFuzzer target for the HTTP/1.1 parser, and the feeding
 * harness that the unit test (test_http.c) and the corpus replay
 * (replay_http.c) #include, so there is one definition of a correct parse.
 *
 * Input: byte 0 is a control byte, the rest is the stream.
 *   bit 0  responses (else requests)
 *   bit 1  every response answers a HEAD request (http_parser_skip_body)
 *   bit 2  tiny limits (head 64, fields 4, target 16, body 64), which puts
 *          every limit within a fuzzer's reach
 *   bits 3..7  seed of the random split points
 *
 * The stream is parsed three times: in one piece, one byte at a time, and
 * in random pieces.  Each run is reduced to a canonical log (heads, body
 * bytes coalesced, DONE, the error code and offset, what EOF said); the
 * three logs must be equal.  Every call gets a fresh allocation of exactly
 * the bytes offered, so a read past them is an ASan report; every view the
 * parser returns must lie inside that allocation, and a reported head must
 * satisfy the rules the parser claims (token names, no control bytes in
 * values, no OWS at the value's ends, body length = Content-Length). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"

#define FUZZ_F_RESPONSE 1
#define FUZZ_F_HEAD 2
#define FUZZ_F_TINY 4

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

static void fz_limits(int flags, http_limits *lim)
{
    if (flags & FUZZ_F_TINY)
        *lim = (http_limits){.max_head = 64, .max_fields = 4, .max_target = 16, .max_body = 64};
    else
        *lim = (http_limits){.max_head = 8192, .max_fields = 64, .max_target = 2048,
                             .max_body = 1 << 20};
}

static bool fz_inside(view v, const char *p, size_t n)
{
    if (v.len == 0) return true;
    return v.p >= p && v.p <= p + n && v.len <= (size_t)(p + n - v.p);
}

static bool fz_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void fz_add_view(buf *log, view v)
{
    buf_printf(log, "%zu:", v.len);
    buf_add(log, v.p, v.len);
}

/* A head into the log, after checking it against the rules. */
static const char *fz_head(const http_parser *p, const char *d, size_t n, buf *log)
{
    const http_msg *m = &p->msg;
    if (m->head_len == 0 || m->head_len > n) return fz_broke("head_len %zu of %zu", m->head_len, n);
    if (p->kind == HTTP_KIND_REQUEST) {
        if (!fz_inside(m->method, d, n) || !fz_inside(m->target, d, n) || !m->method.len ||
            !m->target.len)
            return fz_broke("method or target outside the buffer or empty");
        for (size_t i = 0; i < m->method.len; i++)
            if (!fz_tchar((unsigned char)m->method.p[i])) return fz_broke("method byte %zu", i);
        for (size_t i = 0; i < m->target.len; i++)
            if ((unsigned char)m->target.p[i] < 0x21 || (unsigned char)m->target.p[i] > 0x7e)
                return fz_broke("target byte %zu", i);
        buf_adds(log, "REQ ");
        fz_add_view(log, m->method);
        buf_adds(log, " ");
        fz_add_view(log, m->target);
    } else {
        if (!fz_inside(m->reason, d, n)) return fz_broke("reason outside the buffer");
        if (m->status < 100 || m->status > 599) return fz_broke("status %d", m->status);
        buf_printf(log, "RES %d ", m->status);
        fz_add_view(log, m->reason);
    }
    if (m->minor != 0 && m->minor != 1) return fz_broke("minor %d", m->minor);
    buf_printf(log, " 1.%d framing=%d cl=%llu ka=%d\n", m->minor, (int)m->framing,
               (unsigned long long)m->content_length, m->keep_alive);
    if (m->n_fields > p->lim.max_fields) return fz_broke("%zu fields", m->n_fields);
    for (size_t i = 0; i < m->n_fields; i++) {
        view nm = m->fields[i].name, v = m->fields[i].value;
        if (!fz_inside(nm, d, m->head_len) || !fz_inside(v, d, m->head_len) || !nm.len)
            return fz_broke("field %zu outside the head or empty", i);
        for (size_t k = 0; k < nm.len; k++)
            if (!fz_tchar((unsigned char)nm.p[k])) return fz_broke("field %zu name byte %zu", i, k);
        for (size_t k = 0; k < v.len; k++) {
            unsigned char c = (unsigned char)v.p[k];
            if ((c < 0x20 && c != '\t') || c == 0x7f) return fz_broke("field %zu value byte %zu", i, k);
        }
        if (v.len && (v.p[0] == ' ' || v.p[0] == '\t' || v.p[v.len - 1] == ' ' || v.p[v.len - 1] == '\t'))
            return fz_broke("field %zu value not trimmed", i);
        buf_adds(log, "  ");
        fz_add_view(log, nm);
        buf_adds(log, " ");
        fz_add_view(log, v);
        buf_adds(log, "\n");
    }
    return NULL;
}

/* Everything a feed learns, in order. */
typedef struct fz_run {
    buf log;
    buf body;            /* body bytes since the last head, coalesced */
    uint64_t body_total; /* of the current message */
    http_framing framing;
    uint64_t content_length;
    int done, accepted;  /* messages completed; no error up to and after EOF */
} fz_run;

static void fz_flush_body(fz_run *r)
{
    if (r->body.len) {
        buf_printf(&r->log, "BODY %zu:", r->body.len);
        buf_add(&r->log, r->body.p, r->body.len);
        buf_adds(&r->log, "\n");
        buf_clear(&r->body);
    }
}

static const char *fz_event(fz_run *r, const http_parser *p, http_event ev, const char *d, size_t n,
                            view body)
{
    const char *e;
    switch (ev) {
    case HTTP_EV_NEED_MORE: break;
    case HTTP_EV_HEAD:
        fz_flush_body(r);
        if ((e = fz_head(p, d, n, &r->log))) return e;
        r->body_total = 0;
        r->framing = p->msg.framing;
        r->content_length = p->msg.content_length;
        break;
    case HTTP_EV_BODY:
        if (!body.len || !fz_inside(body, d, n)) return fz_broke("body view empty or outside the buffer");
        buf_add(&r->body, body.p, body.len);
        r->body_total += body.len;
        if (r->framing == HTTP_FRAME_NONE) return fz_broke("body on a message without one");
        if (r->framing == HTTP_FRAME_LENGTH && r->body_total > r->content_length)
            return fz_broke("body longer than content-length");
        if (r->body_total > p->lim.max_body) return fz_broke("body over the limit");
        break;
    case HTTP_EV_DONE:
        fz_flush_body(r);
        if (r->framing == HTTP_FRAME_LENGTH && r->body_total != r->content_length)
            return fz_broke("body %llu, content-length %llu", (unsigned long long)r->body_total,
                            (unsigned long long)r->content_length);
        buf_adds(&r->log, "DONE\n");
        r->done++;
        break;
    case HTTP_EV_ERROR:
        fz_flush_body(r);
        if (p->err.code == HTTP_E_NONE || !p->err.msg || !p->err.msg[0])
            return fz_broke("error without a code or message");
        buf_printf(&r->log, "ERROR %d @%llu %s\n", (int)p->err.code,
                   (unsigned long long)p->err.offset, p->err.msg);
        break;
    }
    return NULL;
}

/* Feed stream[0..len) in pieces: piece(i) gives the size of the next one
 * (0 = all).  The parser sees a fresh exact-size copy of the unconsumed
 * bytes at each call. */
static const char *fz_feed(const char *stream, size_t len, int flags, int mode, uint32_t seed,
                           fz_run *r)
{
    http_limits lim;
    fz_limits(flags, &lim);
    http_parser p;
    http_parser_init(&p, (flags & FUZZ_F_RESPONSE) ? HTTP_KIND_RESPONSE : HTTP_KIND_REQUEST, &lim);
    if (flags & FUZZ_F_HEAD) http_parser_skip_body(&p);
    buf_init(&r->log);
    buf_init(&r->body);
    r->done = r->accepted = 0;
    r->framing = HTTP_FRAME_NONE;
    size_t start = 0, have = 0; /* unconsumed: stream[start..have) */
    const char *err = NULL;
    bool failed = false;
    uint64_t consumed = 0;
    while (!err && !failed && have < len) {
        size_t step = len - have;
        if (mode == 1) step = 1;
        if (mode == 2) {
            seed = seed * 1103515245u + 12345u;
            step = 1 + (seed >> 16) % (step < 97 ? step : 97);
        }
        have += step;
        for (;;) {
            size_t n = have - start, used = 0;
            char *tmp = malloc(n ? n : 1);
            memcpy(tmp, stream + start, n);
            view body;
            http_event ev = http_parse(&p, tmp, n, &used, &body);
            if (used > n) err = fz_broke("used %zu of %zu", used, n);
            if (!err) err = fz_event(r, &p, ev, tmp, n, body);
            free(tmp);
            start += used;
            consumed += used;
            if (!err && ev != HTTP_EV_ERROR && p.pos != consumed)
                err = fz_broke("pos %llu, consumed %llu", (unsigned long long)p.pos,
                               (unsigned long long)consumed);
            if (err) break;
            if (ev == HTTP_EV_ERROR) {
                if (p.err.offset > len)
                    err = fz_broke("error offset %llu past %zu", (unsigned long long)p.err.offset, len);
                failed = true;
                break;
            }
            if (ev == HTTP_EV_DONE && (flags & FUZZ_F_HEAD)) http_parser_skip_body(&p);
            if (ev == HTTP_EV_NEED_MORE) break;
        }
    }
    if (!err && !failed) {
        http_event ev = http_parse_eof(&p);
        fz_flush_body(r);
        buf_printf(&r->log, "EOF %d\n", (int)ev);
        err = fz_event(r, &p, ev, NULL, 0, (view){NULL, 0});
        r->accepted = ev != HTTP_EV_ERROR;
    }
    buf_release(&r->body);
    http_parser_release(&p);
    return err;
}

/* NULL when the input satisfies every check; *accepted: the stream parsed
 * without an error, EOF included. */
static const char *http_check_input(const uint8_t *data, size_t size, int *accepted)
{
    if (accepted) *accepted = 0;
    if (!size) return NULL;
    int flags = data[0];
    const char *s = (const char *)data + 1;
    size_t len = size - 1;
    fz_run runs[3];
    const char *err = NULL;
    static const char *names[3] = {"one piece", "byte at a time", "random pieces"};
    int nr = 0;
    for (int mode = 0; mode < 3 && !err; mode++, nr++)
        if ((err = fz_feed(s, len, flags, mode, (uint32_t)(flags >> 3) * 2654435761u, &runs[mode]))) {
            char what[sizeof fz_why];
            snprintf(what, sizeof what, "%s", err);
            err = fz_broke("%s: %s", names[mode], what);
        }
    for (int mode = 1; mode < nr && !err; mode++)
        if (runs[mode].log.len != runs[0].log.len || memcmp(runs[mode].log.p, runs[0].log.p, runs[0].log.len))
            err = fz_broke("%s differs from one piece:\n--- one piece\n%.200s\n--- %s\n%.200s", names[mode],
                           runs[0].log.p, names[mode], runs[mode].log.p);
    if (!err && accepted) *accepted = runs[0].accepted;
    for (int i = 0; i < nr; i++) buf_release(&runs[i].log);
    return err;
}

#ifndef FUZZ_HTTP_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *err = http_check_input(data, size, NULL);
    if (err) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        abort();
    }
    return 0;
}
#endif
