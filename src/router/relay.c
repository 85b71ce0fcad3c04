/* relay.c - one request through the router: read the whole body (its
 * top-level "model" through modelscan, and keep_alive, which the router
 * takes out: keepalive.h), route it, wait for the service if it is not
 * ready (the activator), then send the body to the backend and stream the
 * backend's answer to the client.  /upstream/{service}/... bodies are not
 * read: they stream to the backend as they come.
 *
 * Design: a relay is a small state machine driven by four sources of
 * callbacks (the client's body, the activator, the upstream, the
 * client's write queue); it ends in exactly one place (finish), which
 * ends the client's response if no path has, cancels whatever is still
 * pending, writes the access-log line and frees it.  The relay never
 * copies or inspects response bytes: each decoded span from the backend
 * is handed to srv_write as it comes (the server frames it), with
 * backpressure both ways (a congested client pauses the upstream until
 * on_drain; a congested upstream pauses the client's body until
 * on_writable).  What reaches the client is byte-identical to the
 * backend's body except where docs/router.md says otherwise (the SSE
 * loading comments and error events of a request that waited, an error
 * event when the backend dies inside a stream). */
#include "router/keepalive.h"
#include "router/rint.h"
#include "util/log.h"
#include "util/clock.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum rphase {
    RP_SCAN,     /* reading the whole body (the model, keep_alive) */
    RP_ACTIVATE, /* waiting for the activator */
    RP_PARKED,   /* its service drains: waiting for that to end */
    RP_RESOLVE,  /* waiting for the remote's address */
    RP_LIST,     /* waiting for a router-mode service's list: which model to send */
    RP_MODEL,    /* waiting for the gated load of a router-mode service's model */
    RP_UP,       /* the upstream request is under way */
} rphase;

#define ERRBODY_MAX 8192

struct relay {
    router *rt;
    srv_conn *c;
    const http_msg *m;
    relay *prev, *next;   /* rt->all */
    relay *sprev, *snext; /* one of the service's lists */
    relay **list;         /* which one */
    rphase phase;
    rep ep;
    bool anthropic;
    rsvc *svc; /* a reference */
    bool scan;
    modelscan ms;
    char model[MODELSCAN_MAX_MODEL + 1];
    route_kind kind;                    /* how model matched */
    char send[MODELSCAN_MAX_MODEL + 1]; /* the model the engine gets instead, "" for model itself */
    bool list_asked;                    /* a list was fetched for it once */
    bool ka_present, ka_found;          /* a top-level keep_alive (found: not null) */
    int64_t ka_ms;                      /* its value (keepalive.h) */
    bool forwarded;                     /* its upstream request started: activity on svc */
    char *target;
    buf held;       /* body bytes held until the upstream starts */
    size_t counted; /* of them, counted in rt->body_held */
    bool body_last;
    int64_t content_length; /* the client's, -1 chunked */
    upstream_req *up;
    act_wait *aw;
    uint64_t
        load_ticket;  /* the gated load of its model (router_host.load_model) in flight; 0: none */
    bool model_gated; /* its model was found loaded, or loaded through the gate */
    bool waits;       /* counted in svc->n_waiting (RP_LIST, RP_MODEL) */
    bool *load_answered; /* inside load_model: set when its answer (or the relay's end) came at once
                          */
    int64_t wait_start_ms;
    bool up_paused, body_paused;
    bool head_sent; /* a response head went to the client */
    bool own_sse;   /* ... and it was ours: SSE while waiting */
    bool resp_sse;  /* the response is an event stream */
    bool want_sse;  /* the client asked for a stream */
    char tail[4];   /* the last bytes relayed to the client (SSE: does an event end there?) */
    size_t ntail;
    int up_status;
    buf errbody; /* own_sse and a backend error: its body */
    int status;  /* what the client got */
    bool ended;  /* the client's response has ended */
    bool client_gone;
    bool finished;
    uint64_t bytes_in, bytes_out;
    uint64_t t0, t_first; /* uv_hrtime */
    access_info ai;
};

/* ---- lists ---- */

relay *relay_next(relay *x)
{
    return x->snext;
}

void relay_list_add(relay **head, relay *x)
{
    x->sprev = NULL;
    x->snext = *head;
    if (*head) (*head)->sprev = x;
    *head = x;
    x->list = head;
}

void relay_list_del(relay **head, relay *x)
{
    if (x->list != head) return;
    if (x->sprev)
        x->sprev->snext = x->snext;
    else
        *head = x->snext;
    if (x->snext) x->snext->sprev = x->sprev;
    x->sprev = x->snext = NULL;
    x->list = NULL;
}

static void unlist(relay *x)
{
    if (!x->list || !x->svc) return;
    bool was_inflight = x->list == &x->svc->inflight;
    relay_list_del(x->list, x);
    if (was_inflight) {
        x->svc->n_inflight--;
        router_inflight_changed(x->rt, x->svc);
    }
}

/* A relay waiting on its service's engine (its list, a gated model
 * load) keeps the service busy for idle unload. */
static void wait_begin(relay *x)
{
    if (x->waits || !x->svc) return;
    x->waits = true;
    x->svc->n_waiting++;
    idle_touch(x->svc);
}

static void wait_end(relay *x)
{
    if (!x->waits) return;
    x->waits = false;
    x->svc->n_waiting--;
    idle_touch(x->svc);
}

/* ---- the end ---- */

static void held_release(relay *x)
{
    x->rt->body_held -= x->counted;
    x->counted = 0;
    buf_release(&x->held);
}

static void finish(relay *x)
{
    if (x->finished) return;
    x->finished = true;
    router *rt = x->rt;
    if (x->load_answered) *x->load_answered = true; /* model_gate must not touch x again */
    if (x->up) {
        upstream_abort(x->up);
        x->up = NULL;
    }
    if (x->aw) {
        act_cancel(x->aw);
        x->aw = NULL;
    }
    if (x->load_ticket && rt->h.cancel_load) rt->h.cancel_load(rt->h.ud, x->load_ticket);
    x->load_ticket = 0;
    wait_end(x);
    unlist(x);
    if (x->forwarded && x->svc) idle_request_ended(rt, x->svc);
    held_release(x);
    buf_release(&x->errbody);
    uint64_t now = uv_hrtime();
    int64_t ttfb = x->t_first ? (int64_t)((x->t_first - x->t0) / 1000) : -1;
    int64_t dur = (int64_t)((now - x->t0) / 1000);
    const char *svc = x->svc ? x->svc->id : NULL;
    const char *model = x->model[0] ? x->model : NULL;
    router_access_log(rt, &x->ai, model, svc, x->status, x->bytes_in, x->bytes_out, ttfb, dur,
                      x->client_gone);
    if (rt->rm) {
        rm_request(rt->rm, model, svc, x->client_gone && !x->head_sent ? 0 : x->status, x->bytes_in,
                   x->bytes_out, ttfb >= 0 ? (double)ttfb / 1e6 : -1.0, (double)dur / 1e6);
        rm_inflight(rt->rm, -1);
    }
    if (!x->ended) {
        /* the connection may carry the next pipelined request (another
         * relay) only after srv_end, so the pointer is still ours here */
        if (srv_conn_ud(x->c) == x) srv_conn_set_ud(x->c, NULL);
        x->ended = true;
        srv_end(x->c); /* frees c when the peer has gone */
    }
    /* x->c is not touched after srv_end: it may be freed, or answering
     * the next request on the connection */
    if (x->prev)
        x->prev->next = x->next;
    else
        rt->all = x->next;
    if (x->next) x->next->prev = x->prev;
    if (x->svc) rsvc_unref(x->svc);
    free(x->target);
    free(x);
}

/* "event: error" with the error JSON: how a stream that has begun learns
 * that it failed. */
static void tail_note(relay *x, const char *p, size_t n)
{
    if (n >= 4) {
        memcpy(x->tail, p + n - 4, 4);
        x->ntail = 4;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (x->ntail == 4) {
            memmove(x->tail, x->tail + 1, 3);
            x->ntail = 3;
        }
        x->tail[x->ntail++] = p[i];
    }
}

/* Whether what went to the client ends between two SSE events (a blank
 * line: \n\n, \r\r or \r\n\r\n), or nothing went yet. */
static bool sse_at_boundary(const relay *x)
{
    const char *t = x->tail;
    size_t n = x->ntail;
    if (!n) return true;
    if (n >= 2 &&
        ((t[n - 2] == '\n' && t[n - 1] == '\n') || (t[n - 2] == '\r' && t[n - 1] == '\r')))
        return true;
    return n == 4 && !memcmp(t, "\r\n\r\n", 4);
}

static void sse_error(relay *x, int status, const char *code, const char *message)
{
    buf j = BUF_INIT, b = BUF_INIT;
    router_error_json(&j, x->anthropic, status, code, message);
    /* a half-written event is ended first, so the error is an event of its own */
    if (!sse_at_boundary(x)) buf_adds(&b, "\n\n");
    buf_printf(&b, "event: error\ndata: %s\n\n", j.p);
    if (srv_write(x->c, b.p, b.len) == 0) x->bytes_out += b.len;
    buf_release(&j);
    buf_release(&b);
}

/* Answer with an error and finish: a JSON error when nothing was sent
 * yet, an SSE error event inside a stream, else a closed connection (the
 * client sees a truncated body). */
static void fail(relay *x, int status, const char *code, const char *message, int retry_after_s)
{
    if (x->finished) return;
    if (x->up) {
        upstream_abort(x->up);
        x->up = NULL;
    }
    if (!x->ended) {
        if (srv_conn_ud(x->c) == x) srv_conn_set_ud(x->c, NULL);
        if (!x->head_sent) {
            buf b = BUF_INIT;
            router_error_json(&b, x->anthropic, status, code, message);
            buf_addc(&b, '\n');
            x->status = status;
            x->ended = true;
            x->bytes_out += b.len;
            router_respond(x->rt, x->c, x->m, status, "application/json", b.p, b.len,
                           retry_after_s);
            buf_release(&b);
        } else if (x->own_sse || x->resp_sse) {
            sse_error(x, status, code, message);
            x->ended = true;
            srv_end(x->c);
        } else {
            x->ended = true;
            srv_close_response(x->c);
        }
    }
    finish(x);
}

void relay_kill(relay *x, int status, const char *code, const char *message)
{
    fail(x, status, code, message, 0);
}

void relay_client_gone(relay *x)
{
    /* the server itself answered (413 body too large, 408 body deadline,
     * a malformed body): the client got that status, it did not leave */
    int st = x->ended ? 0 : srv_conn_fail_status(x->c);
    if (st) {
        x->status = st;
        x->head_sent = true;
        x->bytes_out += srv_conn_fail_bytes(x->c);
    } else {
        x->client_gone = true;
    }
    if (x->up) { /* the backend must see the disconnect now, so it stops generating */
        upstream_abort(x->up);
        x->up = NULL;
    }
    finish(x);
}

void relay_client_drained(relay *x)
{
    if (x->up && x->up_paused) {
        x->up_paused = false;
        upstream_resume(x->up);
    }
}

/* ---- the upstream ---- */

static bool field_is(const http_field *f, const char *name)
{
    size_t n = strlen(name);
    return f->name.len == n && !strncasecmp(f->name.p, name, n);
}

static void up_head(upstream_req *r, const http_msg *m, void *ud)
{
    relay *x = ud;
    x->up_status = m->status;
    for (size_t i = 0; i < m->n_fields; i++)
        if (field_is(&m->fields[i], "content-type") && m->fields[i].value.len >= 17 &&
            !strncasecmp(m->fields[i].value.p, "text/event-stream", 17))
            x->resp_sse = true;
    if (x->own_sse) return; /* our SSE head went out while it waited */
    size_t olen = 0;
    const char *origin = router_cors_origin(x->rt, x->m, &olen);
    http_field stackf[64];
    size_t n = m->n_fields + 3;
    http_field *f = n <= 64 ? stackf : xmalloc(n * sizeof *f);
    size_t k = 0;
    for (size_t i = 0; i < m->n_fields; i++) {
        /* the backend's CORS fields never reach the client: the router's
         * own (for an allowed origin) replace them */
        if (m->fields[i].name.len >= 15 && !strncasecmp(m->fields[i].name.p, "access-control-", 15))
            continue;
        f[k++] = m->fields[i];
    }
    if (origin) {
        f[k++] = (http_field){{"Access-Control-Allow-Origin", 27}, {origin, olen}};
        f[k++] = (http_field){{"Vary", 4}, {"Origin", 6}};
    }
    int64_t len = m->framing == HTTP_FRAME_LENGTH ? (int64_t)m->content_length : -1;
    x->status = m->status;
    x->head_sent = true;
    srv_respond_head(x->c, m->status, f, k, len);
    if (f != stackf) free(f);
}

static void up_data(upstream_req *r, const view *d, void *ud)
{
    relay *x = ud;
    if (!x->t_first) x->t_first = uv_hrtime();
    if (x->own_sse && (x->up_status < 200 || x->up_status > 299)) {
        if (x->errbody.len < ERRBODY_MAX)
            buf_add(&x->errbody, d->p,
                    d->len < ERRBODY_MAX - x->errbody.len ? d->len : ERRBODY_MAX - x->errbody.len);
        return;
    }
    if (srv_write(x->c, d->p, d->len) == 0) x->bytes_out += d->len;
    if (x->resp_sse || x->own_sse) tail_note(x, d->p, d->len);
    if (!x->up_paused && srv_conn_congested(x->c)) {
        x->up_paused = true;
        upstream_pause(x->up);
    }
}

/* A backend's error body while our SSE head is out: its message, if it
 * has one in either shape, else the body itself. */
static void errbody_message(relay *x, buf *out)
{
    cJSON *j = cJSON_ParseWithLength(x->errbody.p, x->errbody.len);
    const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
    const cJSON *msg = e ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
    if (cJSON_IsString(msg))
        buf_printf(out, "backend '%s' answered %d: %s", x->svc->id, x->up_status, msg->valuestring);
    else
        buf_printf(out, "backend '%s' answered %d: %.*s", x->svc->id, x->up_status,
                   (int)x->errbody.len, x->errbody.p);
    cJSON_Delete(j);
}

static void up_end(upstream_req *r, int err, const char *msg, void *ud)
{
    relay *x = ud;
    x->up = NULL;
    if (!x->t_first) x->t_first = uv_hrtime();
    if (err == 0) {
        if (x->own_sse && (x->up_status < 200 || x->up_status > 299)) {
            buf m = BUF_INIT;
            errbody_message(x, &m);
            x->status = x->up_status;
            fail(x, x->up_status, "upstream_error", m.p, 0);
            buf_release(&m);
            return;
        }
        if (!x->ended) {
            if (srv_conn_ud(x->c) == x) srv_conn_set_ud(x->c, NULL);
            x->ended = true;
            srv_end(x->c);
        }
        finish(x);
        return;
    }
    int status = err == UPSTREAM_E_TIMEOUT ? 504 : 502;
    const char *code = err == UPSTREAM_E_TIMEOUT   ? "upstream_timeout"
                       : err == UPSTREAM_E_CONNECT ? "upstream_unreachable"
                                                   : "upstream_error";
    if (err == UPSTREAM_E_REQUEST) { /* the client's body did not match its length: its fault */
        status = 400;
        code = "bad_request";
    }
    char m2[640];
    snprintf(m2, sizeof m2, "service '%s': %s", x->svc->id, msg ? msg : "upstream failed");
    log_warn("router: %s%s", m2, x->head_sent ? " (inside the response)" : "");
    fail(x, status, code, m2, 0);
}

static void up_writable(upstream_req *r, void *ud)
{
    relay *x = ud;
    if (x->body_paused) {
        x->body_paused = false;
        srv_resume_body(x->c); /* may call relay_body from inside */
    }
}

static const upstream_cbs up_cbs = {up_head, up_data, up_end, up_writable};

/* The body ended: the scan must agree it is one valid object. */
static bool scan_finish(relay *x)
{
    if (!x->scan) return true;
    if (modelscan_finish(&x->ms) == MODELSCAN_ERROR) {
        fail(x, 400, "invalid_json", x->ms.err.msg, 0);
        return false;
    }
    return true;
}

static bool scan_feed(relay *x, const view *chunk)
{
    if (!x->scan || !chunk->len) return true;
    if (modelscan_feed(&x->ms, chunk->p, chunk->len) == MODELSCAN_ERROR) {
        const char *code =
            x->ms.err.code == MODELSCAN_E_NO_MODEL ? "model_missing" : "invalid_json";
        fail(x, 400, code, x->ms.err.msg, 0);
        return false;
    }
    return true;
}

/* The body's keep_alive, read once the body is complete: false when it
 * was refused (answered 400). */
static bool ka_take(relay *x)
{
    if (!x->scan) return true;
    ka_member k;
    char err[600];
    if (ka_find(x->held.p, x->held.len, &k, err, sizeof err)) {
        fail(x, 400, "invalid_keep_alive", err, 0);
        return false;
    }
    x->ka_present = k.present;
    x->ka_found = k.found;
    x->ka_ms = k.ms;
    return true;
}

/* keep_alive is the router's: the engine never sees it. */
static void ka_strip(relay *x)
{
    ka_member k;
    char err[600];
    if (!x->ka_present || ka_find(x->held.p, x->held.len, &k, err, sizeof err) || !k.present)
        return;
    memmove(x->held.p + k.cut_start, x->held.p + k.cut_end, x->held.len - k.cut_end);
    x->held.len -= k.cut_end - k.cut_start;
    x->held.p[x->held.len] = 0;
}

static void start_upstream(relay *x, upstream_pool *pool)
{
    router *rt = x->rt;
    rsvc *s = x->svc;
    const http_msg *m = x->m;
    if (x->send[0]) {
        buf out = BUF_INIT;
        int64_t delta = 0;
        if (modelscan_rewrite(&x->ms, x->held.p, x->held.len, x->send, &out, &delta) == 0) {
            buf_release(&x->held);
            x->held = out;
            if (x->content_length >= 0) x->content_length += delta;
        } else {
            buf_release(&out);
        }
    }
    if (x->scan) {
        ka_strip(x);
        if (x->content_length >= 0)
            x->content_length = (int64_t)x->held.len; /* the whole body is held */
    }
    if (x->ka_found) { /* the last request's keep_alive wins */
        s->ka_set = true;
        s->ka_ms = x->ka_ms;
    } else if (x->scan) { /* none (or null): the configured timeout again, as Ollama */
        s->ka_set = false;
    }
    http_field stackf[64];
    size_t cap = m->n_fields;
    http_field *f = cap <= 64 ? stackf : xmalloc(cap * sizeof *f);
    size_t k = 0;
    for (size_t i = 0; i < m->n_fields; i++)
        if (rsvc_forward_field(s, &m->fields[i])) f[k++] = m->fields[i];
    http_field extra[1];
    size_t ne = 0;
    if (s->auth) extra[ne++] = (http_field){{"Authorization", 13}, {s->auth, strlen(s->auth)}};
    upstream_head h = {.method = m->method,
                       .target = {x->target, strlen(x->target)},
                       .fields = f,
                       .n_fields = k,
                       .extra = extra,
                       .n_extra = ne,
                       .body_len = x->content_length};
    x->up = upstream_start(pool, &h, &up_cbs, x);
    if (f != stackf) free(f);
    if (!x->up) {
        fail(x, 503, "unavailable", "the router is closing", 0);
        return;
    }
    x->phase = RP_UP;
    relay_list_add(&s->inflight, x);
    s->n_inflight++;
    x->forwarded = true;
    idle_touch(s);
    if (x->held.len) upstream_write(x->up, x->held.p, x->held.len);
    held_release(x);
    if (x->body_last) {
        upstream_end(x->up);
    } else if (upstream_congested(x->up)) {
        x->body_paused = true;
        srv_pause_body(x->c);
    }
    (void)rt;
}

/* Which model the engine is sent (route_upstream), decided when the
 * service is ready: a router-mode service's list is known only then.
 * 1 decided (x->send), 0 waiting for the list, -1 answered. */
static int choose_model(relay *x)
{
    router *rt = x->rt;
    rsvc *s = x->svc;
    x->send[0] = 0;
    size_t idx = x->ep == EP_UPSTREAM ? SIZE_MAX : route_table_find_id(&rt->table, s->id);
    if (idx == SIZE_MAX) return 1;
    const char *m = NULL;
    buf e = BUF_INIT;
    int rc = route_upstream(&rt->table, idx, x->kind, &m, &e);
    if (rc == 0 && m && strcmp(m, x->model)) snprintf(x->send, sizeof x->send, "%s", m);
    if (rc < 0 && s->router_mode && !x->list_asked) {
        /* ready before its list came (or the list failed): ask once more */
        x->list_asked = true;
        rsvc_list_fetch(rt, s);
        if (s->listing) {
            x->phase = RP_LIST;
            relay_list_add(&s->listwait, x);
            wait_begin(x);
            buf_release(&e);
            return 0;
        }
    }
    if (rc < 0) fail(x, 400, "model_not_found", e.p, 0);
    buf_release(&e);
    return rc < 0 ? -1 : 1;
}

static void go(relay *x);

static void model_loaded(const rh_result *r, void *ud)
{
    relay *x = ud;
    x->load_ticket = 0;
    wait_end(x);
    if (x->load_answered) { /* answered inside load_model: model_gate leaves x alone */
        *x->load_answered = true;
        x->load_answered = NULL;
    }
    if (r->status != 200) {
        fail(x, r->status, r->code ? r->code : "unavailable",
             r->message ? r->message : "the model could not be loaded", 0);
        return;
    }
    go(x);
}

/* A router-mode service's model that the engine has not loaded is loaded
 * through the daemon's gate first (the engine would load it unasked).  1
 * when x waits for that load (or was answered), 0 to go on. */
static int model_gate(relay *x)
{
    router *rt = x->rt;
    rsvc *s = x->svc;
    if (!s->router_mode || s->remote || x->ep == EP_UPSTREAM || x->model_gated ||
        !rt->h.load_model || !rt->h.model_state)
        return 0;
    x->model_gated = true;
    const char *m = x->send[0] ? x->send : x->model;
    if (rt->h.model_state(rt->h.ud, s->id, m) == 2) return 0;
    x->phase = RP_MODEL;
    wait_begin(x);
    /* the answer may come before load_model returns (a missing file, a
     * bad name, the daemon closing), and may free x: then x is not
     * touched again */
    bool answered = false;
    x->load_answered = &answered;
    uint64_t t = rt->h.load_model(rt->h.ud, s->id, m, model_loaded, x);
    if (answered) return 1;
    x->load_answered = NULL;
    x->load_ticket = t;
    return 1;
}

static void go(relay *x)
{
    rsvc *s = x->svc;
    if (s->draining || s->idle_op) { /* a leaving service gets no new request */
        x->phase = RP_PARKED;
        relay_list_add(&s->parked, x);
        return;
    }
    if (choose_model(x) <= 0) return;
    if (model_gate(x)) return;
    upstream_pool *pool = NULL;
    char err[512];
    int rc = rsvc_pool(x->rt, s, x, &pool, err, sizeof err);
    if (rc < 0) {
        log_warn("router: %s", err);
        fail(x, 502, "upstream_unreachable", err, 0);
        return;
    }
    if (rc == 0) {
        x->phase = RP_RESOLVE;
        return;
    }
    start_upstream(x, pool);
}

/* Our own SSE head, for a streaming request that waits: the client sees
 * progress comments at once rather than silence. */
static void own_sse_start(relay *x)
{
    if (x->head_sent || x->ended) return;
    size_t olen = 0;
    const char *origin = router_cors_origin(x->rt, x->m, &olen);
    http_field f[4] = {{{"Content-Type", 12}, {"text/event-stream", 17}},
                       {{"Cache-Control", 13}, {"no-cache", 8}}};
    size_t n = 2;
    if (origin) {
        f[n++] = (http_field){{"Access-Control-Allow-Origin", 27}, {origin, olen}};
        f[n++] = (http_field){{"Vary", 4}, {"Origin", 6}};
    }
    x->head_sent = x->own_sse = true;
    x->status = 200;
    srv_respond_head(x->c, 200, f, n, -1);
}

/* A top-level "stream": true in a complete body modelscan accepted (so
 * the JSON is valid and only keys at depth 1 matter).  Keys are compared
 * as written: an escaped "stream" key is not seen (docs/router.md). */
static bool body_streams(const char *p, size_t n)
{
    int depth = 0;
    bool key_next = false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < n && p[j] != '"')
                j += p[j] == '\\' ? 2 : 1;
            if (depth == 1 && key_next) {
                key_next = false;
                if (j - i - 1 == 6 && !memcmp(p + i + 1, "stream", 6)) {
                    size_t k = j + 1;
                    while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\n' || p[k] == '\r'))
                        k++;
                    if (k < n && p[k] == ':') k++;
                    while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\n' || p[k] == '\r'))
                        k++;
                    if (n - k >= 4 && !memcmp(p + k, "true", 4)) return true;
                }
            }
            i = j;
        } else if (c == '{' || c == '[') {
            depth++;
            if (depth == 1) key_next = true;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == ',' && depth == 1) {
            key_next = true;
        }
    }
    return false;
}

static void maybe_own_sse(relay *x)
{
    if ((x->phase != RP_ACTIVATE && x->phase != RP_MODEL) || x->head_sent) return;
    if (!x->want_sse && x->body_last && x->ms.found && body_streams(x->held.p, x->held.len))
        x->want_sse = true;
    if (x->want_sse) own_sse_start(x);
}

static void act_done(void *ud, int status, const char *code, const char *message, int retry_after_s)
{
    relay *x = ud;
    x->aw = NULL;
    if (status != 200) {
        fail(x, status, code ? code : "unavailable",
             message ? message : "the service could not be activated", retry_after_s);
        return;
    }
    go(x);
}

static void act_progress(void *ud, int pct, const char *state)
{
    relay *x = ud;
    if (!x->own_sse || x->ended) return;
    char b[96];
    int n = pct >= 0 ? snprintf(b, sizeof b, ": loading %d%%\n\n", pct)
                     : snprintf(b, sizeof b, ": loading (%s)\n\n", state ? state : "waiting");
    if (srv_write(x->c, b, (size_t)n) == 0) x->bytes_out += (uint64_t)n;
    tail_note(x, b, (size_t)n);
}

static void dispatch(relay *x)
{
    rsvc *s = x->svc;
    char msg[512];
    int retry = 0;
    if (x->rt->h.refused && x->rt->h.refused(x->rt->h.ud, s->id, msg, sizeof msg, &retry)) {
        /* a tune run measures this service: outside load would skew it */
        fail(x, 503, "tune_in_progress", msg, retry);
        return;
    }
    if (s->draining || s->idle_op) { /* a drain, or an idle unload in flight: wait for its end */
        x->phase = RP_PARKED;
        relay_list_add(&s->parked, x);
        return;
    }
    if (s->state == SVC_READY || x->ep == EP_UPSTREAM) {
        go(x);
        return;
    }
    x->phase = RP_ACTIVATE;
    x->wait_start_ms = clock_mono_ms();
    maybe_own_sse(x);
    x->aw = act_request(x->rt->act, s->id, act_done, act_progress, x);
}

void relay_redispatch(relay *x)
{
    wait_end(x);
    if (x->list) relay_list_del(x->list, x);
    dispatch(x);
}

/* The model is known: which service. */
static void route(relay *x)
{
    router *rt = x->rt;
    snprintf(x->model, sizeof x->model, "%s", x->ms.model);
    route_result res = route_resolve(&rt->table, x->model);
    if (res.status != ROUTE_OK) {
        buf msg = BUF_INIT;
        route_message(&rt->table, &res, x->model, &msg);
        fail(x, res.status, res.status == ROUTE_NOT_FOUND ? "model_not_found" : "model_ambiguous",
             msg.p, 0);
        buf_release(&msg);
        return;
    }
    rsvc *s = res.service < rt->n_svcs ? rt->svcs[res.service] : NULL;
    if (!s) {
        fail(x, 500, "internal_error", "route table and services disagree", 0);
        return;
    }
    x->svc = s;
    rsvc_ref(s);
    x->kind = res.kind;
    if (!s->router_mode) { /* nothing to learn from a start: refuse before activating anything */
        const char *m;
        buf e = BUF_INIT;
        if (route_upstream(&rt->table, res.service, res.kind, &m, &e) < 0) {
            fail(x, 400, "model_not_found", e.p, 0);
            buf_release(&e);
            return;
        }
        buf_release(&e);
    }
    free(x->target);
    x->target = rsvc_target(s, x->m->target.p, x->m->target.len);
    dispatch(x);
}

/* 503 body_budget: what it waited for, in the words of its phase. */
static void budget_spent(relay *x)
{
    char msg[400];
    const char *what = x->phase == RP_SCAN
                           ? "being read before they are routed (a JSON body is read "
                             "whole to find its model and keep_alive)"
                           : "waiting for their model or service";
    snprintf(msg, sizeof msg,
             "the router holds %zu MiB of request bodies, its limit across all requests, %s; "
             "retry",
             (size_t)(ROUTER_BODY_BUDGET >> 20), what);
    fail(x, 503, "body_budget", msg, 5);
}

void relay_body(relay *x, const view *chunk, bool last)
{
    x->bytes_in += chunk->len;
    if (!scan_feed(x, chunk)) return;
    if (x->phase == RP_UP) {
        if (chunk->len && upstream_write(x->up, chunk->p, chunk->len) == 0 && !x->body_paused &&
            upstream_congested(x->up)) {
            x->body_paused = true;
            srv_pause_body(x->c);
        }
        if (last) {
            x->body_last = true;
            if (!scan_finish(x)) return;
            if (x->up) upstream_end(x->up);
        }
        return;
    }
    /* held until the upstream starts: the body limit is the server's, the
     * budget across every request ours.  Counted from the first byte held
     * to held_release, which runs right after upstream_write copied the
     * body into the upstream (never counted twice; the upstream's queue is
     * bounded by its own backpressure) */
    if (chunk->len) {
        if (x->rt->body_held + chunk->len > ROUTER_BODY_BUDGET) {
            budget_spent(x);
            return;
        }
        buf_add(&x->held, chunk->p, chunk->len);
        x->counted += chunk->len;
        x->rt->body_held += chunk->len;
    }
    if (last) {
        x->body_last = true;
        if (!scan_finish(x) || !ka_take(x)) return;
    }
    if (x->phase == RP_SCAN && x->scan &&
        x->body_last) { /* the whole body: a bad keep_alive activates nothing */
        route(x);
        return;
    }
    if (last) maybe_own_sse(x);
}

void relay_begin(router *rt, srv_conn *c, const http_msg *m, rep ep, rsvc *svc, const char *target)
{
    relay *x = xcalloc(1, sizeof *x);
    x->rt = rt;
    x->c = c;
    x->m = m;
    x->ep = ep;
    x->anthropic = ep == EP_MESSAGES;
    x->t0 = uv_hrtime();
    access_info_fill(&x->ai, c, m);
    x->content_length = m->framing == HTTP_FRAME_LENGTH    ? (int64_t)m->content_length
                        : m->framing == HTTP_FRAME_CHUNKED ? -1
                                                           : 0;
    for (size_t i = 0; i < m->n_fields; i++)
        if (field_is(&m->fields[i], "accept") &&
            memmem(m->fields[i].value.p, m->fields[i].value.len, "text/event-stream", 17))
            x->want_sse = true;
    x->next = rt->all;
    if (rt->all) rt->all->prev = x;
    rt->all = x;
    if (rt->rm) rm_inflight(rt->rm, +1);
    srv_conn_set_ud(c, x);
    if (ep == EP_UPSTREAM) {
        x->svc = svc;
        rsvc_ref(svc);
        x->target = xstrdup(target);
        x->scan = false;
        x->phase = RP_SCAN;
        /* no body scan: start at once, the body streams as it comes */
        dispatch(x);
        return;
    }
    x->scan = true;
    modelscan_init(&x->ms, 0);
    x->phase = RP_SCAN;
}
