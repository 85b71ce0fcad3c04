/* client.c (oai) - the helpers' client: streaming POSTs through libcurl multi on a
 * libuv loop (curl_multi_socket_action).  curl says which sockets to watch
 * (CURLMOPT_SOCKETFUNCTION: one uv_poll_t each) and when it next needs
 * time (CURLMOPT_TIMERFUNCTION: one uv_timer_t); completions come from
 * curl_multi_info_read after each action.
 *
 * Timestamps are CLOCK_MONOTONIC ns taken where the bytes are: t_send in
 * CURLOPT_PREREQFUNCTION (connection up, request about to be written),
 * t_hdr at the blank line that ends the final header block, and one stamp
 * per write callback shared by the SSE events it completes (events that
 * arrive in one read are one arrival).  Nothing allocates per token beyond
 * what sse/breq keep.
 *
 * Connections are kept for reuse (CURLMOPT_MAXCONNECTS >= concurrency, no
 * per-host cap) so a closed loop runs on warm keep-alive connections, as a
 * real client pool would.  HTTP/1.1 only: one stream per connection, the
 * shape every serving benchmark measures. */
#include "oai/client.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "oai/sse.h"
#include "util/buf.h"
#include "util/errf.h"

#define ERRBODY_MAX 4096
#define SSE_MAX_EVENT (8u << 20)

typedef struct sockctx sockctx;
typedef struct xfer xfer;

struct sockctx {
    uv_poll_t poll;
    bclient *c;
    curl_socket_t fd;
    int events; /* the uv events curl asked for */
    bool closing;
    sockctx *prev, *next;
};

struct xfer {
    bclient *c;
    CURL *easy;
    breq *r;
    void *ud;
    struct curl_slist *hdrs;
    sse_parser sse;
    int64_t now;  /* the current write callback's stamp */
    int status;   /* of the last status line seen */
    buf errbody;  /* non-2xx: the head of the body */
    char errbuf[CURL_ERROR_SIZE];
    xfer *prev, *next;
};

struct bclient {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer;
    bclient_opts o;
    long in_flight;
    uint64_t bytes_in;
    xfer *xfers;
    sockctx *socks;
    int open_handles; /* uv handles whose close callback has not run */
    bool closed;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int64_t bclient_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- sockets and the timer ---------------------------------------------- */

static void check_done(bclient *c);

static void on_handle_closed(uv_handle_t *h)
{
    bclient *c = h->data;
    c->open_handles--;
}

static void on_sock_closed(uv_handle_t *h)
{
    sockctx *s = h->data;
    s->c->open_handles--;
    free(s);
}

static void sock_close(sockctx *s)
{
    bclient *c = s->c;
    if (s->closing)
        return;
    s->closing = true;
    if (s->prev)
        s->prev->next = s->next;
    else
        c->socks = s->next;
    if (s->next)
        s->next->prev = s->prev;
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, on_sock_closed);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    sockctx *s = h->data;
    bclient *c = s->c;
    int flags = 0;
    if (status < 0) {
        /* EPOLLERR/EPOLLHUP (libuv says UV_EBADF with no events and stops
         * the handle): a reply may sit in the socket buffer before a
         * reset.  Let curl read and write, so it takes the data and then
         * finds the error itself (recv/send say what it is); CSELECT_ERR
         * alone would drop both.  Watch again for what curl asked. */
        flags = CURL_CSELECT_IN | CURL_CSELECT_OUT;
        if (s->events && !s->closing)
            uv_poll_start(&s->poll, s->events, on_poll);
    } else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    int running;
    curl_multi_socket_action(c->multi, s->fd, flags, &running);
    check_done(c);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    bclient *c = userp;
    sockctx *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(c->multi, fd, NULL);
            sock_close(s);
        }
        return 0;
    }
    if (!s) {
        s = xcalloc(1, sizeof *s);
        s->c = c;
        s->fd = fd;
        if (uv_poll_init_socket(c->loop, &s->poll, fd) < 0) {
            free(s);
            return -1; /* curl fails the transfer */
        }
        s->poll.data = s;
        c->open_handles++;
        s->next = c->socks;
        if (c->socks)
            c->socks->prev = s;
        c->socks = s;
        curl_multi_assign(c->multi, fd, s);
    }
    int ev = 0;
    if (what & CURL_POLL_IN)
        ev |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        ev |= UV_WRITABLE;
    s->events = ev;
    uv_poll_start(&s->poll, ev, on_poll);
    return 0;
}

static void on_curl_timer(uv_timer_t *t)
{
    bclient *c = t->data;
    int running;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

static int on_timer_set(CURLM *m, long timeout_ms, void *userp)
{
    bclient *c = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, on_curl_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---- one transfer -------------------------------------------------------- */

static bool is_2xx(int st)
{
    return st >= 200 && st < 300;
}

static int on_prereq(void *ud, char *ip, char *local_ip, int port, int local_port)
{
    xfer *x = ud;
    x->r->t_send = bclient_now_ns();
    return CURL_PREREQFUNC_OK;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    if (len > 9 && memcmp(p, "HTTP/", 5) == 0) {
        const char *sp = memchr(p, ' ', len);
        if (sp)
            x->status = atoi(sp + 1);
    } else if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) {
        if (x->status >= 200) { /* 1xx blocks are interim */
            x->r->t_hdr = bclient_now_ns();
            x->r->status = x->status;
        }
    }
    return len;
}

static void on_event(void *ud, const char *type, const char *data, size_t len)
{
    xfer *x = ud;
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0)
        return;
    breq_on_data(x->r, x->now, data, len);
    if (x->c->o.data) x->c->o.data(x->c->o.ud, x->r, x->ud, data, len);
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    x->now = bclient_now_ns();
    x->r->bytes_in += len;
    x->c->bytes_in += len;
    if (!is_2xx(x->status)) {
        size_t room = ERRBODY_MAX - x->errbody.len;
        buf_add(&x->errbody, p, len < room ? len : room);
        return len;
    }
    if (sse_feed(&x->sse, p, len) < 0) {
        breq_fail(x->r, "stream from %s: %s", x->c->o.url, sse_error(&x->sse));
        return 0; /* abort the transfer */
    }
    return len;
}

/* The server's message from an error body: OpenAI/llama {"error":
 * {"message"}}, {"error": "..."}, FastAPI {"detail": ...}, {"message"};
 * else the body's head on one line. */
static void error_text(const buf *body, char *out, size_t outlen)
{
    cJSON *j = cJSON_ParseWithLength(body->p, body->len), *m = NULL;
    if (cJSON_IsObject(j)) {
        cJSON *e = cJSON_GetObjectItem(j, "error");
        if (cJSON_IsObject(e))
            m = cJSON_GetObjectItem(e, "message");
        else if (cJSON_IsString(e))
            m = e;
        if (!cJSON_IsString(m))
            m = cJSON_GetObjectItem(j, "detail");
        if (!cJSON_IsString(m))
            m = cJSON_GetObjectItem(j, "message");
    }
    if (cJSON_IsString(m) && *m->valuestring) {
        snprintf(out, outlen, "%s", m->valuestring);
    } else {
        size_t o = 0;
        bool space = false;
        for (size_t i = 0; i < body->len && o + 1 < outlen && o < 200; i++) {
            unsigned char ch = (unsigned char)body->p[i];
            if (ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ') {
                space = o > 0;
                continue;
            }
            if (ch < 0x20 || ch == 0x7f)
                continue;
            if (space && o + 2 < outlen)
                out[o++] = ' ';
            space = false;
            out[o++] = (char)ch;
        }
        out[o] = 0;
        if (!o)
            snprintf(out, outlen, "(empty body)");
    }
    cJSON_Delete(j);
}

static void xfer_fail_transport(xfer *x, CURLcode rc)
{
    const char *url = x->c->o.url;
    const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);
    long os_errno = 0;
    curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &os_errno);
    breq *r = x->r;
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        breq_fail(r, "connect to %s: %s", url, os_errno ? strerror((int)os_errno) : detail);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        breq_fail(r, "resolve the host of %s: %s", url, detail);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        if (!r->t_send)
            breq_fail(r, "timed out after %lld ms connecting to %s", (long long)x->c->o.timeout_ms, url);
        else if (!r->t_hdr)
            breq_fail(r, "timed out after %lld ms waiting for the response of %s", (long long)x->c->o.timeout_ms,
                      url);
        else
            breq_fail(r, "timed out after %lld ms mid-stream from %s (%zu bytes received)",
                      (long long)x->c->o.timeout_ms, url, r->bytes_in);
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        breq_fail(r, "connection to %s lost after %zu body bytes: %s", url, r->bytes_in, detail);
        break;
    default:
        breq_fail(r, "request to %s: %s", url, detail);
        break;
    }
}

static void xfer_free(xfer *x)
{
    bclient *c = x->c;
    if (x->prev)
        x->prev->next = x->next;
    else
        c->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    curl_multi_remove_handle(c->multi, x->easy);
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    sse_release(&x->sse);
    buf_release(&x->errbody);
    c->in_flight--;
    free(x);
}

/* Settle r after curl said done (rc) or we ended it (why != NULL). */
static void xfer_end(xfer *x, CURLcode rc, const char *why)
{
    bclient *c = x->c;
    breq *r = x->r;
    void *ud = x->ud;
    int64_t now = bclient_now_ns();
    if (why)
        breq_fail(r, "%s", why);
    else if (rc != CURLE_OK)
        xfer_fail_transport(x, rc);
    else if (!is_2xx(x->status)) {
        char msg[512];
        error_text(&x->errbody, msg, sizeof msg);
        breq_fail(r, "HTTP %d from %s: %s", x->status, c->o.url, msg);
    }
    if (x->status && !r->status)
        r->status = x->status;
    breq_finish(r, now);
    xfer_free(x);
    c->o.done(c->o.ud, r, ud, now);
}

static void check_done(bclient *c)
{
    CURLMsg *m;
    int left;
    while (!c->closed && (m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        xfer *x = NULL;
        CURLcode rc = m->data.result;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        if (x)
            xfer_end(x, rc, NULL);
    }
}

void bclient_send(bclient *c, breq *r, const char *body, size_t len, const char *request_id, void *req_ud)
{
    xfer *x = xcalloc(1, sizeof *x);
    x->c = c;
    x->r = r;
    x->ud = req_ud;
    buf_init(&x->errbody);
    sse_init(&x->sse, SSE_MAX_EVENT, on_event, NULL, x);
    x->hdrs = curl_slist_append(x->hdrs, "Content-Type: application/json");
    x->hdrs = curl_slist_append(x->hdrs, "Accept: text/event-stream");
    x->hdrs = curl_slist_append(x->hdrs, "Expect:");
    if (request_id) {
        char h[160];
        snprintf(h, sizeof h, "X-Request-Id: %s", request_id);
        x->hdrs = curl_slist_append(x->hdrs, h);
    }
    for (const char *const *h = c->o.headers; h && *h; h++)
        x->hdrs = curl_slist_append(x->hdrs, *h);

    x->next = c->xfers;
    if (c->xfers)
        c->xfers->prev = x;
    c->xfers = x;
    c->in_flight++;

    CURL *e = x->easy = curl_easy_init();
    if (!e || !x->hdrs) {
        if (e)
            curl_easy_cleanup(e);
        x->easy = NULL;
        breq_fail(r, "request to %s: libcurl could not make a handle (out of memory)", c->o.url);
        /* report through done like any failure, without touching curl */
        if (x->prev)
            x->prev->next = x->next;
        else
            c->xfers = x->next;
        if (x->next)
            x->next->prev = x->prev;
        c->in_flight--;
        curl_slist_free_all(x->hdrs);
        sse_release(&x->sse);
        buf_release(&x->errbody);
        int64_t now = bclient_now_ns();
        breq_finish(r, now);
        free(x);
        c->o.done(c->o.ud, r, req_ud, now);
        return;
    }
    curl_easy_setopt(e, CURLOPT_URL, c->o.url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->o.timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    CURLMcode mc = curl_multi_add_handle(c->multi, e);
    if (mc != CURLM_OK) {
        breq_fail(r, "request to %s: curl_multi_add_handle: %s", c->o.url, curl_multi_strerror(mc));
        int64_t now = bclient_now_ns();
        breq_finish(r, now);
        curl_easy_setopt(e, CURLOPT_PRIVATE, NULL);
        xfer_free(x);
        c->o.done(c->o.ud, r, req_ud, now);
    }
}

/* ---- the client ---------------------------------------------------------- */

bclient *bclient_new(uv_loop_t *loop, const bclient_opts *o, char *err, size_t errlen)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        errf(err, errlen, "libcurl: curl_global_init: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    bclient *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->o = *o;
    c->multi = curl_multi_init();
    if (!c->multi) {
        errf(err, errlen, "libcurl: curl_multi_init failed");
        free(c);
        return NULL;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer_set);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, o->max_conns > 0 ? o->max_conns : 16L);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    c->open_handles = 1;
    return c;
}

long bclient_in_flight(const bclient *c)
{
    return c->in_flight;
}

uint64_t bclient_bytes_in(const bclient *c)
{
    return c->bytes_in;
}

void bclient_abort_all(bclient *c, const char *why)
{
    while (c->xfers)
        xfer_end(c->xfers, CURLE_OK, why);
}

void bclient_close(bclient *c)
{
    if (c->closed)
        return;
    c->closed = true;
    bclient_abort_all(c, "client stopped");
    for (sockctx *s = c->socks; s; s = s->next)
        uv_poll_stop(&s->poll);
    curl_multi_cleanup(c->multi); /* closes the kept connections */
    c->multi = NULL;
    while (c->socks)
        sock_close(c->socks);
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

void bclient_free(bclient *c)
{
    if (!c)
        return;
    if (c->open_handles) /* the loop did not finish the closes: leak, not crash */
        return;
    free(c);
}

int bclient_fd_budget(long streams, char *err, size_t errlen)
{
    long need = streams + 64; /* curl's resolver, the loop, stdio */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        errf(err, errlen, "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
        return -1;
    }
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_cur == RLIM_INFINITY)
        return 0;
    if (rl.rlim_max != RLIM_INFINITY && (long)rl.rlim_max < need) {
        errf(err, errlen,
             "%ld streams need about %ld open files, but the hard limit (RLIMIT_NOFILE) is %ld: "
             "raise it (ulimit -Hn, or LimitNOFILE= in a unit) or lower the concurrency",
             streams, need, (long)rl.rlim_max);
        return -1;
    }
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        errf(err, errlen, "raise RLIMIT_NOFILE's soft limit to %ld for %ld streams: %s", (long)rl.rlim_max,
             need - 64, strerror(errno));
        return -1;
    }
    return 0;
}
