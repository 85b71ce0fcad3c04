/* upstream.c - one request to a backend over libuv TCP, a keep-alive pool
 * per backend, an optional TLS transport hook.  See upstream.h.
 *
 * Design decisions:
 *   - A request (upstream_req) lives from upstream_start to on_end (or
 *     upstream_abort); a connection (up_conn) from connect to close, and
 *     carries one request at a time.  They point at each other while
 *     attached; the pool keeps only idle connections.
 *   - Bytes toward the backend: held in r->out until the connection is
 *     ready (connected, TLS handshake done), then written.  After that a
 *     write goes straight to the socket when its queue is empty
 *     (uv_try_write: no copy); what the kernel does not take is copied
 *     once into a uv_write request.
 *   - Failures are delivered from the connection's close callback: a
 *     failing request records its error and closes its connection, and
 *     on_end comes once the handles are closed.  So on_end is never
 *     called from inside an upstream_* call, and a failed connection is
 *     never reused.
 *   - The idle deadline of a flowing body costs nothing per read: each
 *     read stores uv_now(); the timer, when it fires, re-arms for what is
 *     left.
 *   - A pooled connection is probed with recv(MSG_PEEK) when taken: EOF or
 *     stray bytes mean the backend is done with it (closed between our
 *     loop turns), so another is used before a byte is written.  The same
 *     holds when the first write on a pooled connection fails with nothing
 *     written.  Once any request byte was written, a failure is final:
 *     never send a POST twice. */
#include "router/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define READ_CHUNK (64 * 1024)
#define WRITE_HIGH (256 * 1024)
#define WRITE_LOW (64 * 1024)

typedef struct up_conn up_conn;

struct upstream_pool {
    uv_loop_t *loop;
    upstream_opts o;
    char *host, *host_header, *tls_name, *name;
    struct sockaddr_storage *addrs; /* the host, then more_hosts */
    char **names;                   /* "host:port" of each; name is names[cur] */
    size_t n_addrs, cur;            /* cur: the address new connections go to */
    up_conn *idle; /* most recently used first */
    size_t n_idle;
    size_t n_conns; /* open or closing */
    size_t n_reqs;  /* requests not yet ended */
    uint64_t connects;
    bool closing;
    void (*close_cb)(void *ud);
    void *close_ud;
};

enum ctimer { CT_NONE, CT_CONNECT, CT_HEADER, CT_IDLE, CT_POOL, CT_WRITE };

struct up_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_timer_t kick; /* upstream_resume: parse buffered bytes on a later turn */
    uv_connect_t creq;
    upstream_pool *pool;
    upstream_req *req;
    up_conn *prev, *next; /* idle list */
    int handles_open;
    bool closed;
    bool connected;
    bool ready;  /* connected and (TLS) handshaken */
    bool reading;
    bool pooled; /* on the idle list */
    bool reused; /* has carried a request before */
    bool in_parse;
    enum ctimer tk;
    uint64_t last_rx; /* uv_now at the last read (idle deadline) */
    uint64_t last_tx; /* uv_now at the last completed write (write deadline) */
    size_t ai;        /* the pool address it connects to */
    http_parser p;
    char *rb; /* read buffer; plain TCP: parsed from [roff, rlen) */
    size_t roff, rlen, rcap;
    void *tls;  /* TLS session; then the plaintext is in `plain` from ploff */
    buf plain;
    size_t ploff;
};

struct upstream_req {
    upstream_pool *pool;
    up_conn *c;
    upstream_cbs cb;
    void *ud;
    buf out;          /* bytes held until the connection is ready */
    int64_t body_len; /* -1: chunked */
    uint64_t body_sent;
    bool chunked;
    bool ended;       /* upstream_end called */
    bool is_head;     /* HEAD: the response has no body */
    bool wrote_any;   /* some request byte went to a socket */
    bool retried;
    bool interim;     /* inside a 1xx response */
    bool got_head;
    bool paused;
    bool congested;
    bool kick_writable; /* on_writable is owed, from the kick timer */
    bool aborted;
    size_t addr_tries;  /* addresses tried after the first failed to connect */
    int in_cb;
    int fail_code; /* recorded failure, delivered at close */
    char *fail_msg;
};

static void conn_kill(up_conn *c);
static void conn_parse(up_conn *c);
static void on_timer(uv_timer_t *t);
static void on_kick(uv_timer_t *t);
static up_conn *conn_new(upstream_pool *p, upstream_req *r);
static int req_flush(upstream_req *r);

/* ---- small helpers ---- */

static void req_free(upstream_req *r)
{
    upstream_pool *p = r->pool;
    buf_release(&r->out);
    free(r->fail_msg);
    free(r);
    p->n_reqs--;
}

static void pool_maybe_free(upstream_pool *p)
{
    if (!p->closing || p->n_conns || p->n_reqs) return;
    void (*cb)(void *) = p->close_cb;
    void *ud = p->close_ud;
    free(p->host);
    free(p->host_header);
    free(p->tls_name);
    for (size_t i = 0; i < p->n_addrs; i++) free(p->names[i]);
    free(p->names);
    free(p->addrs);
    free(p);
    if (cb) cb(ud);
}

static void timer_arm(up_conn *c, enum ctimer k, int64_t ms)
{
    if (c->closed) return;
    c->tk = k;
    uv_timer_stop(&c->timer);
    if (k != CT_NONE) uv_timer_start(&c->timer, on_timer, (uint64_t)(ms > 0 ? ms : 1), 0);
}

/* Record r's failure and close its connection; on_end follows from the
 * close callback.  The first failure wins. */
static void req_fail(upstream_req *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void req_fail(upstream_req *r, int code, const char *fmt, ...)
{
    if (!r->fail_code) {
        va_list ap;
        va_start(ap, fmt);
        buf m = BUF_INIT;
        buf_vprintf(&m, fmt, ap);
        va_end(ap);
        r->fail_code = code;
        r->fail_msg = buf_detach(&m);
    }
    if (r->c) conn_kill(r->c);
}

static size_t queued(const upstream_req *r)
{
    size_t n = r->out.len;
    if (r->c && !r->c->closed) n += uv_stream_get_write_queue_size((const uv_stream_t *)&r->c->tcp);
    return n;
}

/* After any write: congestion, the write deadline, and on_writable (from
 * the kick timer: never from inside an upstream_* call, and also when the
 * bytes went out at once, when no uv_write callback will ever come). */
static void write_state(upstream_req *r)
{
    up_conn *c = r->c;
    size_t q = queued(r);
    if (!r->congested && q > WRITE_HIGH) r->congested = true;
    if (!c || c->closed || !c->ready) return; /* the connect deadline runs */
    upstream_pool *p = c->pool;
    if (r->congested && q <= WRITE_LOW) {
        r->congested = false;
        if (r->cb.on_writable && !r->kick_writable) {
            r->kick_writable = true;
            uv_timer_start(&c->kick, on_kick, 0, 0);
        }
    }
    if (r->congested) {
        if (c->tk != CT_WRITE) {
            c->last_tx = uv_now(p->loop);
            timer_arm(c, CT_WRITE, p->o.idle_timeout_ms);
        }
    } else if (c->tk == CT_WRITE) {
        if (r->got_head) timer_arm(c, CT_IDLE, p->o.idle_timeout_ms);
        else if (r->ended) timer_arm(c, CT_HEADER, p->o.header_timeout_ms);
        else timer_arm(c, CT_NONE, 0);
    }
}

/* ---- connection lifetime ---- */

static void idle_unlink(up_conn *c)
{
    if (!c->pooled) return;
    upstream_pool *p = c->pool;
    if (c->prev) c->prev->next = c->next;
    else p->idle = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->pooled = false;
    p->n_idle--;
}

static void on_conn_closed(uv_handle_t *h)
{
    up_conn *c = h->data;
    if (--c->handles_open > 0) return;
    upstream_pool *p = c->pool;
    upstream_req *r = c->req;
    if (r) {
        r->c = NULL;
        c->req = NULL;
        if (!r->aborted) {
            int code = r->fail_code ? r->fail_code : UPSTREAM_E_CLOSED;
            const char *msg = r->fail_msg ? r->fail_msg : "connection to the backend closed";
            r->in_cb++;
            r->cb.on_end(r, code, msg, r->ud);
        }
        req_free(r);
    }
    if (c->tls) p->o.tls->close(c->tls);
    http_parser_release(&c->p);
    buf_release(&c->plain);
    free(c->rb);
    free(c);
    p->n_conns--;
    pool_maybe_free(p);
}

static void conn_kill(up_conn *c)
{
    if (c->closed) return;
    c->closed = true;
    idle_unlink(c);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
    uv_close((uv_handle_t *)&c->kick, on_conn_closed);
}

/* ---- writing ---- */

typedef struct wreq {
    uv_write_t req;
    buf b;
} wreq;

static void on_written(uv_write_t *wr, int status)
{
    wreq *w = (wreq *)wr;
    up_conn *c = wr->data;
    buf_release(&w->b);
    free(w);
    if (c->closed) return;
    upstream_req *r = c->req;
    if (status < 0) {
        if (r)
            req_fail(r, UPSTREAM_E_CLOSED, "cannot write the request to backend %s: %s",
                     c->pool->name, uv_strerror(status));
        else conn_kill(c);
        return;
    }
    c->last_tx = uv_now(c->pool->loop);
    if (r) write_state(r);
}

/* Raw bytes to the socket: at once when nothing is queued, the rest
 * copied.  *wrote tells whether any byte went out or was queued.  Returns
 * 0 or a libuv error (nothing was queued then). */
static int sock_writev(up_conn *c, uv_buf_t *v, unsigned n, bool *wrote)
{
    size_t total = 0, done = 0;
    for (unsigned i = 0; i < n; i++) total += v[i].len;
    *wrote = false;
    if (total == 0) return 0;
    if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0) {
        int rc = uv_try_write((uv_stream_t *)&c->tcp, v, n);
        if (rc >= 0) done = (size_t)rc;
        else if (rc != UV_EAGAIN) return rc;
    }
    if (done) *wrote = true;
    if (done == total) return 0;
    wreq *w = xmalloc(sizeof *w);
    buf_init(&w->b);
    buf_grow(&w->b, total - done);
    size_t skip = done;
    for (unsigned i = 0; i < n; i++) {
        if (skip >= v[i].len) {
            skip -= v[i].len;
            continue;
        }
        buf_add(&w->b, v[i].base + skip, v[i].len - skip);
        skip = 0;
    }
    w->req.data = c;
    uv_buf_t ub = uv_buf_init(w->b.p, (unsigned)w->b.len);
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, on_written);
    if (rc < 0) {
        buf_release(&w->b);
        free(w);
        return rc;
    }
    *wrote = true;
    return 0;
}

/* Request bytes (plaintext) to a ready connection. */
static int conn_sendv(up_conn *c, uv_buf_t *v, unsigned n, bool *wrote)
{
    if (!c->tls) return sock_writev(c, v, n, wrote);
    buf out = BUF_INIT;
    char err[256] = "";
    for (unsigned i = 0; i < n; i++) {
        if (v[i].len && c->pool->o.tls->write(c->tls, v[i].base, v[i].len, &out, err, sizeof err) < 0) {
            buf_release(&out);
            *wrote = false;
            if (c->req)
                req_fail(c->req, UPSTREAM_E_TLS, "tls to backend %s: %s", c->pool->name,
                         err[0] ? err : "write failed");
            return UV_EPROTO;
        }
    }
    uv_buf_t ub = uv_buf_init(out.p, (unsigned)out.len);
    int rc = sock_writev(c, &ub, 1, wrote);
    buf_release(&out);
    return rc;
}

/* ---- reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    up_conn *c = h->data;
    (void)suggested;
    if (c->roff > 0 && c->roff == c->rlen) c->roff = c->rlen = 0;
    if (c->rcap - c->rlen < READ_CHUNK / 4) {
        if (c->roff > 0) { /* nothing points into rb between callbacks */
            memmove(c->rb, c->rb + c->roff, c->rlen - c->roff);
            c->rlen -= c->roff;
            c->roff = 0;
        }
        if (c->rcap - c->rlen < READ_CHUNK / 4) {
            c->rcap = c->rcap ? c->rcap * 2 : READ_CHUNK;
            c->rb = xrealloc(c->rb, c->rcap);
        }
    }
    *out = uv_buf_init(c->rb + c->rlen, (unsigned)(c->rcap - c->rlen));
}

static void on_eof(up_conn *c)
{
    upstream_req *r = c->req;
    if (!r) {
        conn_kill(c);
        return;
    }
    http_event ev = http_parse_eof(&c->p);
    if (ev == HTTP_EV_DONE && !r->interim) {
        /* a read-until-close body ended: complete */
        c->req = NULL;
        r->c = NULL;
        conn_kill(c);
        r->in_cb++;
        r->cb.on_end(r, UPSTREAM_OK, NULL, r->ud);
        req_free(r);
        return;
    }
    size_t pending = c->tls ? c->plain.len - c->ploff : c->rlen - c->roff;
    if (!r->got_head)
        req_fail(r, UPSTREAM_E_CLOSED, "backend %s closed the connection before %s",
                 c->pool->name, pending || r->interim ? "the end of its response head"
                                                       : "responding");
    else
        req_fail(r, UPSTREAM_E_CLOSED, "backend %s closed the connection inside the response body",
                 c->pool->name);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    up_conn *c = st->data;
    (void)b;
    if (c->closed || n == 0) return;
    if (n < 0) {
        if (n == UV_EOF) {
            on_eof(c);
        } else if (c->req) {
            req_fail(c->req, UPSTREAM_E_CLOSED, "connection to backend %s failed: %s",
                     c->pool->name, uv_strerror((int)n));
        } else {
            conn_kill(c);
        }
        return;
    }
    c->last_rx = uv_now(c->pool->loop);
    if (!c->req && !c->tls) { /* bytes on an idle connection: the backend is confused */
        conn_kill(c);
        return;
    }
    if (c->tls) {
        buf out = BUF_INIT;
        char err[256] = "";
        if (c->ploff) { /* keep only what is not parsed yet */
            memmove(c->plain.p, c->plain.p + c->ploff, c->plain.len - c->ploff);
            c->plain.len -= c->ploff;
            c->plain.p[c->plain.len] = '\0';
            c->ploff = 0;
        }
        int rc = c->pool->o.tls->feed(c->tls, c->rb + c->rlen, (size_t)n, &c->plain, &out, err,
                                     sizeof err);
        /* the ciphertext is consumed: rb only ever holds this one read */
        c->roff = c->rlen = 0;
        if (out.len && rc >= 0) {
            bool wrote;
            uv_buf_t ub = uv_buf_init(out.p, (unsigned)out.len);
            int wr = sock_writev(c, &ub, 1, &wrote);
            if (wr < 0) rc = -1, snprintf(err, sizeof err, "%s", uv_strerror(wr));
        }
        buf_release(&out);
        if (!c->req) { /* idle: TLS housekeeping is fine, data is not */
            if (rc < 0 || c->plain.len) conn_kill(c);
            return;
        }
        if (rc < 0) {
            /* the hook's message says what failed ("TLS handshake with
             * 'api.x' failed: certificate verify failed: ..."): said once */
            if (c->ready)
                req_fail(c->req, UPSTREAM_E_TLS, "backend %s: TLS: %s", c->pool->name,
                         err[0] ? err : "failed");
            else
                req_fail(c->req, UPSTREAM_E_CONNECT, "backend %s: %s", c->pool->name,
                         err[0] ? err : "TLS handshake failed");
            return;
        }
        if (!c->ready) {
            if (rc != 1) return;
            c->ready = true;
            timer_arm(c, c->req->ended ? CT_HEADER : CT_NONE, c->pool->o.header_timeout_ms);
            if (req_flush(c->req) < 0) return;
        }
    } else {
        c->rlen += (size_t)n;
    }
    conn_parse(c);
}

static void read_start(up_conn *c)
{
    if (c->closed || c->reading) return;
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc < 0) {
        if (c->req)
            req_fail(c->req, UPSTREAM_E_CLOSED, "cannot read from backend %s: %s", c->pool->name,
                     uv_strerror(rc));
        else conn_kill(c);
        return;
    }
    c->reading = true;
}

static void read_stop(up_conn *c)
{
    if (c->closed || !c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

/* Put a connection whose exchange is complete back in the pool (or close
 * it when the pool is full or closing). */
static void conn_release(up_conn *c)
{
    upstream_pool *p = c->pool;
    c->req = NULL;
    c->reused = true;
    if (p->closing || p->n_idle >= p->o.max_idle || c->closed) {
        conn_kill(c);
        return;
    }
    c->next = p->idle;
    c->prev = NULL;
    if (p->idle) p->idle->prev = c;
    p->idle = c;
    c->pooled = true;
    p->n_idle++;
    read_start(c); /* to see the backend close it */
    timer_arm(c, CT_POOL, p->o.pool_idle_ms);
}

/* The response is complete. */
static void req_done(upstream_req *r)
{
    up_conn *c = r->c;
    bool reuse = c->p.msg.keep_alive && r->ended && !r->fail_code &&
                 (c->tls ? c->plain.len == c->ploff : c->rlen == c->roff);
    c->req = NULL;
    r->c = NULL;
    timer_arm(c, CT_NONE, 0);
    if (reuse) conn_release(c);
    else conn_kill(c);
    r->in_cb++;
    r->cb.on_end(r, UPSTREAM_OK, NULL, r->ud);
    req_free(r);
}

/* Parse what is buffered, delivering events until more bytes are needed,
 * the request is paused, aborted or ended. */
static void conn_parse(up_conn *c)
{
    if (c->in_parse) return;
    c->in_parse = true;
    upstream_req *r = c->req;
    while (r && !c->closed && !r->paused) {
        const char *data;
        size_t avail;
        if (c->tls) {
            data = c->plain.p + c->ploff;
            avail = c->plain.len - c->ploff;
        } else {
            data = c->rb + c->roff;
            avail = c->rlen - c->roff;
        }
        size_t used = 0;
        view body;
        http_event ev = http_parse(&c->p, data, avail, &used, &body);
        if (c->tls) c->ploff += used;
        else c->roff += used;
        if (ev == HTTP_EV_NEED_MORE) break;
        if (ev == HTTP_EV_ERROR) {
            req_fail(r, UPSTREAM_E_PROTOCOL, "bad response from backend %s: %s (byte %llu)",
                     c->pool->name, c->p.err.msg, (unsigned long long)c->p.err.offset);
            break;
        }
        if (ev == HTTP_EV_HEAD) {
            int st = c->p.msg.status;
            if (st == 101) {
                req_fail(r, UPSTREAM_E_PROTOCOL,
                         "bad response from backend %s: 101 switching protocols is not supported",
                         c->pool->name);
                break;
            }
            if (st < 200) {
                r->interim = true;
                continue;
            }
            r->got_head = true;
            if (c->tk == CT_HEADER || c->tk == CT_NONE) timer_arm(c, CT_IDLE, c->pool->o.idle_timeout_ms);
            if (r->cb.on_head) {
                r->in_cb++;
                r->cb.on_head(r, &c->p.msg, r->ud);
                if (--r->in_cb == 0 && r->aborted) {
                    req_free(r);
                    r = NULL;
                }
            }
            continue;
        }
        if (ev == HTTP_EV_BODY) {
            if (r->cb.on_data && body.len) {
                r->in_cb++;
                r->cb.on_data(r, &body, r->ud);
                if (--r->in_cb == 0 && r->aborted) {
                    req_free(r);
                    r = NULL;
                }
            }
            continue;
        }
        /* HTTP_EV_DONE */
        if (r->interim) {
            r->interim = false;
            if (r->is_head) http_parser_skip_body(&c->p);
            continue;
        }
        req_done(r);
        r = NULL;
    }
    c->in_parse = false;
}

static void on_kick(uv_timer_t *t)
{
    up_conn *c = t->data;
    upstream_req *r = c->req;
    if (c->closed || !r) return;
    if (r->kick_writable) {
        r->kick_writable = false;
        if (r->cb.on_writable && !r->congested) {
            r->in_cb++;
            r->cb.on_writable(r, r->ud);
            if (--r->in_cb == 0 && r->aborted) {
                req_free(r);
                return;
            }
            if (r->aborted || c->closed || c->req != r) return;
        }
    }
    if (!r->paused) conn_parse(c);
}

/* ---- timers ---- */

static void on_timer(uv_timer_t *t)
{
    up_conn *c = t->data;
    enum ctimer k = c->tk;
    c->tk = CT_NONE;
    if (c->closed) return;
    upstream_pool *p = c->pool;
    upstream_req *r = c->req;
    switch (k) {
    case CT_NONE: break;
    case CT_POOL: conn_kill(c); break;
    case CT_CONNECT:
        if (r)
            req_fail(r, UPSTREAM_E_TIMEOUT, "backend %s did not accept the connection%s within %lld ms",
                     p->name, c->connected ? " (tls handshake)" : "",
                     (long long)p->o.connect_timeout_ms);
        else conn_kill(c);
        break;
    case CT_HEADER:
        if (r)
            req_fail(r, UPSTREAM_E_TIMEOUT, "backend %s sent no response head within %lld ms",
                     p->name, (long long)p->o.header_timeout_ms);
        else conn_kill(c);
        break;
    case CT_WRITE: {
        if (!r || !r->congested) break;
        uint64_t now = uv_now(p->loop), lim = (uint64_t)p->o.idle_timeout_ms;
        if (now - c->last_tx < lim)
            timer_arm(c, CT_WRITE, (int64_t)(lim - (now - c->last_tx)));
        else
            req_fail(r, UPSTREAM_E_TIMEOUT,
                     "backend %s took none of the request body for %lld ms (%zu bytes waiting)", p->name,
                     (long long)p->o.idle_timeout_ms, queued(r));
        break;
    }
    case CT_IDLE: {
        if (!r) break;
        uint64_t now = uv_now(p->loop), lim = (uint64_t)p->o.idle_timeout_ms;
        if (r->paused) {
            timer_arm(c, CT_IDLE, p->o.idle_timeout_ms);
        } else if (now - c->last_rx < lim) {
            timer_arm(c, CT_IDLE, (int64_t)(lim - (now - c->last_rx)));
        } else {
            req_fail(r, UPSTREAM_E_TIMEOUT, "backend %s sent nothing for %lld ms inside its response",
                     p->name, (long long)p->o.idle_timeout_ms);
        }
        break;
    }
    }
}

/* ---- connecting ---- */

/* Write what was held; the connection is ready.  -1 when that failed
 * (the request has failed or moved to another connection). */
static int req_flush(upstream_req *r)
{
    up_conn *c = r->c;
    if (!r->out.len) return 0;
    bool wrote = false;
    uv_buf_t ub = uv_buf_init(r->out.p, (unsigned)r->out.len);
    int rc = conn_sendv(c, &ub, 1, &wrote);
    if (rc < 0) {
        if (!r->fail_code)
            req_fail(r, UPSTREAM_E_CLOSED, "cannot write the request to backend %s: %s",
                     c->pool->name, uv_strerror(rc));
        return -1;
    }
    r->wrote_any = r->wrote_any || wrote;
    buf_clear(&r->out);
    write_state(r);
    return 0;
}

static void on_connect(uv_connect_t *cr, int status)
{
    up_conn *c = cr->data;
    if (c->closed) return;
    upstream_pool *p = c->pool;
    upstream_req *r = c->req;
    if (status < 0) {
        if (r && !r->wrote_any && !r->fail_code && r->addr_tries + 1 < p->n_addrs) {
            /* the name's next address (::1 refused by a server on IPv4 only) */
            p->cur = (c->ai + 1) % p->n_addrs;
            p->name = p->names[p->cur];
            r->addr_tries++;
            c->req = NULL;
            r->c = NULL;
            conn_kill(c);
            conn_new(p, r);
            return;
        }
        if (r)
            req_fail(r, UPSTREAM_E_CONNECT, "cannot connect to backend %s: %s", p->names[c->ai],
                     uv_strerror(status));
        else conn_kill(c);
        return;
    }
    c->connected = true;
    uv_tcp_nodelay(&c->tcp, 1);
    read_start(c);
    if (c->closed || !r) return;
    if (p->o.tls) {
        buf out = BUF_INIT;
        char err[256] = "";
        c->tls = p->o.tls->open(p->o.tls_ctx, p->tls_name, &out, err, sizeof err);
        if (!c->tls) {
            buf_release(&out);
            req_fail(r, UPSTREAM_E_CONNECT, "backend %s: %s", p->name,
                     err[0] ? err : "cannot start a TLS session");
            return;
        }
        bool wrote;
        uv_buf_t ub = uv_buf_init(out.p, (unsigned)out.len);
        int rc = sock_writev(c, &ub, 1, &wrote);
        buf_release(&out);
        if (rc < 0)
            req_fail(r, UPSTREAM_E_CONNECT, "backend %s: cannot send the TLS handshake: %s", p->name,
                     uv_strerror(rc));
        return; /* the deadline runs on until the handshake is done */
    }
    c->ready = true;
    timer_arm(c, r->ended ? CT_HEADER : CT_NONE, p->o.header_timeout_ms);
    req_flush(r);
}

static up_conn *conn_new(upstream_pool *p, upstream_req *r)
{
    size_t ai = p->cur;
    up_conn *c = xcalloc(1, sizeof *c);
    c->pool = p;
    uv_tcp_init(p->loop, &c->tcp);
    uv_timer_init(p->loop, &c->timer);
    uv_timer_init(p->loop, &c->kick);
    c->tcp.data = c->timer.data = c->kick.data = c->creq.data = c;
    c->handles_open = 3;
    http_parser_init(&c->p, HTTP_KIND_RESPONSE, &p->o.limits);
    p->n_conns++;
    p->connects++;
    c->req = r;
    c->ai = ai;
    r->c = c;
    timer_arm(c, CT_CONNECT, p->o.connect_timeout_ms);
    int rc = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&p->addrs[ai], on_connect);
    if (rc < 0)
        req_fail(r, UPSTREAM_E_CONNECT, "cannot connect to backend %s: %s", p->name,
                 uv_strerror(rc));
    return c;
}

/* An idle connection that still looks alive: nothing to read (no EOF, no
 * stray bytes) right now. */
static bool conn_alive(up_conn *c)
{
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0) return false;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return c->tls != NULL; /* TLS: a session ticket may be waiting */
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void req_attach(upstream_pool *p, upstream_req *r)
{
    while (p->idle) {
        up_conn *c = p->idle;
        idle_unlink(c);
        if (!conn_alive(c)) {
            conn_kill(c);
            continue;
        }
        c->req = r;
        r->c = c;
        timer_arm(c, CT_NONE, 0);
        if (r->is_head) http_parser_skip_body(&c->p);
        bool wrote = false;
        uv_buf_t ub = uv_buf_init(r->out.p, (unsigned)r->out.len);
        int rc = conn_sendv(c, &ub, 1, &wrote);
        if (rc < 0 && !wrote && !r->fail_code) {
            /* gone before a byte of ours went out: safe to go elsewhere */
            c->req = NULL;
            r->c = NULL;
            conn_kill(c);
            continue;
        }
        if (rc < 0) {
            if (!r->fail_code)
                req_fail(r, UPSTREAM_E_CLOSED, "cannot write the request to backend %s: %s",
                         p->name, uv_strerror(rc));
            return;
        }
        r->wrote_any = wrote;
        buf_clear(&r->out);
        write_state(r);
        return;
    }
    up_conn *c = conn_new(p, r);
    if (r->is_head) http_parser_skip_body(&c->p);
}

/* ---- the request head ---- */

static bool is_hop_by_hop(view name, const view *conn_tokens, size_t n_tokens)
{
    static const char *const hop[] = {"connection", "keep-alive", "proxy-connection",
                                      "proxy-authenticate", "proxy-authorization", "te",
                                      "trailer", "transfer-encoding", "upgrade",
                                      /* ours to set */
                                      "host", "content-length",
                                      /* answered by our server already */
                                      "expect"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (view_ieq(name, hop[i])) return true;
    if (name.len > 6 && strncasecmp(name.p, "proxy-", 6) == 0) return true;
    for (size_t i = 0; i < n_tokens; i++)
        if (name.len == conn_tokens[i].len && strncasecmp(name.p, conn_tokens[i].p, name.len) == 0)
            return true;
    return false;
}

/* The names a Connection field lists (RFC 9110 7.6.1): hop-by-hop too. */
static size_t connection_tokens(const http_field *f, size_t n, view *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!view_ieq(f[i].name, "connection")) continue;
        const char *s = f[i].value.p, *e = s + f[i].value.len;
        while (s < e && k < max) {
            while (s < e && (*s == ' ' || *s == '\t' || *s == ',')) s++;
            const char *t = s;
            while (s < e && *s != ',' && *s != ' ' && *s != '\t') s++;
            if (s > t) out[k++] = (view){t, (size_t)(s - t)};
            while (s < e && *s != ',') s++;
        }
    }
    return k;
}

static bool method_without_body(view m)
{
    return view_ieq(m, "GET") || view_ieq(m, "HEAD") || view_ieq(m, "DELETE") ||
           view_ieq(m, "OPTIONS") || view_ieq(m, "TRACE");
}

static void head_serialise(const upstream_pool *p, const upstream_head *h, buf *b)
{
    buf_grow(b, 256 + h->target.len);
    buf_add(b, h->method.p, h->method.len);
    buf_addc(b, ' ');
    buf_add(b, h->target.p, h->target.len);
    buf_adds(b, " HTTP/1.1\r\nHost: ");
    buf_adds(b, p->host_header);
    buf_adds(b, "\r\n");
    view tokens[32];
    size_t nt = connection_tokens(h->fields, h->n_fields, tokens, 32);
    for (size_t i = 0; i < h->n_fields; i++) {
        const http_field *f = &h->fields[i];
        if (is_hop_by_hop(f->name, tokens, nt)) continue;
        buf_add(b, f->name.p, f->name.len);
        buf_adds(b, ": ");
        buf_add(b, f->value.p, f->value.len);
        buf_adds(b, "\r\n");
    }
    for (size_t i = 0; i < h->n_extra; i++) {
        buf_add(b, h->extra[i].name.p, h->extra[i].name.len);
        buf_adds(b, ": ");
        buf_add(b, h->extra[i].value.p, h->extra[i].value.len);
        buf_adds(b, "\r\n");
    }
    if (h->body_len < 0) buf_adds(b, "Transfer-Encoding: chunked\r\n");
    else if (h->body_len > 0 || !method_without_body(h->method))
        buf_printf(b, "Content-Length: %lld\r\n", (long long)h->body_len);
    buf_adds(b, "\r\n");
}

/* ---- the API ---- */

upstream_pool *upstream_pool_new(uv_loop_t *loop, const upstream_opts *o, char *err,
                                 size_t errlen)
{
    if (!o->host || o->port <= 0 || o->port > 65535) {
        snprintf(err, errlen, "backend address '%s:%d': expected a host and a port 1..65535",
                 o->host ? o->host : "", o->port);
        return NULL;
    }
    size_t n = 1 + o->n_more_hosts;
    struct sockaddr_storage *addrs = xcalloc(n, sizeof *addrs);
    char **names = xcalloc(n, sizeof *names);
    bool v6 = false;
    for (size_t i = 0; i < n; i++) {
        const char *hi = i ? o->more_hosts[i - 1] : o->host;
        const char *h = strcmp(hi, "localhost") == 0 ? "127.0.0.1" : hi;
        bool six = false;
        if (uv_ip4_addr(h, o->port, (struct sockaddr_in *)&addrs[i]) != 0) {
            if (uv_ip6_addr(h, o->port, (struct sockaddr_in6 *)&addrs[i]) != 0) {
                snprintf(err, errlen,
                         "backend host '%s' is not a numeric IP address or localhost (no DNS here)", hi);
                for (size_t k = 0; k < i; k++) free(names[k]);
                free(names);
                free(addrs);
                return NULL;
            }
            six = true;
        }
        if (!i) v6 = six;
        names[i] = six ? xasprintf("[%s]:%d", hi, o->port) : xasprintf("%s:%d", hi, o->port);
    }
    upstream_pool *p = xcalloc(1, sizeof *p);
    p->loop = loop;
    p->o = *o;
    p->o.more_hosts = NULL;
    p->o.n_more_hosts = 0;
    p->addrs = addrs;
    p->names = names;
    p->n_addrs = n;
    p->host = xstrdup(o->host);
    p->name = names[0];
    if (o->host_header) p->host_header = xstrdup(o->host_header);
    else if ((o->port == 80 && !o->tls) || (o->port == 443 && o->tls))
        p->host_header = v6 ? xasprintf("[%s]", o->host) : xstrdup(o->host);
    else p->host_header = xstrdup(p->name);
    p->tls_name = xstrdup(o->tls_name ? o->tls_name : o->host);
    p->o.host = p->host;
    p->o.host_header = p->host_header;
    p->o.tls_name = p->tls_name;
    if (p->o.connect_timeout_ms <= 0) p->o.connect_timeout_ms = 5000;
    if (p->o.header_timeout_ms <= 0) p->o.header_timeout_ms = 600000;
    if (p->o.idle_timeout_ms <= 0) p->o.idle_timeout_ms = 300000;
    if (p->o.pool_idle_ms <= 0) p->o.pool_idle_ms = 30000;
    if (!p->o.max_idle) p->o.max_idle = 32;
    http_limits *l = &p->o.limits;
    if (!l->max_head) l->max_head = 64 * 1024;
    if (!l->max_fields) l->max_fields = 200;
    if (!l->max_target) l->max_target = 8 * 1024;
    if (!l->max_body) l->max_body = UINT64_MAX;
    return p;
}

void upstream_pool_close(upstream_pool *p, void (*cb)(void *ud), void *ud)
{
    if (p->closing) return;
    p->closing = true;
    p->close_cb = cb;
    p->close_ud = ud;
    while (p->idle) conn_kill(p->idle);
    pool_maybe_free(p);
}

size_t upstream_pool_idle(const upstream_pool *p)
{
    return p->n_idle;
}

uint64_t upstream_pool_connects(const upstream_pool *p)
{
    return p->connects;
}

const char *upstream_pool_name(const upstream_pool *p)
{
    return p->name;
}

upstream_req *upstream_start(upstream_pool *p, const upstream_head *h, const upstream_cbs *cb,
                             void *ud)
{
    if (p->closing) return NULL;
    upstream_req *r = xcalloc(1, sizeof *r);
    r->pool = p;
    r->cb = *cb;
    r->ud = ud;
    r->body_len = h->body_len;
    r->chunked = h->body_len < 0;
    r->is_head = view_ieq(h->method, "HEAD");
    buf_init(&r->out);
    head_serialise(p, h, &r->out);
    p->n_reqs++;
    req_attach(p, r);
    return r;
}

int upstream_write(upstream_req *r, const void *data, size_t len)
{
    if (r->ended || r->fail_code || !r->c) return -1;
    if (len == 0) return 0;
    if (!r->chunked && r->body_sent + len > (uint64_t)r->body_len) {
        req_fail(r, UPSTREAM_E_REQUEST,
                 "request body for backend %s is longer than its content-length %lld",
                 r->pool->name, (long long)r->body_len);
        return -1;
    }
    r->body_sent += len;
    char size[24];
    uv_buf_t v[3];
    unsigned n = 0;
    if (r->chunked) v[n++] = uv_buf_init(size, (unsigned)snprintf(size, sizeof size, "%zx\r\n", len));
    v[n++] = uv_buf_init((char *)data, (unsigned)len);
    if (r->chunked) v[n++] = uv_buf_init((char *)"\r\n", 2);
    up_conn *c = r->c;
    if (!c->ready || r->out.len) {
        for (unsigned i = 0; i < n; i++) buf_add(&r->out, v[i].base, v[i].len);
    } else {
        bool wrote;
        int rc = conn_sendv(c, v, n, &wrote);
        if (rc < 0) {
            if (!r->fail_code)
                req_fail(r, UPSTREAM_E_CLOSED, "cannot write the request to backend %s: %s",
                         r->pool->name, uv_strerror(rc));
            return -1;
        }
        r->wrote_any = r->wrote_any || wrote;
    }
    write_state(r);
    return 0;
}

int upstream_end(upstream_req *r)
{
    if (r->ended || r->fail_code || !r->c) return -1;
    r->ended = true;
    if (!r->chunked && r->body_sent != (uint64_t)r->body_len) {
        req_fail(r, UPSTREAM_E_REQUEST,
                 "request body for backend %s ended after %llu of its %lld bytes (content-length)",
                 r->pool->name, (unsigned long long)r->body_sent, (long long)r->body_len);
        return -1;
    }
    up_conn *c = r->c;
    if (r->chunked) {
        if (!c->ready || r->out.len) {
            buf_adds(&r->out, "0\r\n\r\n");
        } else {
            bool wrote;
            uv_buf_t ub = uv_buf_init((char *)"0\r\n\r\n", 5);
            int rc = conn_sendv(c, &ub, 1, &wrote);
            if (rc < 0) {
                if (!r->fail_code)
                    req_fail(r, UPSTREAM_E_CLOSED, "cannot write the request to backend %s: %s",
                             r->pool->name, uv_strerror(rc));
                return -1;
            }
        }
    }
    if (c->ready && !r->got_head && (c->tk == CT_NONE))
        timer_arm(c, CT_HEADER, r->pool->o.header_timeout_ms);
    return 0;
}

bool upstream_congested(const upstream_req *r)
{
    return r->congested;
}

void upstream_pause(upstream_req *r)
{
    if (r->paused) return;
    r->paused = true;
    if (r->c) read_stop(r->c);
}

void upstream_resume(upstream_req *r)
{
    if (!r->paused) return;
    r->paused = false;
    up_conn *c = r->c;
    if (!c || c->closed) return;
    c->last_rx = uv_now(c->pool->loop); /* the idle deadline starts over */
    read_start(c);
    uv_timer_start(&c->kick, on_kick, 0, 0);
}

void upstream_abort(upstream_req *r)
{
    if (r->aborted) return;
    r->aborted = true;
    up_conn *c = r->c;
    if (c) {
        c->req = NULL;
        r->c = NULL;
        conn_kill(c);
    }
    if (r->in_cb == 0) req_free(r);
}
