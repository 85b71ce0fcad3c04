/* server.c - HTTP/1.1 connections on libuv around the pull parser of
 * http.c: accept (peer credentials, allow callback, connection cap), a
 * growing read buffer offered to http_parse from its first unconsumed
 * byte, the body buffered up to max_body, one request dispatched at a
 * time, responses (whole or chunked), keep-alive, and three timeouts on one
 * uv_timer per connection.
 *
 * Design decisions:
 *   - One request in flight per connection.  After a request is complete
 *     the parser is not called again until its response has ended, so
 *     pipelined requests wait in the read buffer and are answered in
 *     order.  Reading continues meanwhile (to see the peer go) but stops
 *     when the unparsed backlog passes a bound.
 *   - At HEAD the head bytes are copied once (at most max_head) into a
 *     per-connection buffer and the views re-pointed there, so the read
 *     buffer can be compacted and reallocated freely while the body is
 *     read; the handler gets views into that copy and into the body buf.
 *   - A response the server answers itself (an error) is followed by
 *     shutdown(SHUT_WR) and a short linger that reads and discards: closing
 *     with unread request bytes would send a RST that can destroy the 413
 *     before the client reads it.
 *   - A connection is freed when both its handles (stream, timer) have
 *     closed and the handler owes it nothing; a handler that answers after
 *     the peer has gone frees it in srv_end/srv_respond. */
#include "net/server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_CHUNK (16 * 1024)
#define LINGER_MS 1000
/* unparsed bytes held while a request is being answered (pipelining) */
#define BACKLOG_EXTRA (64 * 1024)

typedef struct srv_listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_pipe_t pipe;
        uv_tcp_t tcp;
    } h;
    srv *s;
    char *path; /* Unix: unlinked at close */
    bool is_unix;
    struct srv_listener *next;
} srv_listener;

struct srv {
    uv_loop_t *loop;
    srv_opts o;
    srv_listener *listeners;
    size_t n_listeners; /* not yet closed */
    srv_conn *conns;    /* every connection not yet freed */
    size_t n_conns;
    int tcp_port;
    bool closing;
    void (*close_cb)(void *ud);
    void *close_ud;
};

enum phase {
    PH_HEAD,     /* waiting for (the rest of) a head; no bytes: idle */
    PH_BODY,     /* head in, reading the body */
    PH_HANDLING, /* the handler owes a response */
    PH_FINAL,    /* last response queued, shutdown pending */
    PH_LINGER,   /* write side shut; discarding until EOF or LINGER_MS */
};

enum timer_kind { T_NONE, T_HEADER, T_BODY, T_IDLE, T_LINGER };

struct srv_conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_pipe_t pipe;
        uv_tcp_t tcp;
    } h;
    uv_timer_t timer;
    uv_shutdown_t shut;
    srv *s;
    srv_conn *prev, *next;
    srv_peer peer;
    http_parser p;

    char *rb; /* read buffer: [roff, rlen) not yet consumed by the parser */
    size_t roff, rlen, rcap;

    char *head;          /* copy of the current request's head */
    http_field *fields;  /* views into head */
    http_msg msg;        /* the current request, views into head */
    buf body;
    size_t n_requests;   /* on this connection, the current one included */

    enum phase phase;
    enum timer_kind tk;
    int handles_open; /* stream + timer until their close callbacks */
    bool closed;      /* uv_close called */
    bool owed;        /* the handler owes a response */
    bool keep_alive;  /* for the current response */
    bool is_head;     /* the current request is HEAD: no body goes out */
    bool streaming;   /* srv_respond_start was called */
    bool chunked;     /* the streamed response is chunked */
    bool reading;
    bool peer_eof;
    bool in_process;
    /* streaming requests (on_head answered SRV_STREAM) */
    bool stream_req;  /* the current request's body goes to on_body */
    bool body_paused; /* srv_pause_body: not reading */
    bool discard;     /* the response has ended before the body: drop the rest */
    bool req_dead;    /* the request failed (server's error sent, or killed) */
    bool aborted;     /* on_abort was called for the current request */
    bool congested;   /* queued output passed write_high */
    bool nobody;      /* the streamed response has no body (HEAD, 204, 304) */
    int64_t body_left; /* srv_respond_head with a length: bytes still owed; else -1 */
    int fail_status;   /* the error status the server answered the current request with, or 0 */
    size_t fail_bytes; /* the body of that answer */
    uint64_t body_deadline; /* uv_now when the body deadline passes (T_BODY) */
    uint64_t body_rest;     /* ms of it left while the body is paused */
    void *ud;         /* srv_conn_set_ud */
};

static void conn_process(srv_conn *c);
static void conn_kill(srv_conn *c);
static void on_timer(uv_timer_t *t);

/* ---- helpers ---- */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

/* the error codes of INTERFACES.md, plus the transport-level ones */
static const char *error_code(int status)
{
    switch (status) {
    case 403: return "forbidden";
    case 408: return "timeout";
    case 413: return "too_large";
    case 414: return "too_large";
    case 431: return "too_large";
    case 501: return "not_implemented";
    case 503: return "unavailable";
    case 505: return "bad_version";
    default: return "bad_request";
    }
}

static void timer_arm(srv_conn *c, enum timer_kind k, int64_t ms)
{
    if (c->closed) return;
    c->tk = k;
    uv_timer_stop(&c->timer);
    if (k != T_NONE) uv_timer_start(&c->timer, on_timer, (uint64_t)(ms > 0 ? ms : 1), 0);
}

/* SO_PEERGROUPS: the peer's supplementary groups as they were at
 * connect (Linux 4.13+).  ERANGE tells the size needed. */
static void peer_groups(int fd, srv_peer *p)
{
#ifdef SO_PEERGROUPS
    socklen_t len = 64 * sizeof(gid_t);
    for (int tries = 0; tries < 3; tries++) {
        gid_t *g = xcalloc(1, len ? len : sizeof(gid_t));
        socklen_t got = len;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &got) == 0) {
            p->groups = g;
            p->ngroups = got / sizeof(gid_t);
            p->groups_known = true;
            return;
        }
        free(g);
        if (errno != ERANGE || got <= len) return;
        len = got;
    }
#else
    (void)fd;
    (void)p;
#endif
}

static void conn_free(srv_conn *c)
{
    srv *s = c->s;
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->n_conns--;
    http_parser_release(&c->p);
    free(c->rb);
    free(c->head);
    free(c->fields);
    buf_release(&c->body);
    free(c->peer.groups);
    free(c);
    if (s->closing && s->n_conns == 0 && s->n_listeners == 0) {
        void (*cb)(void *) = s->close_cb;
        void *ud = s->close_ud;
        free(s);
        if (cb) cb(ud);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    srv_conn *c = h->data;
    if (--c->handles_open == 0 && !c->owed) conn_free(c);
}

/* The handler learns that the request it owes is dead (once). */
static void fire_abort(srv_conn *c)
{
    if (!c->owed || c->aborted) return;
    c->aborted = true;
    if (c->s->o.on_abort) c->s->o.on_abort(c, c->s->o.ud);
}

static void conn_kill(srv_conn *c)
{
    if (c->closed) return;
    c->closed = true;
    uv_close(&c->h.handle, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
    fire_abort(c);
}

typedef struct wreq {
    uv_write_t req;
    buf b;
} wreq;

static void on_written(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    srv_conn *c = req->data;
    buf_release(&w->b);
    free(w);
    if (status < 0) {
        conn_kill(c);
        return;
    }
    if (c->congested && !c->closed &&
        uv_stream_get_write_queue_size(&c->h.stream) <= c->s->o.write_low) {
        c->congested = false;
        if (c->s->o.on_drain && c->owed) c->s->o.on_drain(c, c->s->o.ud);
    }
}

/* Write bufs: straight to the socket when nothing is queued (the common
 * case: no copy, one writev), the rest copied and queued.  keep, when not
 * NULL, is a buf holding exactly the bytes of bufs that may be taken
 * instead of copied (it is reset). */
static void conn_writev(srv_conn *c, uv_buf_t *bufs, unsigned n, buf *keep)
{
    size_t total = 0, done = 0;
    for (unsigned i = 0; i < n; i++) total += bufs[i].len;
    if (c->closed || total == 0) {
        if (keep) buf_release(keep);
        return;
    }
    if (uv_stream_get_write_queue_size(&c->h.stream) == 0) {
        /* an error here (EPIPE) is left to uv_write below, which reports
         * it from its callback: on_abort must never run from inside a
         * srv_write the handler is making */
        int r = uv_try_write(&c->h.stream, bufs, n);
        if (r >= 0) done = (size_t)r;
    }
    if (done == total) {
        if (keep) buf_release(keep);
        return;
    }
    wreq *w = xmalloc(sizeof *w);
    if (keep && done == 0) {
        w->b = *keep;
        buf_init(keep);
    } else {
        buf_init(&w->b);
        buf_grow(&w->b, total - done);
        size_t skip = done;
        for (unsigned i = 0; i < n; i++) {
            if (skip >= bufs[i].len) {
                skip -= bufs[i].len;
                continue;
            }
            buf_add(&w->b, bufs[i].base + skip, bufs[i].len - skip);
            skip = 0;
        }
        if (keep) buf_release(keep); /* only now: bufs may point into it */
    }
    w->req.data = c;
    uv_buf_t ub = uv_buf_init(w->b.p, (unsigned)w->b.len);
    if (uv_write(&w->req, &c->h.stream, &ub, 1, on_written) < 0) {
        buf_release(&w->b);
        free(w);
        conn_kill(c);
        return;
    }
    if (!c->congested && uv_stream_get_write_queue_size(&c->h.stream) > c->s->o.write_high)
        c->congested = true;
}

/* Queue b's bytes; takes them (b is reset). */
static void conn_write(srv_conn *c, buf *b)
{
    uv_buf_t ub = uv_buf_init(b->p, (unsigned)b->len);
    conn_writev(c, &ub, 1, b);
}

static void read_start(srv_conn *c);

static void on_shutdown(uv_shutdown_t *req, int status)
{
    srv_conn *c = req->data;
    if (c->closed) return;
    if (status < 0 || c->peer_eof) {
        conn_kill(c);
        return;
    }
    c->phase = PH_LINGER;
    timer_arm(c, T_LINGER, LINGER_MS);
    read_start(c);
}

/* The last response is queued: shut the write side once it is out. */
static void conn_final(srv_conn *c)
{
    if (c->closed) return;
    c->phase = PH_FINAL;
    timer_arm(c, T_NONE, 0);
    c->shut.data = c;
    if (uv_shutdown(&c->shut, &c->h.stream, on_shutdown) < 0) conn_kill(c);
}

/* An answer of the server's own (never while the handler owes one). */
static void send_error(srv_conn *c, int status, const char *msg)
{
    buf b = BUF_INIT;
    buf body = BUF_INIT;
    buf_printf(&body, "{\"error\":{\"code\":\"%s\",\"message\":", error_code(status));
    buf_json_str(&body, msg);
    buf_adds(&body, "}}\n");
    buf_printf(&b,
               "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
               "Connection: close\r\n\r\n",
               status, reason_phrase(status), body.len);
    buf_add(&b, body.p, body.len);
    c->fail_bytes = body.len;
    buf_release(&body);
    c->keep_alive = false;
    conn_write(c, &b);
    conn_final(c);
}

/* The current request fails on the server's side (a parse error or the
 * body deadline in the middle of a streamed body).  Without a handler
 * involved it is an ordinary error answer; a handler that owes the
 * response gets on_abort, and the client the error when no response has
 * started (else just a close).  The handler's srv_end then only frees. */
static void req_fail(srv_conn *c, int status, const char *msg)
{
    if (!c->owed) {
        send_error(c, status, msg);
        return;
    }
    c->req_dead = true;
    if (c->streaming) {
        conn_kill(c);
    } else {
        c->fail_status = status;
        send_error(c, status, msg);
    }
    fire_abort(c);
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    srv_conn *c = h->data;
    (void)suggested;
    if (c->roff > 0 && c->roff == c->rlen) c->roff = c->rlen = 0;
    if (c->rcap - c->rlen < READ_CHUNK) {
        if (c->roff > 0) { /* compact: nothing points into rb between calls */
            memmove(c->rb, c->rb + c->roff, c->rlen - c->roff);
            c->rlen -= c->roff;
            c->roff = 0;
        }
        if (c->rcap - c->rlen < READ_CHUNK) {
            c->rcap = c->rlen + READ_CHUNK > c->rcap * 2 ? c->rlen + READ_CHUNK : c->rcap * 2;
            c->rb = xrealloc(c->rb, c->rcap);
        }
    }
    *out = uv_buf_init(c->rb + c->rlen, (unsigned)(c->rcap - c->rlen));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    srv_conn *c = st->data;
    (void)b;
    if (c->closed) return;
    if (n == 0) return;
    if (n < 0) {
        if (n != UV_EOF || c->phase == PH_LINGER) {
            conn_kill(c);
            return;
        }
        /* a half-close: requests already in still get their answers, and
         * a queued final response still goes out (on_shutdown closes) */
        c->peer_eof = true;
        uv_read_stop(st);
        c->reading = false;
        if (c->phase == PH_HEAD || c->phase == PH_BODY) conn_process(c);
        else if (c->phase == PH_HANDLING && c->stream_req && c->owed) conn_kill(c); /* gone */
        return;
    }
    if (c->phase == PH_FINAL || c->phase == PH_LINGER) {
        c->roff = c->rlen = 0; /* discard */
        return;
    }
    c->rlen += (size_t)n;
    if (c->phase == PH_HANDLING) {
        if (c->rlen - c->roff > c->s->o.limits.max_head + BACKLOG_EXTRA) {
            uv_read_stop(st);
            c->reading = false;
        }
        return;
    }
    conn_process(c);
}

static void read_start(srv_conn *c)
{
    if (c->closed || c->reading || c->peer_eof) return;
    if (uv_read_start(&c->h.stream, on_alloc, on_read) < 0) {
        conn_kill(c);
        return;
    }
    c->reading = true;
}

/* Copy the head (it starts at data[0]) and re-point the views into the
 * copy, so rb may move while the body is read. */
static void take_head(srv_conn *c, const char *data)
{
    const http_msg *m = &c->p.msg;
    size_t n = m->head_len;
    c->head = xrealloc(c->head, n ? n : 1);
    memcpy(c->head, data, n);
#define REPOINT(v)                                                                  \
    do {                                                                            \
        if ((v).p >= data && (v).p <= data + n) (v).p = c->head + ((v).p - data); \
        else (v).p = c->head;                                                      \
    } while (0)
    c->msg = *m;
    c->msg.fields = c->fields;
    for (size_t i = 0; i < m->n_fields; i++) {
        c->fields[i] = m->fields[i];
        REPOINT(c->fields[i].name);
        REPOINT(c->fields[i].value);
    }
    REPOINT(c->msg.method);
    REPOINT(c->msg.target);
    REPOINT(c->msg.reason);
#undef REPOINT
}

/* The handler owes a response from now on. */
static void req_begin(srv_conn *c)
{
    c->owed = true;
    c->streaming = c->chunked = c->nobody = false;
    c->body_left = -1;
    c->req_dead = c->aborted = false;
    c->fail_status = 0;
    c->fail_bytes = 0;
    c->keep_alive = c->msg.keep_alive && !c->s->closing;
    c->is_head = view_ieq(c->msg.method, "HEAD");
    c->n_requests++;
}

static void conn_dispatch(srv_conn *c)
{
    srv *s = c->s;
    c->phase = PH_HANDLING;
    timer_arm(c, T_NONE, 0);
    req_begin(c);
    view body = {c->body.p, c->body.len};
    s->o.on_request(c, &c->msg, &body, s->o.ud);
}

/* A head is in: ask on_head whether its body streams. */
static void head_mode(srv_conn *c)
{
    srv *s = c->s;
    c->stream_req = c->discard = c->body_paused = false;
    if (!s->o.on_head) return;
    req_begin(c);
    c->stream_req = true;
    if (s->o.on_head(c, &c->msg, s->o.ud) == SRV_STREAM) return;
    if (c->owed && !c->streaming) { /* buffered after all: undo */
        c->owed = false;
        c->stream_req = false;
        c->n_requests--;
    }
}

static void conn_process(srv_conn *c)
{
    if (c->in_process) return;
    c->in_process = true;
    while (!c->closed && (c->phase == PH_HEAD || (c->phase == PH_BODY && !c->body_paused))) {
        size_t used = 0;
        view body = {0};
        const char *data = c->rb + c->roff;
        size_t avail = c->rlen - c->roff;
        http_event ev = http_parse(&c->p, data, avail, &used, &body);
        c->roff += used;
        if (ev == HTTP_EV_NEED_MORE) {
            if (c->peer_eof) {
                /* a clean close between requests, or a truncated one */
                if (c->phase == PH_HEAD && avail == 0) conn_final(c);
                else conn_kill(c);
                break;
            }
            /* idle between requests: the keep-alive timer; the first byte
             * of a head starts the header timer (once per head; the first
             * request's runs from accept) */
            if (c->phase == PH_HEAD) {
                if (avail == 0 && c->tk == T_NONE)
                    timer_arm(c, T_IDLE, c->s->o.idle_timeout_ms);
                else if (avail > 0 && (c->tk == T_IDLE || c->tk == T_NONE))
                    timer_arm(c, T_HEADER, c->s->o.header_timeout_ms);
            }
            read_start(c);
            break;
        }
        if (ev == HTTP_EV_ERROR) {
            req_fail(c, http_error_status(c->p.err.code), c->p.err.msg);
            break;
        }
        if (ev == HTTP_EV_HEAD) {
            take_head(c, data);
            buf_clear(&c->body);
            c->phase = PH_BODY;
            if (c->msg.framing != HTTP_FRAME_NONE) {
                timer_arm(c, T_BODY, c->s->o.body_timeout_ms);
                c->body_deadline = uv_now(c->s->loop) + (uint64_t)c->s->o.body_timeout_ms;
                const view *ex = http_msg_field(&c->msg, "expect", 0);
                if (ex && c->msg.minor == 1 && view_ieq(*ex, "100-continue")) {
                    buf b = BUF_INIT;
                    buf_adds(&b, "HTTP/1.1 100 Continue\r\n\r\n");
                    conn_write(c, &b);
                }
            }
            head_mode(c); /* may answer at once */
        } else if (ev == HTTP_EV_BODY) {
            if (!c->stream_req) buf_add(&c->body, body.p, body.len);
            else if (!c->discard && c->owed && !c->req_dead)
                c->s->o.on_body(c, &body, false, c->s->o.ud);
        } else if (ev == HTTP_EV_DONE) {
            if (!c->stream_req) {
                conn_dispatch(c); /* may answer at once: the loop goes on */
            } else if (c->discard || !c->owed) {
                /* answered before the body ended: the next request */
                c->stream_req = c->discard = false;
                c->phase = PH_HEAD;
                timer_arm(c, T_NONE, 0);
            } else {
                c->phase = PH_HANDLING;
                timer_arm(c, T_NONE, 0);
                view none = {c->rb + c->roff, 0};
                c->s->o.on_body(c, &none, true, c->s->o.ud); /* may answer at once */
            }
        }
    }
    c->in_process = false;
}

/* ---- responses ---- */

static void head_begin(srv_conn *c, buf *b, int status, const char *ctype)
{
    buf_printf(b, "HTTP/1.1 %d %s\r\n", status, reason_phrase(status));
    if (ctype) buf_printf(b, "Content-Type: %s\r\n", ctype);
    if (!c->keep_alive) buf_adds(b, "Connection: close\r\n");
    else if (c->msg.minor == 0) buf_adds(b, "Connection: keep-alive\r\n");
}

/* The handler has finished; go on with the connection. */
static void response_done(srv_conn *c)
{
    c->owed = false;
    c->streaming = false;
    buf_clear(&c->body);
    if (c->closed) {
        if (c->handles_open == 0) conn_free(c);
        return;
    }
    if (c->req_dead) return; /* the server's error answer is on its way out */
    if (!c->keep_alive) {
        conn_final(c);
        return;
    }
    if (c->phase == PH_BODY) { /* a streamed body still arriving: drop the rest */
        c->discard = true;
        c->body_paused = false;
        if (c->tk == T_NONE) timer_arm(c, T_BODY, c->s->o.body_timeout_ms);
        if (!c->in_process) conn_process(c);
        return;
    }
    c->stream_req = false;
    c->phase = PH_HEAD;
    c->tk = T_NONE;
    if (c->in_process) return; /* conn_process's loop picks up the buffered rest */
    conn_process(c);
}

int srv_respond(srv_conn *c, int status, const char *ctype, const void *body, size_t len)
{
    if (!c->owed || c->streaming) return -1;
    if (c->closed || c->req_dead) {
        response_done(c);
        return -1;
    }
    bool nobody = status == 204 || status == 304 || (status >= 100 && status < 200);
    buf b = BUF_INIT;
    head_begin(c, &b, status, ctype);
    if (!nobody) buf_printf(&b, "Content-Length: %zu\r\n", len);
    buf_adds(&b, "\r\n");
    if (!nobody && !c->is_head && len) buf_add(&b, body, len);
    conn_write(c, &b);
    response_done(c);
    return 0;
}

int srv_respond_start(srv_conn *c, int status, const char *ctype)
{
    if (!c->owed || c->streaming) return -1;
    c->streaming = true;
    if (c->closed || c->req_dead) return -1;
    /* HTTP/1.0 has no chunked coding: the body ends when we close */
    if (c->msg.minor == 0) c->keep_alive = false;
    c->chunked = c->msg.minor == 1;
    buf b = BUF_INIT;
    head_begin(c, &b, status, ctype);
    if (c->chunked) buf_adds(&b, "Transfer-Encoding: chunked\r\n");
    buf_adds(&b, "\r\n");
    conn_write(c, &b);
    return 0;
}

static bool is_own_field(view name, const view *tokens, size_t nt)
{
    static const char *const own[] = {"connection", "keep-alive", "transfer-encoding",
                                      "content-length", "trailer", "te", "upgrade"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (view_ieq(name, own[i])) return true;
    if (name.len >= 6 && strncasecmp(name.p, "proxy-", 6) == 0) return true;
    for (size_t i = 0; i < nt; i++)
        if (name.len == tokens[i].len && strncasecmp(name.p, tokens[i].p, name.len) == 0) return true;
    return false;
}

int srv_respond_head(srv_conn *c, int status, const http_field *fields, size_t n_fields,
                     int64_t content_length)
{
    if (!c->owed || c->streaming) return -1;
    c->streaming = true;
    if (c->closed || c->req_dead) return -1;
    c->nobody = c->is_head || status == 204 || status == 304 || status < 200;
    bool length = content_length >= 0;
    if (c->msg.minor == 0 && !length) c->keep_alive = false;
    c->chunked = !length && c->msg.minor == 1 && !c->nobody;
    c->body_left = length && !c->nobody ? content_length : -1;
    /* the names a Connection field lists are hop-by-hop too */
    view tokens[16];
    size_t nt = 0;
    for (size_t i = 0; i < n_fields; i++) {
        if (!view_ieq(fields[i].name, "connection")) continue;
        const char *p = fields[i].value.p, *e = p + fields[i].value.len;
        while (p < e && nt < 16) {
            while (p < e && (*p == ' ' || *p == '\t' || *p == ',')) p++;
            const char *t = p;
            while (p < e && *p != ',' && *p != ' ' && *p != '\t') p++;
            if (p > t) tokens[nt++] = (view){t, (size_t)(p - t)};
            while (p < e && *p != ',') p++;
        }
    }
    buf b = BUF_INIT;
    head_begin(c, &b, status, NULL);
    for (size_t i = 0; i < n_fields; i++) {
        if (is_own_field(fields[i].name, tokens, nt)) continue;
        buf_add(&b, fields[i].name.p, fields[i].name.len);
        buf_adds(&b, ": ");
        buf_add(&b, fields[i].value.p, fields[i].value.len);
        buf_adds(&b, "\r\n");
    }
    if (length && status >= 200 && status != 204) buf_printf(&b, "Content-Length: %lld\r\n", (long long)content_length);
    else if (c->chunked) buf_adds(&b, "Transfer-Encoding: chunked\r\n");
    buf_adds(&b, "\r\n");
    conn_write(c, &b);
    return 0;
}

int srv_write(srv_conn *c, const void *data, size_t len)
{
    if (!c->owed || !c->streaming || c->closed || c->req_dead) return -1;
    if (len == 0 || c->is_head || c->nobody) return 0;
    if (c->body_left >= 0) {
        if ((uint64_t)len > (uint64_t)c->body_left) return -1;
        c->body_left -= (int64_t)len;
    }
    char size[24];
    uv_buf_t v[3];
    unsigned n = 0;
    if (c->chunked) v[n++] = uv_buf_init(size, (unsigned)snprintf(size, sizeof size, "%zx\r\n", len));
    v[n++] = uv_buf_init((char *)data, (unsigned)len);
    if (c->chunked) v[n++] = uv_buf_init((char *)"\r\n", 2);
    conn_writev(c, v, n, NULL);
    return c->closed ? -1 : 0;
}

int srv_end(srv_conn *c)
{
    if (!c->owed) return -1;
    if (c->closed || c->req_dead) {
        response_done(c);
        return -1;
    }
    if (!c->streaming) { /* srv_end without a start: an empty 200 */
        return srv_respond(c, 200, NULL, NULL, 0);
    }
    if (c->chunked && !c->is_head) {
        buf b = BUF_INIT;
        buf_adds(&b, "0\r\n\r\n");
        conn_write(c, &b);
    }
    if (c->body_left > 0) c->keep_alive = false; /* short: the close tells the client */
    response_done(c);
    return 0;
}

int srv_close_response(srv_conn *c)
{
    if (!c->owed) return -1;
    c->keep_alive = false;
    c->aborted = true; /* the handler asked for it: no on_abort */
    conn_kill(c);
    response_done(c);
    return 0;
}

int srv_conn_addr(const srv_conn *c, char *out, size_t outlen)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    out[0] = '\0';
    if (c->closed || c->h.handle.type != UV_TCP ||
        uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    char ip[64] = "";
    if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
        snprintf(out, outlen, "[%s]:%d", ip, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
    } else {
        uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
        snprintf(out, outlen, "%s:%d", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    }
    return 0;
}

size_t srv_conn_queued(const srv_conn *c)
{
    return c->closed ? 0 : uv_stream_get_write_queue_size(&c->h.stream);
}

const srv_peer *srv_conn_peer(const srv_conn *c)
{
    return &c->peer;
}

bool srv_conn_alive(const srv_conn *c)
{
    return !c->closed;
}

bool srv_conn_congested(const srv_conn *c)
{
    return c->congested && !c->closed;
}

void srv_pause_body(srv_conn *c)
{
    if (c->closed || !c->stream_req || c->phase != PH_BODY || c->discard || c->body_paused) return;
    c->body_paused = true;
    if (c->reading) {
        uv_read_stop(&c->h.stream);
        c->reading = false;
    }
    /* the client is not the slow one now: its deadline stops, keeping
     * what is left of it for srv_resume_body */
    uint64_t now = uv_now(c->s->loop);
    c->body_rest = c->body_deadline > now ? c->body_deadline - now : 1;
    timer_arm(c, T_NONE, 0);
}

void srv_resume_body(srv_conn *c)
{
    if (c->closed || !c->body_paused) return;
    c->body_paused = false;
    if (c->phase != PH_BODY) return;
    /* what was left of the body deadline, not a fresh one: a client and a
     * backend that are both slow cannot hold the connection forever */
    c->body_deadline = uv_now(c->s->loop) + c->body_rest;
    timer_arm(c, T_BODY, (int64_t)c->body_rest);
    if (!c->in_process) conn_process(c); /* buffered bytes first; reads again at NEED_MORE */
}

int srv_conn_fail_status(const srv_conn *c)
{
    return c->fail_status;
}

size_t srv_conn_fail_bytes(const srv_conn *c)
{
    return c->fail_status ? c->fail_bytes : 0;
}

void srv_conn_set_ud(srv_conn *c, void *ud)
{
    c->ud = ud;
}

void *srv_conn_ud(const srv_conn *c)
{
    return c->ud;
}

/* ---- timers ---- */

static void on_timer(uv_timer_t *t)
{
    srv_conn *c = t->data;
    enum timer_kind k = c->tk;
    c->tk = T_NONE;
    if (c->closed) return;
    switch (k) {
    case T_HEADER:
        /* nothing sent at all: just close; a partial head: tell it */
        if (c->rlen - c->roff == 0) conn_kill(c);
        else send_error(c, 408, "request head not received in time");
        break;
    case T_BODY:
        if (c->discard) conn_kill(c);
        else req_fail(c, 408, "request body not received in time");
        break;
    case T_IDLE:
    case T_LINGER: conn_kill(c); break;
    case T_NONE: break;
    }
}

/* ---- accepting ---- */

static void on_connection(uv_stream_t *ls, int status)
{
    srv_listener *l = ls->data;
    srv *s = l->s;
    if (status < 0 || s->closing) return;
    srv_conn *c = xcalloc(1, sizeof *c);
    c->s = s;
    int r = l->is_unix ? uv_pipe_init(s->loop, &c->h.pipe, 0) : uv_tcp_init(s->loop, &c->h.tcp);
    if (r < 0) {
        free(c);
        return;
    }
    uv_timer_init(s->loop, &c->timer);
    c->h.handle.data = c;
    c->timer.data = c;
    c->handles_open = 2;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    http_parser_init(&c->p, HTTP_KIND_REQUEST, &s->o.limits);
    c->fields = xcalloc(s->o.limits.max_fields ? s->o.limits.max_fields : 1, sizeof *c->fields);
    c->phase = PH_HEAD;
    if (uv_accept(ls, &c->h.stream) < 0) {
        conn_kill(c);
        return;
    }
    if (l->is_unix) {
        uv_os_fd_t fd;
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (uv_fileno(&c->h.handle, &fd) == 0 &&
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
            c->peer = (srv_peer){.known = true, .uid = cr.uid, .gid = cr.gid, .pid = cr.pid};
            peer_groups(fd, &c->peer);
        }
    } else {
        uv_tcp_nodelay(&c->h.tcp, 1);
    }
    read_start(c);
    if (s->n_conns > s->o.max_conns) {
        send_error(c, 503, "too many connections");
        return;
    }
    if (l->is_unix && s->o.allow && !(c->peer.known && s->o.allow(&c->peer, s->o.ud))) {
        send_error(c, 403, "peer not allowed");
        return;
    }
    timer_arm(c, T_HEADER, s->o.header_timeout_ms);
}

srv *srv_new(uv_loop_t *loop, const srv_opts *o)
{
    srv *s = xcalloc(1, sizeof *s);
    s->loop = loop;
    s->o = *o;
    s->tcp_port = -1;
    http_limits *l = &s->o.limits;
    if (!l->max_head) l->max_head = 16 * 1024;
    if (!l->max_fields) l->max_fields = 100;
    if (!l->max_target) l->max_target = 8 * 1024;
    if (!l->max_body) l->max_body = 1024 * 1024;
    if (s->o.header_timeout_ms <= 0) s->o.header_timeout_ms = 10000;
    if (s->o.body_timeout_ms <= 0) s->o.body_timeout_ms = 30000;
    if (s->o.idle_timeout_ms <= 0) s->o.idle_timeout_ms = 60000;
    if (!s->o.max_conns) s->o.max_conns = 256;
    if (!s->o.write_high) s->o.write_high = 256 * 1024;
    if (!s->o.write_low || s->o.write_low > s->o.write_high) s->o.write_low = s->o.write_high / 4;
    return s;
}

static srv_listener *listener_add(srv *s, bool is_unix)
{
    srv_listener *l = xcalloc(1, sizeof *l);
    l->s = s;
    l->is_unix = is_unix;
    l->h.handle.data = l;
    return l;
}

static void listener_link(srv *s, srv_listener *l)
{
    l->next = s->listeners;
    s->listeners = l;
    s->n_listeners++;
}

static void on_listener_closed_unlinked(uv_handle_t *h)
{
    free(h->data);
}

/* Is something accepting on path?  A non-blocking connect answers at
 * once on a Unix socket: refused (or not a socket) means stale. */
static bool unix_socket_live(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return true; /* cannot tell: never delete */
    int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    close(fd);
    /* EAGAIN: a live listener with a full backlog */
    return r == 0 || e == EAGAIN || e == EINPROGRESS;
}

int srv_listen_unix(srv *s, const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path '%s' is too long (%zu bytes, at most %zu)", path,
                 strlen(path), sizeof sa.sun_path - 1);
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket '%s': %s", path, strerror(errno));
        return -1;
    }
    /* On Linux the socket file takes the socket inode's mode at bind, so
     * this closes the window between bind and chmod where another user
     * could connect; the chmod below is for the record. */
    (void)fchmod(fd, 0600);
    int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    if (r < 0 && errno == EADDRINUSE) {
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && !unix_socket_live(path)) {
            unlink(path); /* stale: left by a daemon that died */
            r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
        } else if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "socket '%s': a file that is not a socket is in the way", path);
            close(fd);
            errno = EADDRINUSE;
            return -1;
        } else {
            snprintf(err, errlen, "socket '%s' is in use by another process (is a daemon running?)",
                     path);
            close(fd);
            errno = EADDRINUSE;
            return -1;
        }
    }
    if (r < 0) {
        int e = errno;
        snprintf(err, errlen, "bind '%s': %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
        int e = errno;
        snprintf(err, errlen, "socket '%s': %s", path, strerror(e));
        unlink(path);
        close(fd);
        errno = e;
        return -1;
    }
    srv_listener *l = listener_add(s, true);
    uv_pipe_init(s->loop, &l->h.pipe, 0);
    if ((r = uv_pipe_open(&l->h.pipe, fd)) < 0 ||
        (r = uv_listen(&l->h.stream, 128, on_connection)) < 0) {
        snprintf(err, errlen, "listen '%s': %s", path, uv_strerror(r));
        unlink(path);
        uv_close(&l->h.handle, on_listener_closed_unlinked);
        errno = -r;
        return -1;
    }
    l->path = xstrdup(path);
    listener_link(s, l);
    return 0;
}

int srv_listen_tcp(srv *s, const char *host, int port, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) != 0) {
        snprintf(err, errlen, "listen address '%s' is not a numeric IP address", host);
        errno = EINVAL;
        return -1;
    }
    srv_listener *l = listener_add(s, false);
    uv_tcp_init(s->loop, &l->h.tcp);
    int r = uv_tcp_bind(&l->h.tcp, (struct sockaddr *)&ss, 0);
    if (r == 0) r = uv_listen(&l->h.stream, 128, on_connection);
    if (r < 0) {
        if (r == UV_EADDRINUSE)
            snprintf(err, errlen, "port %d on %s is already in use", port, host);
        else snprintf(err, errlen, "listen %s:%d: %s", host, port, uv_strerror(r));
        uv_close(&l->h.handle, on_listener_closed_unlinked);
        errno = -r;
        return -1;
    }
    struct sockaddr_storage got;
    int gl = sizeof got;
    if (uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&got, &gl) == 0)
        s->tcp_port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                      : ((struct sockaddr_in *)&got)->sin_port);
    listener_link(s, l);
    return 0;
}

int srv_tcp_port(const srv *s)
{
    return s->tcp_port;
}

static void on_listener_closed(uv_handle_t *h)
{
    srv_listener *l = h->data;
    srv *s = l->s;
    if (l->path) unlink(l->path);
    free(l->path);
    free(l);
    if (--s->n_listeners == 0 && s->n_conns == 0) {
        void (*cb)(void *) = s->close_cb;
        void *ud = s->close_ud;
        free(s);
        if (cb) cb(ud);
    }
}

void srv_close(srv *s, void (*cb)(void *ud), void *ud)
{
    if (s->closing) return;
    s->closing = true;
    s->close_cb = cb;
    s->close_ud = ud;
    srv_listener *l = s->listeners;
    s->listeners = NULL;
    bool none = s->n_listeners == 0;
    while (l) {
        srv_listener *next = l->next;
        uv_close(&l->h.handle, on_listener_closed);
        l = next;
    }
    /* idle ones and streams go now; requests being read or answered end
     * with Connection: close (dispatch checks s->closing) */
    for (srv_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        bool idle = c->phase == PH_HEAD && c->rlen - c->roff == 0;
        if (idle || c->phase == PH_LINGER || c->streaming) conn_kill(c);
        else if (c->phase == PH_HANDLING || c->owed) c->keep_alive = false;
    }
    if (none && s->n_conns == 0) {
        free(s);
        if (cb) cb(ud);
    }
}
