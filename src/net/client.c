/* client.c - the CLI's blocking HTTP/1.1 client: one request per
 * connection, non-blocking socket, poll() against one monotonic deadline
 * that covers connect, send and the whole reply.
 *
 * Design: the CLI makes one call and exits, so a blocking exchange with
 * poll is all it needs; an event loop would only cost start-up time.  The
 * reply is read through the same strict parser as the server uses (kind
 * response), the head copied once into the reply, the body decoded into a
 * buf.  Connection: close keeps the server's side simple and the socket
 * never outlives the call.  Names are never resolved through DNS (no
 * deadline could bound it): numeric addresses and "localhost" only. */
#include "util/clock.h"
#include "util/errf.h"
#include "net/client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

/* A reply of the daemon is JSON about services and events, or a log
 * tail: bounded, but not tiny. */
static const http_limits reply_limits = {
    .max_head = 64 * 1024,
    .max_fields = 128,
    .max_target = 8 * 1024,
    .max_body = 256ull * 1024 * 1024,
};


/* Wait for ev on fd until the deadline: 1 ready, 0 timed out, -1 error. */
/* 1 ready, 0 the deadline passed, -1 an error, -2 a signal came and
 * *stop is set (a follow the user ended). */
static int wait_fd(int fd, short ev, int64_t deadline, volatile sig_atomic_t *stop)
{
    for (;;) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0) return 0;
        struct pollfd pf = {.fd = fd, .events = ev};
        int r = poll(&pf, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (r > 0) return 1;
        if (r == 0) return 0;
        if (errno != EINTR) return -1;
        if (stop && *stop) return -2;
    }
}

/* Fill sa from where; the Unix/TCP choice is made on a '/'. */
static int parse_addr(const char *where, struct sockaddr_storage *ss, socklen_t *sl, char *err,
                      size_t errlen)
{
    memset(ss, 0, sizeof *ss);
    if (strchr(where, '/')) {
        struct sockaddr_un *su = (struct sockaddr_un *)ss;
        size_t n = strlen(where);
        if (n >= sizeof su->sun_path)
            return errf_ret(HTTPC_E_IO, err, errlen, "socket path '%s' is too long", where);
        su->sun_family = AF_UNIX;
        memcpy(su->sun_path, where, n + 1);
        *sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
        return 0;
    }
    const char *colon = strrchr(where, ':');
    if (!colon || colon == where || !colon[1])
        return errf_ret(HTTPC_E_IO, err, errlen, "address '%s' is neither a socket path nor host:port",
                    where);
    char host[64];
    const char *h = where;
    size_t hl = (size_t)(colon - where);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl >= sizeof host) return errf_ret(HTTPC_E_IO, err, errlen, "address '%s': bad host", where);
    memcpy(host, h, hl);
    host[hl] = 0;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (*end || errno || port <= 0 || port > 65535)
        return errf_ret(HTTPC_E_IO, err, errlen, "address '%s': bad port", where);
    if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *sl = sizeof *s4;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *sl = sizeof *s6;
    } else {
        return errf_ret(HTTPC_E_IO, err, errlen, "address '%s': host is not a numeric address", where);
    }
    return 0;
}

static int do_connect(const char *where, int64_t deadline, int64_t timeout_ms, int *fdp,
                      char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int rc = parse_addr(where, &ss, &sl, err, errlen);
    if (rc) return rc;
    for (;;) {
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return errf_ret(HTTPC_E_IO, err, errlen, "socket: %s", strerror(errno));
        if (ss.ss_family != AF_UNIX) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        int r = connect(fd, (struct sockaddr *)&ss, sl);
        int e = r == 0 ? 0 : errno;
        if (e == EINPROGRESS) { /* TCP: wait for the handshake */
            int w = wait_fd(fd, POLLOUT, deadline, NULL);
            socklen_t el = sizeof e;
            if (w == 0) {
                close(fd);
                return errf_ret(HTTPC_E_TIMEOUT, err, errlen,
                            "timed out after %lld ms connecting to '%s'", (long long)timeout_ms,
                            where);
            }
            if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0) e = errno;
        }
        if (e == 0) {
            *fdp = fd;
            return 0;
        }
        close(fd);
        if (e == EAGAIN && ss.ss_family == AF_UNIX) {
            /* a Unix listener with a full backlog: retry until the deadline */
            if (clock_mono_ms() >= deadline)
                return errf_ret(HTTPC_E_TIMEOUT, err, errlen,
                            "timed out after %lld ms connecting to '%s' (backlog full)",
                            (long long)timeout_ms, where);
            poll(NULL, 0, 1);
            continue;
        }
        if (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR)
            return errf_ret(HTTPC_E_CONNECT, err, errlen,
                        "daemon unreachable: cannot connect to '%s': %s", where, strerror(e));
        return errf_ret(HTTPC_E_CONNECT, err, errlen, "cannot connect to '%s': %s", where,
                    strerror(e));
    }
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline, int64_t timeout_ms,
                    const char *where, char *err, size_t errlen)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, deadline, NULL);
            if (r == 0)
                return errf_ret(HTTPC_E_TIMEOUT, err, errlen,
                            "timed out after %lld ms sending the request to '%s'",
                            (long long)timeout_ms, where);
            if (r > 0) continue;
        }
        if (errno == EPIPE || errno == ECONNRESET)
            return errf_ret(HTTPC_E_GONE, err, errlen, "'%s' closed the connection before the request was sent: %s",
                        where, strerror(errno));
        return errf_ret(HTTPC_E_IO, err, errlen, "sending to '%s': %s", where, strerror(errno));
    }
    return 0;
}

static void take_head(http_reply *out, const http_msg *m, const char *data)
{
    size_t n = m->head_len;
    free(out->head);
    free(out->fields);
    out->head = xmalloc(n + 1);
    memcpy(out->head, data, n);
    out->head[n] = 0;
    out->fields = xcalloc(m->n_fields ? m->n_fields : 1, sizeof *out->fields);
    out->n_fields = m->n_fields;
    for (size_t i = 0; i < m->n_fields; i++) {
        out->fields[i].name.p = out->head + (m->fields[i].name.p - data);
        out->fields[i].name.len = m->fields[i].name.len;
        /* an empty value's view may point anywhere in the head */
        out->fields[i].value.p = m->fields[i].value.len ? out->head + (m->fields[i].value.p - data)
                                                        : out->head + n;
        out->fields[i].value.len = m->fields[i].value.len;
    }
    out->status = m->status;
    out->minor = m->minor;
}

/* What http_request_stream adds to a read (NULL: read the body whole). */
typedef http_stream_opts stream_to;

/* The deadline of the next wait: a stream with ticks wakes each tick_ms. */
static int64_t wait_deadline(const stream_to *sink, bool streaming, int64_t deadline)
{
    if (!streaming || !sink->on_tick || sink->tick_ms <= 0) return deadline;
    int64_t t = clock_mono_ms() + sink->tick_ms;
    return t < deadline ? t : deadline;
}

static int read_reply(int fd, bool is_head, int64_t deadline, int64_t timeout_ms,
                      const char *where, const stream_to *sink, http_reply *out, char *err, size_t errlen)
{
    bool streaming = false;
    http_parser p;
    http_parser_init(&p, HTTP_KIND_RESPONSE, &reply_limits);
    if (is_head) http_parser_skip_body(&p);
    size_t cap = 16 * 1024, len = 0, off = 0;
    char *rb = xmalloc(cap);
    bool final = false, eof = false, got_any = false;
    int rc = 0;
    while (!rc) {
        size_t used = 0;
        view bv = {0};
        http_event ev;
        if (eof && off == len) ev = http_parse_eof(&p);
        else ev = http_parse(&p, rb + off, len - off, &used, &bv);
        const char *data = rb + off;
        off += used;
        if (ev == HTTP_EV_HEAD) {
            final = p.msg.status >= 200;
            if (final) take_head(out, &p.msg, data);
            if (final && sink && p.msg.status / 100 == 2) {
                streaming = true;
                deadline = INT64_MAX; /* a follow has no end of its own: the user ends it (stop) */
                if (sink->on_tick && sink->tick_ms > 0 && !sink->on_tick(sink->ud)) break;
            }
            /* 1xx (100 Continue) is informational: the real reply follows */
            else if (is_head) http_parser_skip_body(&p);
        } else if (ev == HTTP_EV_BODY && streaming) {
            if (!sink->on_body(bv.p, bv.len, sink->ud)) break;
        } else if (ev == HTTP_EV_BODY) {
            buf_add(&out->body, bv.p, bv.len);
        } else if (ev == HTTP_EV_DONE) {
            if (final) break;
        } else if (ev == HTTP_EV_ERROR && p.err.code == HTTP_E_TRUNCATED) {
            rc = errf_ret(HTTPC_E_PROTOCOL, err, errlen,
                      "'%s' closed the connection inside its reply", where);
        } else if (ev == HTTP_EV_ERROR) {
            rc = errf_ret(HTTPC_E_PROTOCOL, err, errlen, "bad reply from '%s': %s", where,
                      p.err.msg);
        } else if (eof) {
            rc = got_any ? errf_ret(HTTPC_E_PROTOCOL, err, errlen, "'%s' closed the connection inside its reply", where)
                         : errf_ret(HTTPC_E_GONE, err, errlen, "'%s' closed the connection without a reply", where);
        } else {
            if (off == len) off = len = 0;
            if (off > 0) {
                memmove(rb, rb + off, len - off);
                len -= off;
                off = 0;
            }
            if (cap - len < 4096) rb = xrealloc(rb, cap *= 2);
            ssize_t n = recv(fd, rb + len, cap - len, 0);
            if (n > 0) {
                len += (size_t)n;
                got_any = true;
            } else if (n == 0) {
                eof = true;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int w = wait_fd(fd, POLLIN, wait_deadline(sink, streaming, deadline), sink ? sink->stop : NULL);
                if (w == -2)
                    break;
                else if (w == 0 && streaming && sink->on_tick && sink->tick_ms > 0) {
                    if (!sink->on_tick(sink->ud)) break;
                } else if (w == 0)
                    rc = errf_ret(HTTPC_E_TIMEOUT, err, errlen,
                              "timed out after %lld ms waiting for the reply from '%s'",
                              (long long)timeout_ms, where);
                else if (w < 0)
                    rc = errf_ret(HTTPC_E_IO, err, errlen, "poll: %s", strerror(errno));
            } else if (errno != EINTR) {
                rc = errf_ret(!got_any && errno == ECONNRESET ? HTTPC_E_GONE : HTTPC_E_IO, err, errlen,
                          "reading from '%s': %s", where, strerror(errno));
            }
        }
    }
    free(rb);
    http_parser_release(&p);
    return rc;
}

static int exchange(const char *where, const char *method, const char *target, const char *content_type,
                    const char *body, size_t len, int64_t timeout_ms, const stream_to *sink, http_reply *out,
                    char *err, size_t errlen)
{
    int64_t deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    memset(out, 0, sizeof *out);
    buf_init(&out->body);
    if (err && errlen) err[0] = 0;
    if (!where || !method || !target || timeout_ms <= 0)
        return errf_ret(HTTPC_E_IO, err, errlen, "http_request: bad arguments");
    /* never let a caller's string split the request line or a field */
    for (const char *s = method; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return errf_ret(HTTPC_E_IO, err, errlen, "bad method '%s'", method);
    for (const char *s = target; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return errf_ret(HTTPC_E_IO, err, errlen, "bad request target '%s'", target);
    if (content_type)
        for (const char *s = content_type; *s; s++)
            if ((unsigned char)*s < ' ' || *s == 0x7f)
                return errf_ret(HTTPC_E_IO, err, errlen, "bad content type");

    int fd = -1;
    int rc = do_connect(where, deadline, timeout_ms, &fd, err, errlen);
    if (rc) return rc;

    buf req = BUF_INIT;
    bool unix_sock = strchr(where, '/') != NULL;
    buf_printf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target,
               unix_sock ? "localhost" : where);
    if (content_type) buf_printf(&req, "Content-Type: %s\r\n", content_type);
    if (body || len) buf_printf(&req, "Content-Length: %zu\r\n", len);
    buf_adds(&req, "Connection: close\r\n\r\n");
    if (len) buf_add(&req, body, len); /* one send: one segment for a small request */
    rc = send_all(fd, req.p, req.len, deadline, timeout_ms, where, err, errlen);
    buf_release(&req);
    if (!rc)
        rc = read_reply(fd, strcmp(method, "HEAD") == 0, deadline, timeout_ms, where, sink, out, err,
                        errlen);
    close(fd);
    if (rc) http_reply_release(out);
    return rc;
}

int http_request(const char *where, const char *method, const char *target,
                 const char *content_type, const char *body, size_t len, int64_t timeout_ms,
                 http_reply *out, char *err, size_t errlen)
{
    return exchange(where, method, target, content_type, body, len, timeout_ms, NULL, out, err, errlen);
}

int http_request_stream(const char *where, const char *target, int64_t timeout_ms, const http_stream_opts *o,
                        http_reply *out, char *err, size_t errlen)
{
    return exchange(where, "GET", target, NULL, NULL, 0, timeout_ms, o, out, err, errlen);
}

void http_reply_release(http_reply *r)
{
    free(r->head);
    free(r->fields);
    buf_release(&r->body);
    memset(r, 0, sizeof *r);
    buf_init(&r->body);
}

const view *http_reply_field(const http_reply *r, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < r->n_fields; i++)
        if (r->fields[i].name.len == n && strncasecmp(r->fields[i].name.p, name, n) == 0)
            return &r->fields[i].value;
    return NULL;
}

int http_client_exit_code(int rc)
{
    switch (rc) {
    case HTTPC_OK: return 0;
    case HTTPC_E_CONNECT:
    case HTTPC_E_GONE: return 3;
    case HTTPC_E_TIMEOUT: return 4;
    default: return 1;
    }
}
