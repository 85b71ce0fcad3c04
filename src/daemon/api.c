/* api.c - the control API's routes (docs/api.md): a table of (method,
 * path pattern, handler), JSON out with buf, request bodies parsed with
 * cJSON.
 *
 * Design: a handler either answers at once (status, lists, events) or
 * hands the connection to a supervisor callback (start, stop, restart) or
 * a host-monitor callback (preflight) and answers from there.  The server
 * keeps a connection valid until it is answered even when the peer has
 * gone, so every asynchronous path answers exactly once and never checks
 * liveness first.  A follow stream of a service's log is the one response
 * that has no natural end: it ends when the client goes (api_abort) or
 * the daemon shuts down (api_close_follows). */
#include "daemon/api.h"
#include "daemon/rmodels.h"
#include "core/policy.h"
#include "daemon/verdict.h"
#include "util/jstrict.h"
#include "daemon/api_modes.h"
#include "daemon/api_services.h"
#include "daemon/api_events.h"
#include "daemon/api_tune.h"
#include "daemon/api_ebench.h"
#include "util/log.h"
#include "daemon/logring.h"
#include "router/router.h"
#include "daemon/need.h"
#include "daemon/pf_restart.h"
#include "daemon/reply.h"
#include "util/clock.h"
#include "util/redact.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JSON "application/json"
#define MAX_RES 64

/* ---- answers ----------------------------------------------------------- */

void api_event_json(buf *b, const store_event *e)
{
    buf_printf(b, "{\"id\":%" PRId64 ",\"ts\":", e->id);
    buf_json_time(b, e->ts_ms);
    buf_adds(b, ",\"service\":");
    buf_json_str_or_null(b, e->service);
    buf_adds(b, ",\"kind\":");
    buf_json_str_or_null(b, e->kind);
    buf_adds(b, ",\"from\":");
    buf_json_str_or_null(b, e->from);
    buf_adds(b, ",\"to\":");
    buf_json_str_or_null(b, e->to);
    buf_adds(b, ",\"reason\":");
    buf_json_str_or_null(b, e->reason);
    buf_adds(b, ",\"data\":");
    buf_adds(b, e->data && *e->data ? e->data : "null");
    buf_addc(b, '}');
}

/* ---- the request line -------------------------------------------------- */

typedef struct req {
    gpumodd *d;
    srv_conn *c;
    const http_msg *m;
    const view *body;
    char *path;            /* decoded, without the query */
    char *seg[5];          /* path segments */
    size_t nseg;
    strv query;            /* "k=v" decoded */
} req;

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decoding; '+' is a space in a query.  NULL for a bad escape or
 * a decoded NUL or control character (never let one reach an id). */
static char *pct_decode(const char *s, size_t n, bool query)
{
    buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%') {
            if (i + 2 >= n) goto bad;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0) goto bad;
            ch = (char)(hi * 16 + lo);
            i += 2;
        } else if (ch == '+' && query) {
            ch = ' ';
        }
        if ((unsigned char)ch < 0x20 || ch == 0x7f) goto bad;
        buf_addc(&b, ch);
    }
    return buf_detach(&b);
bad:
    buf_release(&b);
    return NULL;
}

static const char *qget(const req *r, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < r->query.n; i++)
        if (!strncmp(r->query.v[i], key, kl) && r->query.v[i][kl] == '=') return r->query.v[i] + kl + 1;
    return NULL;
}

/* Split target into path segments and query pairs.  -1: malformed. */
static int parse_target(req *r)
{
    const char *t = r->m->target.p;
    size_t n = r->m->target.len;
    const char *q = memchr(t, '?', n);
    size_t plen = q ? (size_t)(q - t) : n;
    if (!plen || t[0] != '/') return -1;
    r->path = pct_decode(t, plen, false);
    if (!r->path) return -1;
    char *save = NULL;
    char *tmp = xstrdup(r->path);
    for (char *s = strtok_r(tmp, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (r->nseg == 5) {
            free(tmp);
            return -1;
        }
        r->seg[r->nseg++] = xstrdup(s);
    }
    free(tmp);
    if (q) {
        const char *p = q + 1, *end = t + n;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            size_t len = amp ? (size_t)(amp - p) : (size_t)(end - p);
            if (len) {
                char *kv = pct_decode(p, len, true);
                if (!kv) return -1;
                if (!strchr(kv, '=')) {
                    char *k2 = xasprintf("%s=", kv);
                    free(kv);
                    kv = k2;
                }
                strv_push_own(&r->query, kv);
            }
            p += len + 1;
        }
    }
    return 0;
}

static void req_release(req *r)
{
    free(r->path);
    for (size_t i = 0; i < r->nseg; i++) free(r->seg[i]);
    strv_release(&r->query);
}

static bool method_is(const req *r, const char *m)
{
    return r->m->method.len == strlen(m) && !memcmp(r->m->method.p, m, r->m->method.len);
}

/* Decimal digits only (no sign, no spaces), fitting int64; -1 otherwise. */
static int64_t digits_int(const char *v)
{
    if (!*v) return -1;
    int64_t x = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (x > (INT64_MAX - (*p - '0')) / 10) return -1; /* too large: never clamp */
        x = x * 10 + (*p - '0');
    }
    return x;
}

/* An unsigned integer query value; -1 when absent, -2 when malformed. */
static int64_t qint(const req *r, const char *key)
{
    const char *v = qget(r, key);
    if (!v) return -1;
    int64_t x = digits_int(v);
    return x < 0 ? -2 : x;
}

/* A boolean query value: 0, 1, false or true, else a 400 naming the key
 * and the value (when it is short and printable) has been answered and -1
 * is returned.  *out keeps its default when the key is absent. */
static int qbool(const req *r, const char *what, const char *key, bool *out)
{
    const char *v = qget(r, key);
    if (!v) return 0;
    if (!strcmp(v, "1") || !strcmp(v, "true")) {
        *out = true;
        return 0;
    }
    if (!strcmp(v, "0") || !strcmp(v, "false")) {
        *out = false;
        return 0;
    }
    bool shown = strlen(v) <= 32;
    for (const char *p = v; *p && shown; p++)
        if (*p < 0x20 || *p > 0x7e) shown = false;
    api_error(r->c, 400, "bad_request", NULL, "%s: %s must be 0, 1, false or true, not '%s'", what, key,
                shown ? v : "...");
    return -1;
}

/* ---- GET /status, /services -------------------------------------------- */

static void reservations_sum(gpumodd *d, uint64_t *host, uint64_t *gpu_by_index, size_t ngpu_slots)
{
    reservation res[MAX_RES];
    size_t n = sup_reservations(d->sup, res, MAX_RES);
    *host = 0;
    memset(gpu_by_index, 0, ngpu_slots * sizeof *gpu_by_index);
    for (size_t i = 0; i < n; i++) {
        *host += res[i].need.host_bytes;
        for (size_t g = 0; g < res[i].need.ngpu; g++) {
            int idx = res[i].need.gpu[g].index;
            if (idx >= 0 && (size_t)idx < ngpu_slots) gpu_by_index[idx] += res[i].need.gpu[g].bytes;
        }
    }
}

static void refreshed(const snapshot *s, void *ud)
{
    gpumodd *d = ud;
    d->snap_pending = false;
}

void api_refresh_snapshot(gpumodd *d, int64_t max_age_ms)
{
    int64_t taken = 0;
    if (d->snap_pending || d->shutting_down || !d->hm) return;
    if (hostmon_last(d->hm, &taken) && clock_mono_ms() - taken <= max_age_ms) return;
    d->snap_pending = true;
    hostmon_take(d->hm, refreshed, d);
}

/* The host's contiguous memory, as POST /preflight reports it (the
 * gate's contig_bytes, the free blocks per order from 64 KiB up): the
 * monitor reads /proc/buddyinfo anyway, so the dashboard needs no
 * preflight per refresh.  null when buddyinfo could not be read. */
static void status_contig(buf *b, const host_mem *h)
{
    if (!h->buddyinfo_ok) {
        buf_adds(b, "\"contig_bytes\":null,\"high_order_pages\":null");
        return;
    }
    buf_printf(b, "\"contig_bytes\":%llu,\"high_order_pages\":{", (unsigned long long)h->contig_bytes);
    bool first = true;
    for (size_t o = (size_t)h->order_contig >= 2 ? (size_t)h->order_contig - 2 : 0; o < h->norders; o++) {
        buf_printf(b, "%s\"%zu\":%llu", first ? "" : ",", o, (unsigned long long)h->order_count[o]);
        first = false;
    }
    buf_addc(b, '}');
}

static void memory_json(gpumodd *d, buf *b)
{
    int64_t taken = 0;
    const snapshot *s = hostmon_last(d->hm, &taken);
    uint64_t rhost, rgpu[HOST_MAX_GPUS];
    reservations_sum(d, &rhost, rgpu, HOST_MAX_GPUS);
    if (!s) {
        /* the first snapshot is still being taken: say so rather than wait */
        buf_printf(b, "{\"nvml\":null,\"age_ms\":null,\"host\":{\"reserved_bytes\":%llu},\"gpus\":[]}",
                   (unsigned long long)rhost);
        return;
    }
    buf_adds(b, "{\"nvml\":");
    buf_json_str(b, nvml_state_names[s->nvml]);
    buf_printf(b, ",\"age_ms\":%lld,\"host\":{", (long long)(clock_mono_ms() - taken));
    if (s->host.meminfo_ok)
        buf_printf(b, "\"mem_total_bytes\":%llu,\"mem_available_bytes\":%llu,",
                   (unsigned long long)s->host.mem_total, (unsigned long long)s->host.mem_available);
    else
        buf_adds(b, "\"mem_total_bytes\":null,\"mem_available_bytes\":null,");
    buf_printf(b, "\"reserved_bytes\":%llu,", (unsigned long long)rhost);
    if (s->host.psi_ok)
        buf_printf(b, "\"psi_some_avg10\":%.2f,\"psi_full_avg10\":%.2f,", s->host.psi_some_avg10,
                   s->host.psi_full_avg10);
    else
        buf_adds(b, "\"psi_some_avg10\":null,\"psi_full_avg10\":null,");
    status_contig(b, &s->host);
    buf_adds(b, "},\"gpus\":[");
    for (size_t i = 0; i < s->ngpus; i++) {
        const gpu_dev *g = &s->gpus[i];
        buf_printf(b, "%s{\"index\":%d,\"name\":", i ? "," : "", g->index);
        buf_json_str(b, g->name);
        buf_adds(b, ",\"uuid\":");
        buf_json_str(b, g->uuid);
        uint64_t res = g->index >= 0 && g->index < HOST_MAX_GPUS ? rgpu[g->index] : 0;
        if (g->cc_major > 0)
            buf_printf(b, ",\"compute_capability\":\"%d.%d\"", g->cc_major, g->cc_minor);
        else
            buf_adds(b, ",\"compute_capability\":null");
        buf_printf(b,
                   ",\"unified\":%s,\"total_bytes\":%llu,\"free_bytes\":%llu,\"used_bytes\":%llu,"
                   "\"reserved_bytes\":%llu}",
                   g->unified ? "true" : "false", (unsigned long long)g->total_bytes,
                   (unsigned long long)(g->unified ? s->host.mem_available : g->free_bytes),
                   (unsigned long long)g->used_bytes, (unsigned long long)res);
    }
    buf_adds(b, "]}");
}

static void daemon_json(gpumodd *d, buf *b)
{
    buf_printf(b, "{\"pid\":%ld,\"version\":", (long)getpid());
    buf_json_str(b, GPUMOD_VERSION);
    buf_adds(b, ",\"started\":");
    buf_json_time(b, d->started_unix_ms);
    buf_printf(b, ",\"uptime_ms\":%lld,\"config_dir\":", (long long)(clock_mono_ms() - d->started_mono_ms));
    buf_json_str(b, d->cfg->config_abs ? d->cfg->config_abs : d->cfg->config_dir);
    buf_adds(b, ",\"state_dir\":");
    buf_json_str(b, d->state_dir);
    buf_adds(b, ",\"socket\":");
    buf_json_str(b, d->socket_path);
    buf_adds(b, ",\"runner\":");
    buf_json_str(b, d->runner);
    buf_printf(b, ",\"shutting_down\":%s}", d->shutting_down ? "true" : "false");
}

static void events_array(gpumodd *d, const store_event_query *q, buf *b)
{
    store_event *ev = NULL;
    size_t n = 0;
    char err[256];
    buf_addc(b, '[');
    if (d->st && store_events_query(d->st, q, &ev, &n, err, sizeof err) == 0) {
        for (size_t i = 0; i < n; i++) {
            if (i) buf_addc(b, ',');
            api_event_json(b, &ev[i]);
        }
        store_events_free(ev, n);
    } else if (d->st) {
        log_warn("events: %s", err);
    }
    buf_addc(b, ']');
}

static void get_status(req *r)
{
    gpumodd *d = r->d;
    buf b = BUF_INIT;
    buf_adds(&b, "{\"daemon\":");
    daemon_json(d, &b);
    buf_adds(&b, ",\"services\":");
    api_services_json(d->sup, &b);
    buf_adds(&b, ",\"slot\":");
    api_slot_json(d->sup, &b);
    buf_adds(&b, ",\"memory\":");
    memory_json(d, &b);
    api_refresh_snapshot(d, 1000); /* for the next status */
    buf_adds(&b, ",\"watchdog\":");
    if (d->wd)
        watchdog_json(d->wd, &b);
    else
        buf_adds(&b, "null");
    buf_adds(&b, ",\"events\":");
    store_event_query q = {.limit = 10, .tail = true};
    events_array(d, &q, &b);
    buf_addc(&b, '}');
    api_reply(r->c, 200, &b);
    buf_release(&b);
}

static void get_services(req *r)
{
    buf b = BUF_INIT;
    api_services_json(r->d->sup, &b);
    api_reply(r->c, 200, &b);
    buf_release(&b);
}

/* {"pid","started"}: which daemon answered (a restart changes both). */
static void daemon_id_json(gpumodd *d, buf *b)
{
    buf_printf(b, "{\"pid\":%ld,\"started\":", (long)getpid());
    buf_json_time(b, d->started_unix_ms);
    buf_addc(b, '}');
}

/* ?daemon=1 wraps the service as {"daemon": {"pid","started"}, "service"}
 * (a client that polls a start ticket sees a daemon restart). */
static void get_service(req *r)
{
    const char *dq = qget(r, "daemon");
    bool wrap = dq && (!strcmp(dq, "1") || !strcmp(dq, "true"));
    buf b = BUF_INIT;
    if (wrap) {
        buf_adds(&b, "{\"daemon\":");
        daemon_id_json(r->d, &b);
        buf_adds(&b, ",\"service\":");
    }
    if (api_service_json(r->d->sup, r->seg[1], &b) < 0) {
        api_error(r->c, 404, "not_found", NULL, "no service '%s' is configured or running", r->seg[1]);
    } else {
        if (wrap) buf_addc(&b, '}');
        api_reply(r->c, 200, &b);
    }
    buf_release(&b);
}

/* ---- start / stop / restart -------------------------------------------- */

typedef enum { OP_START, OP_STOP, OP_RESTART } op_kind;
static const char *const op_names[] = {"start", "stop", "restart"};

typedef struct op_req {
    gpumodd *d;
    srv_conn *c;
    char *id;
    op_kind op;
    bool nowait;
    bool in_call;  /* inside sup_start: the callback came synchronously */
    bool fired;
    bool answered;       /* the connection has its response */
    sup_outcome outcome; /* the result, copied when it came synchronously */
    char *message, *detail;
} op_req;

/* A supervisor result as the API answers it: the service, or the error
 * with the outcome's status and code (outcome.h). */
static void op_answer(op_req *o, sup_outcome outcome, const char *message, const char *detail)
{
    buf b = BUF_INIT;
    int status = sup_outcome_status(outcome);
    if (outcome == SUP_OK) {
        if (api_service_json(o->d->sup, o->id, &b) < 0) buf_adds(&b, "null");
        api_reply(o->c, status, &b);
    } else {
        api_error_body(&b, sup_outcome_code(outcome), message ? message : "failed", detail);
        api_reply(o->c, status, &b);
    }
    buf_release(&b);
    o->answered = true;
}

static void op_free(op_req *o)
{
    free(o->id);
    free(o->message);
    free(o->detail);
    free(o);
}

static void op_done(const sup_result *res, void *ud)
{
    op_req *o = ud;
    o->fired = true;
    buf d = BUF_INIT;
    api_result_detail_json(&d, res);
    if (o->in_call) {
        /* answered by the caller once sup_start has returned its seq */
        o->outcome = res->outcome;
        o->message = res->message ? xstrdup(res->message) : NULL;
        o->detail = d.len ? buf_detach(&d) : NULL;
        buf_release(&d);
        return;
    }
    if (!o->answered) op_answer(o, res->outcome, res->message, d.p);
    buf_release(&d);
    op_free(o);
}

static int64_t startup_timeout_of(gpumodd *d, const char *id)
{
    const preset *p = config_preset(d->cfg, id);
    int64_t t = p && p->startup_timeout_ms > 0 ? p->startup_timeout_ms : d->cfg->set.supervisor.startup_timeout_ms;
    return t > 0 ? t : 0;
}

/* The answer to start?wait=0: the service, its ticket, which daemon
 * issued it, and wait_ms: the longest the start can take (its own
 * startup_timeout plus that of every other start ahead of or beside it
 * for the load slot, plus a stop's worth for the port) — a client's
 * default deadline. */
static void ticket_json(gpumodd *d, const char *id, uint64_t seq, buf *b)
{
    buf_adds(b, "{\"service\":");
    if (api_service_json(d->sup, id, b) < 0) buf_adds(b, "null");
    buf_printf(b, ",\"start_seq\":%llu,\"daemon\":", (unsigned long long)seq);
    daemon_id_json(d, b);
    sup_usage u[MAX_RES];
    size_t n = sup_usages(d->sup, u, MAX_RES);
    int64_t wait = startup_timeout_of(d, id);
    for (size_t i = 0; i < n && i < MAX_RES; i++)
        if (u[i].state == SVC_STARTING && strcmp(u[i].id, id)) wait += startup_timeout_of(d, u[i].id);
    wait += d->cfg->set.supervisor.stop_timeout_ms + d->cfg->set.memory.verify_freed_timeout_ms;
    buf_printf(b, ",\"wait_ms\":%lld}", (long long)wait);
}

static void post_op(req *r, op_kind op)
{
    op_req *o = xcalloc(1, sizeof *o);
    o->d = r->d;
    o->c = r->c;
    o->id = xstrdup(r->seg[1]);
    o->op = op;
    bool wait = true;
    if (qbool(r, op_names[op], "wait", &wait) < 0) {
        op_free(o);
        return;
    }
    o->nowait = !wait;
    const char *origin = qget(r, "origin");
    if (!origin || (strcmp(origin, "cli") && strcmp(origin, "api"))) origin = "api";
    if (o->nowait && op != OP_START) {
        api_error(r->c, 400, "bad_request", NULL, "wait=0 applies to start only");
        op_free(o);
        return;
    }
    if (op == OP_STOP) {
        sup_stop(r->d->sup, o->id, origin, op_done, o);
        return;
    }
    overrides ov;
    char err[1024];
    const preset *p = config_preset(r->d->cfg, o->id); /* none: the supervisor says 404 */
    if (api_overrides_parse(op_names[op], r->body, p ? p->driver : -1, &ov, err, sizeof err) != 0) {
        api_error(r->c, 400, "bad_request", NULL, "%s", err);
        op_free(o);
        return;
    }
    if (op == OP_RESTART) {
        sup_restart_with(r->d->sup, o->id, origin, &ov, op_done, o);
        overrides_release(&ov); /* the supervisor keeps its own copy */
        return;
    }
    o->in_call = true;
    uint64_t seq = sup_start_with(r->d->sup, o->id, origin, &ov, op_done, o);
    overrides_release(&ov);
    o->in_call = false;
    if (o->fired) { /* answered at once: ready already, or an error */
        if (o->nowait && o->outcome == SUP_OK) {
            buf b = BUF_INIT;
            ticket_json(r->d, o->id, seq, &b);
            api_reply(r->c, sup_outcome_status(o->outcome), &b);
            buf_release(&b);
        } else {
            op_answer(o, o->outcome, o->message, o->detail);
        }
        op_free(o);
        return;
    }
    if (o->nowait) {
        buf b = BUF_INIT;
        ticket_json(r->d, o->id, seq, &b);
        api_reply(r->c, 202, &b);
        buf_release(&b);
        o->answered = true; /* op_done frees it when the start ends */
    }
}

/* ---- logs -------------------------------------------------------------- */

/* A follow stream may queue at most this much for a reader that does not
 * read; past it the stream says where it stopped and ends, and the
 * client follows again with after= (the daemon's memory stays bounded). */
#define FOLLOW_MAX_QUEUED ((size_t)1 << 20)
/* A line longer than this is redacted and sent in pieces (a secret never
 * spans lines, but one may span such a cut: rare, bounded). */
#define FOLLOW_MAX_PARTIAL ((size_t)64 << 10)

typedef struct api_follow {
    gpumodd *d;
    srv_conn *c;
    sup_log_watch *w;
    buf partial;     /* the last line so far, held until its '\n' (redaction works on lines) */
    uint64_t offset; /* the log offset just after what has been received */
    struct api_follow *next;
} api_follow;

/* Redacted, then on the wire. */
static void write_redacted(srv_conn *c, const char *data, size_t len)
{
    if (!len) return;
    size_t n = 0;
    char *red = redact_text(data, len, &n);
    srv_write(c, red, n);
    free(red);
}

/* Send every whole line of f->partial + data, keep the rest. */
static void follow_feed(api_follow *f, const char *data, size_t len)
{
    buf_add(&f->partial, data, len);
    f->offset += len;
    const char *nl = f->partial.len ? memrchr(f->partial.p, '\n', f->partial.len) : NULL;
    size_t whole = nl ? (size_t)(nl - f->partial.p) + 1 : 0;
    if (!whole && f->partial.len > FOLLOW_MAX_PARTIAL) whole = f->partial.len;
    if (!whole) return;
    write_redacted(f->c, f->partial.p, whole);
    size_t rest = f->partial.len - whole;
    memmove(f->partial.p, f->partial.p + whole, rest);
    f->partial.len = rest;
    f->partial.p[rest] = '\0';
}

static void follow_end(gpumodd *d, api_follow *f)
{
    for (api_follow **pp = &d->follows; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    if (f->w) sup_log_watch_remove(d->sup, f->w);
    srv_end(f->c);
    buf_release(&f->partial);
    free(f);
}

static void follow_chunk(const char *id, const char *data, size_t len, void *ud)
{
    api_follow *f = ud;
    if (srv_conn_queued(f->c) > FOLLOW_MAX_QUEUED) {
        /* the reader stopped reading: say where to resume, and end */
        uint64_t at = f->offset - f->partial.len;
        buf m = BUF_INIT;
        buf_printf(&m,
                   "%s[gpumod: the reader fell %zu bytes behind; this stream ends at offset %llu: follow again "
                   "with after=%llu]\n",
                   f->partial.len ? "\n" : "", srv_conn_queued(f->c), (unsigned long long)at,
                   (unsigned long long)at);
        srv_write(f->c, m.p, m.len);
        buf_release(&m);
        log_warn("logs of '%s': a follow stream fell more than %zu bytes behind; ended it at offset %llu", id,
                 FOLLOW_MAX_QUEUED, (unsigned long long)at);
        follow_end(f->d, f);
        return;
    }
    follow_feed(f, data, len);
}

typedef struct api_gather api_gather;
static void gather_free(srv_conn *c, api_gather *g);

void api_abort(srv_conn *c, void *ud)
{
    gpumodd *d = ud;
    api_gather *g = srv_conn_ud(c);
    if (g) { /* a chunked body was still arriving: the handler owes the end */
        gather_free(c, g);
        srv_respond(c, 400, "text/plain", "", 0); /* only frees now */
        return;
    }
    for (api_follow *f = d->follows; f; f = f->next)
        if (f->c == c) {
            follow_end(d, f);
            return;
        }
    if (api_events_abort(d, c)) return;
    /* a start/stop in flight answers from its callback (the server then
     * only frees the connection) */
}

void api_close_follows(gpumodd *d)
{
    while (d->follows) {
        api_follow *f = d->follows;
        write_redacted(f->c, f->partial.p, f->partial.len); /* the last partial line: the stream ends here */
        f->partial.len = 0;
        follow_end(d, f);
    }
    api_events_close(d);
}

static void get_logs(req *r)
{
    gpumodd *d = r->d;
    const char *id = r->seg[1];
    int64_t n = qint(r, "n"), after = qint(r, "after");
    bool follow = false;
    if (qbool(r, "logs", "follow", &follow) < 0) return;
    if (n == -2 || after == -2) {
        api_error(r->c, 400, "bad_request", NULL, "logs: n and after must be non-negative integers");
        return;
    }
    if (follow && d->shutting_down) {
        /* api_close_follows has run: a stream opened now would hold the
         * server open and the daemon's exit with it */
        api_error(r->c, 503, "shutting_down", NULL, "logs of '%s': the daemon is shutting down; no new follow",
                    id);
        return;
    }
    buf out = BUF_INIT;
    uint64_t next = 0;
    size_t lines = n >= 0 ? (size_t)n : after >= 0 ? LOGRING_ALL : 100;
    if (sup_log_read(d->sup, id, after >= 0 ? (uint64_t)after : UINT64_MAX, lines, &out, &next) < 0) {
        api_error(r->c, 404, "not_found", NULL, "no service '%s' is configured or running", id);
        buf_release(&out);
        return;
    }
    if (!follow) {
        char *red = redact_text(out.p, out.len, NULL);
        buf b = BUF_INIT;
        buf_adds(&b, "{\"id\":");
        buf_json_str(&b, id);
        buf_printf(&b, ",\"next\":%llu,\"data\":", (unsigned long long)next);
        buf_json_str(&b, red);
        buf_addc(&b, '}');
        api_reply(r->c, 200, &b);
        buf_release(&b);
        buf_release(&out);
        free(red);
        return;
    }
    /* the tail now, then every chunk as it comes: nothing happens on the
     * loop between the read and the watch, so nothing is lost or doubled */
    if (srv_respond_start(r->c, 200, "text/plain; charset=utf-8") < 0) {
        buf_release(&out);
        return;
    }
    api_follow *f = xcalloc(1, sizeof *f);
    f->d = d;
    f->c = r->c;
    f->offset = next - out.len;
    follow_feed(f, out.p, out.len);
    buf_release(&out);
    f->next = d->follows;
    d->follows = f;
    f->w = sup_log_watch_add(d->sup, id, follow_chunk, f);
    if (!f->w) follow_end(d, f);
}

/* ---- events ------------------------------------------------------------ */

/* kind=state,exit: a comma list of store_event_kinds as a mask; -1 after
 * a 400 naming the first that is not one. */
static int events_kinds(req *r, unsigned *mask)
{
    const char *v = qget(r, "kind");
    *mask = 0;
    if (!v) return 0;
    char *list = xstrdup(v), *save = NULL;
    for (char *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        int i = store_event_kind_index(k);
        if (i < 0) {
            buf known = BUF_INIT;
            for (size_t j = 0; store_event_kinds[j]; j++)
                buf_printf(&known, "%s%s", j ? ", " : "", store_event_kinds[j]);
            api_error(r->c, 400, "bad_request", NULL, "events: kind '%s' is not one of %s",
                        strlen(k) <= 32 ? k : "...", known.p);
            buf_release(&known);
            free(list);
            return -1;
        }
        *mask |= 1u << i;
    }
    free(list);
    if (!*mask) {
        api_error(r->c, 400, "bad_request", NULL, "events: kind must name at least one kind");
        return -1;
    }
    return 0;
}

/* since: an event id or an RFC 3339 time into q (follow: an id only);
 * -1 after a 400. */
static int events_since(req *r, bool follow, store_event_query *q)
{
    const char *since = qget(r, "since");
    if (!since || !*since) {
        q->tail = true; /* the latest ones */
        return 0;
    }
    int64_t id = digits_int(since);
    int64_t ts;
    bool all_digits = strspn(since, "0123456789") == strlen(since);
    if (id >= 0) {
        q->since_id = id;
        return 0;
    }
    if (all_digits)
        api_error(r->c, 400, "bad_request", NULL, "events: since '%s' is too large for an event id", since);
    else if (follow)
        api_error(r->c, 400, "bad_request", NULL, "events: with follow=1, since must be an event id, not '%s'",
                    strlen(since) <= 40 ? since : "...");
    else if (clock_parse_rfc3339(since, &ts) == 0) {
        q->since_ts_ms = ts;
        return 0;
    } else
        api_error(r->c, 400, "bad_request", NULL,
                    "events: since '%s' is neither an event id nor an RFC 3339 time", since);
    return -1;
}

/* The newest event's id (0: none): where a follow without since begins. */
static int64_t events_newest(gpumodd *d)
{
    store_event_query q = {.limit = 1, .tail = true};
    store_event *ev = NULL;
    size_t n = 0;
    char err[256];
    int64_t id = 0;
    if (store_events_query(d->st, &q, &ev, &n, err, sizeof err) == 0) {
        if (n) id = ev[0].id;
        store_events_free(ev, n);
    } else {
        log_warn("events: %s", err);
    }
    return id;
}

static void events_follow(req *r, const store_event_query *q)
{
    gpumodd *d = r->d;
    if (qget(r, "limit")) {
        api_error(r->c, 400, "bad_request", NULL, "events: limit does not apply with follow=1");
        return;
    }
    if (d->shutting_down || !d->st) {
        /* api_close_follows has run: a stream opened now would hold the
         * server open and the daemon's exit with it */
        api_error(r->c, 503, "shutting_down", NULL, "events: the daemon is shutting down; no new follow");
        return;
    }
    api_events_follow(d, r->c, q->tail ? events_newest(d) : q->since_id, q->service, q->kinds);
}

static void get_events(req *r)
{
    store_event_query q = {0};
    bool follow = false;
    if (qbool(r, "events", "follow", &follow) < 0) return;
    int64_t limit = qint(r, "limit");
    if (limit == -2 || limit == 0 || limit > 10000) {
        api_error(r->c, 400, "bad_request", NULL, "events: limit must be an integer from 1 to 10000, not '%s'",
                    qget(r, "limit"));
        return;
    }
    q.limit = limit > 0 ? (size_t)limit : 100;
    if (events_since(r, follow, &q) < 0 || events_kinds(r, &q.kinds) < 0) return;
    const char *svc = qget(r, "service");
    q.service = svc && *svc ? svc : NULL;
    if (follow) {
        events_follow(r, &q);
        return;
    }
    buf b = BUF_INIT;
    buf_adds(&b, "{\"events\":");
    events_array(r->d, &q, &b);
    buf_addc(&b, '}');
    api_reply(r->c, 200, &b);
    buf_release(&b);
}

/* ---- preflight --------------------------------------------------------- */

typedef struct pf_req {
    gpumodd *d;
    srv_conn *c;
    char *service, *mode;
    bool restart; /* "overrides" given: a restart's dry run (daemon/pf_restart.h) */
    overrides ov;
} pf_req;

/* Judge p against s with res[0..*nres) reserved; its need is appended to
 * res for the next (a mode).  -1 with err when the need cannot be found. */
static int pf_judge(gpumodd *d, const preset *p, const snapshot *s, reservation *res, size_t *nres,
                    need_detail *nd, buf *out, bool *ok, char *err, size_t errlen)
{
    if (service_need(p, &d->cfg->set, s, d->st, nd, err, errlen)) return -1;
    gate_policy pol;
    policy_from_settings(&d->cfg->set, &pol);
    verdict v;
    if (!strcmp(nd->n.source, "none")) { /* remote: nothing runs here */
        memset(&v, 0, sizeof v);
        v.ok = true;
    } else {
        gate_check(s, &nd->n, res, *nres, p->id, &pol, &v);
    }
    verdict_json(out, "daemon", p->id, &v, nd, s);
    *ok = v.ok;
    if (*nres < MAX_RES * 2) {
        res[*nres].service = p->id;
        res[*nres].need = nd->n;
        (*nres)++;
    }
    return 0;
}

static const char *pf_config_dir(gpumodd *d)
{
    return d->cfg->config_abs ? d->cfg->config_abs : d->cfg->config_dir;
}

/* 404 with the configuration directory in the detail (the CLI tells a
 * daemon reading another directory from a preset it has not loaded). */
static void pf_not_found(pf_req *f, const char *what, const char *id)
{
    buf det = BUF_INIT;
    buf_adds(&det, "{\"config_dir\":");
    buf_json_str(&det, pf_config_dir(f->d));
    buf_addc(&det, '}');
    api_error(f->c, 404, "not_found", det.p, "no %s '%s' in %s", what, id, f->d->cfg->config_dir);
    buf_release(&det);
}

/* with the configuration directory that judged it, as every preflight */
static void pf_close(pf_req *f, buf *b)
{
    buf_adds(b, ",\"config_dir\":");
    buf_json_str(b, pf_config_dir(f->d));
    buf_addc(b, '}');
}

static void pf_restart_reply(pf_req *f, const preset *p, const snapshot *s)
{
    pf_restart_in in = {.sup = f->d->sup, .set = &f->d->cfg->set, .st = f->d->st, .snap = s, .p = p, .ov = &f->ov};
    buf b = BUF_INIT;
    char err[1024];
    int status;
    const char *code;
    if (pf_restart_json(&in, &b, &status, &code, err, sizeof err) != 0) {
        api_error(f->c, status, code, NULL, "%s", err);
    } else {
        pf_close(f, &b);
        api_reply(f->c, 200, &b);
    }
    buf_release(&b);
}

static void pf_snapshot(const snapshot *s, void *ud)
{
    pf_req *f = ud;
    gpumodd *d = f->d;
    reservation res[MAX_RES * 2];
    size_t nres = sup_reservations(d->sup, res, MAX_RES);
    need_detail *nd = xcalloc(1, sizeof *nd);
    char err[512];
    buf b = BUF_INIT;
    bool ok = true;
    if (f->service) {
        const preset *p = config_preset(d->cfg, f->service);
        if (!p) {
            pf_not_found(f, "preset", f->service);
        } else if (f->restart) {
            pf_restart_reply(f, p, s);
        } else if (pf_judge(d, p, s, res, &nres, nd, &b, &ok, err, sizeof err)) {
            api_error(f->c, 422, "need_unknown", NULL, "%s", err);
        } else {
            /* which configuration judged it: the CLI falls back to its own
             * when it reads another directory */
            if (b.len && b.p[b.len - 1] == '}') {
                b.len--;
                buf_adds(&b, ",\"config_dir\":");
                buf_json_str(&b, pf_config_dir(d));
                buf_addc(&b, '}');
            }
            api_reply(f->c, 200, &b);
        }
    } else {
        const mode *m = strcmp(f->mode, "none") ? config_mode(d->cfg, f->mode) : NULL;
        if (!m && strcmp(f->mode, "none")) {
            pf_not_found(f, "mode", f->mode);
            goto out;
        }
        buf_adds(&b, "{\"mode\":");
        buf_json_str(&b, f->mode);
        buf_adds(&b, ",\"verdicts\":[");
        bool all_ok = true, first = true;
        size_t n = m ? m->services.n : 0;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n; i++) {
                const preset *q = config_preset(d->cfg, m->services.v[i]);
                if (!q || q->start_first != (pass == 0)) continue;
                if (!first) buf_addc(&b, ',');
                first = false;
                bool one_ok;
                if (pf_judge(d, q, s, res, &nres, nd, &b, &one_ok, err, sizeof err)) {
                    api_error(f->c, 422, "need_unknown", NULL, "%s", err);
                    goto out;
                }
                all_ok = all_ok && one_ok;
            }
        buf_printf(&b, "],\"ok\":%s,\"config_dir\":", all_ok ? "true" : "false");
        buf_json_str(&b, pf_config_dir(d));
        buf_addc(&b, '}');
        api_reply(f->c, 200, &b);
    }
out:
    buf_release(&b);
    free(nd);
    free(f->service);
    free(f->mode);
    overrides_release(&f->ov);
    free(f);
}

static cJSON *body_json(req *r, const char *what)
{
    char err[256];
    cJSON *j = jstrict_parse(r->body->p, r->body->len, err, sizeof err);
    if (!j || !cJSON_IsObject(j)) {
        api_error(r->c, 400, "bad_request", NULL, "%s: the body must be a JSON object: %s", what,
                    j ? "found another JSON value" : err);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* The body's "overrides" for the service's preset into f (f->restart
 * when given).  -1 after a 400. */
static int pf_overrides(req *r, const cJSON *j, pf_req *f)
{
    const cJSON *it, *ov = cJSON_GetObjectItemCaseSensitive(j, "overrides");
    cJSON_ArrayForEach(it, j) if (strcmp(it->string, "service") && strcmp(it->string, "mode") &&
                                  strcmp(it->string, "overrides"))
    {
        api_error(r->c, 400, "bad_request", NULL,
                    "preflight: unknown key '%s' in the body (allowed: service, mode, overrides)", it->string);
        return -1;
    }
    if (!ov) return 0;
    if (!f->service) {
        api_error(r->c, 400, "bad_request", NULL, "preflight: \"overrides\" go with \"service\", not a mode");
        return -1;
    }
    const preset *p = config_preset(r->d->cfg, f->service); /* none: 404 with the snapshot's answer */
    char err[1024];
    if (overrides_parse(ov, p ? p->driver : -1, &f->ov, err, sizeof err) != 0) {
        api_error(r->c, 400, "bad_request", NULL, "preflight: %s", err);
        return -1;
    }
    f->restart = true;
    return 0;
}

static void post_preflight(req *r)
{
    cJSON *j = body_json(r, "preflight");
    if (!j) return;
    const cJSON *svc = cJSON_GetObjectItemCaseSensitive(j, "service");
    const cJSON *mod = cJSON_GetObjectItemCaseSensitive(j, "mode");
    bool has_s = svc && !cJSON_IsNull(svc), has_m = mod && !cJSON_IsNull(mod);
    if (has_s == has_m || (has_s && !cJSON_IsString(svc)) || (has_m && !cJSON_IsString(mod))) {
        api_error(r->c, 400, "bad_request", NULL,
                    "preflight: give exactly one of \"service\" or \"mode\", as a string");
        cJSON_Delete(j);
        return;
    }
    pf_req *f = xcalloc(1, sizeof *f);
    f->d = r->d;
    f->c = r->c;
    if (has_s) f->service = xstrdup(svc->valuestring);
    if (has_m) f->mode = xstrdup(mod->valuestring);
    if (pf_overrides(r, j, f) != 0) {
        free(f->service);
        free(f->mode);
        free(f);
        cJSON_Delete(j);
        return;
    }
    cJSON_Delete(j);
    hostmon_take(r->d->hm, pf_snapshot, f); /* a fresh snapshot, taken off the loop */
}

/* ---- modes ------------------------------------------------------------- */

/* The running set: services starting, ready or unhealthy. */
size_t api_running_set(gpumodd *d, const char **ids, size_t max)
{
    sup_usage u[MAX_RES];
    size_t n = sup_usages(d->sup, u, MAX_RES), k = 0;
    for (size_t i = 0; i < n && k < max; i++)
        if (u[i].state == SVC_STARTING || u[i].state == SVC_READY || u[i].state == SVC_UNHEALTHY) ids[k++] = u[i].id;
    return k;
}

static bool mode_matches(const mode *m, const char **ids, size_t n)
{
    if (m->services.n != n) return false;
    for (size_t i = 0; i < n; i++)
        if (strv_find(&m->services, ids[i]) < 0) return false;
    return true;
}

const char *api_current_mode(gpumodd *d, const char **ids, size_t n)
{
    if (!n) return "none";
    for (size_t i = 0; i < d->cfg->n_modes; i++)
        if (mode_matches(&d->cfg->modes[i], ids, n)) return d->cfg->modes[i].id;
    return NULL;
}

static void get_modes(req *r)
{
    gpumodd *d = r->d;
    const char *ids[MAX_RES];
    size_t nrun = api_running_set(d, ids, MAX_RES);
    const char *cur = api_current_mode(d, ids, nrun);
    buf b = BUF_INIT;
    buf_adds(&b, "{\"modes\":[");
    for (size_t i = 0; i < d->cfg->n_modes; i++) {
        const mode *m = &d->cfg->modes[i];
        buf_adds(&b, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(&b, m->id);
        buf_adds(&b, ",\"name\":");
        buf_json_str_or_null(&b, m->name);
        buf_adds(&b, ",\"description\":");
        buf_json_str_or_null(&b, m->description);
        buf_adds(&b, ",\"services\":[");
        for (size_t k = 0; k < m->services.n; k++) {
            if (k) buf_addc(&b, ',');
            buf_json_str(&b, m->services.v[k]);
        }
        buf_printf(&b, "],\"current\":%s}", cur && !strcmp(cur, m->id) ? "true" : "false");
    }
    buf_adds(&b, "],\"current\":");
    buf_json_str_or_null(&b, cur);
    buf_addc(&b, '}');
    api_reply(r->c, 200, &b);
    buf_release(&b);
}

/* GET /modes/current, POST /modes/switch, GET /switches: src/daemon/api_modes.c */
static void get_mode_current(req *r) { api_modes_current(r->d, r->c); }
static void post_mode_switch(req *r) { api_modes_switch(r->d, r->c, r->body, qget(r, "origin"), qget(r, "wait")); }
static void get_switches(req *r) { api_switches(r->d, r->c, qget(r, "limit")); }
static void get_switch(req *r) { api_switch_get(r->d, r->c, r->seg[1]); }

/* GET|PUT /route/default, GET /route: src/router/router.c */
static void route_default(req *r)
{
    if (!r->d->router) {
        api_error(r->c, 503, "unavailable", NULL, "the router is not up yet");
        return;
    }
    router_api_default(r->d->router, r->c, r->m, r->body);
}

static void route_table(req *r)
{
    if (!r->d->router) {
        api_error(r->c, 503, "unavailable", NULL, "the router is not up yet");
        return;
    }
    router_api_table(r->d->router, r->c);
}

static void route_resolve_model(req *r)
{
    if (!r->d->router) {
        api_error(r->c, 503, "unavailable", NULL, "the router is not up yet");
        return;
    }
    router_api_resolve(r->d->router, r->c, qget(r, "model"));
}

/* ---- bench results ----------------------------------------------------- */

/* A bad result body: 400 with what is wrong, where (a JSON path) and what
 * was expected, the last two also as detail {"where", "expected"}. */
static void result_bad(req *r, const char *where, const char *expected, const char *got)
{
    buf d = BUF_INIT;
    buf_adds(&d, "{\"where\":");
    buf_json_str(&d, where);
    buf_adds(&d, ",\"expected\":");
    buf_json_str(&d, expected);
    buf_addc(&d, '}');
    api_error(r->c, 400, "bad_request", d.p, "results: %s is %s, expected %s", where, got, expected);
    buf_release(&d);
}

static const char *json_type(const cJSON *v)
{
    if (!v) return "missing";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    return "an object";
}

static const char *const result_kinds[] = {"load", "ctx_sweep", "switch", NULL};

static const char *obj_str(const cJSON *o, const char *key);

/* The figures a list shows: each point's summary (load, ctx_sweep), or
 * each phase's median, interval and n (switch). */
static cJSON *result_summary(const cJSON *doc, const char *kind)
{
    if (!strcmp(kind, "tune")) {
        /* the run's figures: from its summary, else the document's top level */
        cJSON *o = cJSON_CreateObject();
        const cJSON *su = cJSON_GetObjectItemCaseSensitive(doc, "summary"), *v;
        static const char *const keep[] = {"service", "objective", "winner", "outcomes", "rounds"};
        for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
            if ((v = cJSON_GetObjectItemCaseSensitive(su, keep[i])) ||
                (v = cJSON_GetObjectItemCaseSensitive(doc, keep[i])))
                cJSON_AddItemToObject(o, keep[i], cJSON_Duplicate(v, true));
        return o;
    }
    if (!strcmp(kind, "eval")) {
        /* the figures of the run, the suite's name and the client's pace */
        cJSON *o = cJSON_CreateObject();
        const cJSON *su = cJSON_GetObjectItemCaseSensitive(doc, "summary"), *v;
        static const char *const keep[] = {"items", "records", "k", "pass", "fail", "error", "accuracy",
                                           "pass_at_k", "judge"};
        for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
            if ((v = cJSON_GetObjectItemCaseSensitive(su, keep[i])))
                cJSON_AddItemToObject(o, keep[i], cJSON_Duplicate(v, true));
        const char *name = obj_str(cJSON_GetObjectItemCaseSensitive(doc, "suite"), "name");
        if (name) cJSON_AddStringToObject(o, "suite", name);
        return o;
    }
    if (!strcmp(kind, "switch")) {
        cJSON *o = cJSON_CreateObject(), *ph = cJSON_AddObjectToObject(o, "phases");
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "phases"))
        {
            if (!cJSON_IsObject(p) || !p->string) continue;
            cJSON *q = cJSON_AddObjectToObject(ph, p->string);
            static const char *const keep[] = {"median", "lo", "hi", "n"};
            for (size_t i = 0; i < 4; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, keep[i]);
                if (v) cJSON_AddItemToObject(q, keep[i], cJSON_Duplicate(v, true));
            }
        }
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "failed");
        if (cJSON_IsNumber(f)) cJSON_AddNumberToObject(o, "failed", f->valuedouble);
        return o;
    }
    cJSON *a = cJSON_CreateArray();
    const cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(doc, "points"))
    {
        cJSON *o = cJSON_CreateObject();
        static const char *const keep[] = {"x_name", "x", "summary"};
        for (size_t i = 0; i < 3; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(pt, keep[i]);
            if (v) cJSON_AddItemToObject(o, keep[i], cJSON_Duplicate(v, true));
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static const char *obj_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The kind of a result body, or NULL after a 400 saying what is wrong:
 * gpumod.bench/1 with kind load, ctx_sweep (points) or switch (modes),
 * gpumod.eval/1 with kind eval (items, summary), or gpumod.tune/1 with
 * kind tune (summary); target an object. */
static const char *result_check(req *r, const cJSON *j)
{
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(j, "schema");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(j, "target");
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(j, "points");
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(j, "modes");
    const cJSON *summary = cJSON_GetObjectItemCaseSensitive(j, "summary");
    const char *k = cJSON_IsString(kind) ? kind->valuestring : NULL;
    const char *sc = cJSON_IsString(schema) ? schema->valuestring : NULL;
    bool eval = sc && !strcmp(sc, "gpumod.eval/1"), tune = sc && !strcmp(sc, "gpumod.tune/1");
    const char *own = eval ? "eval" : tune ? "tune" : NULL; /* the one kind of eval's and tune's schemas */
    size_t ki = 0;
    while (k && result_kinds[ki] && strcmp(result_kinds[ki], k)) ki++;
    char got[96], want[96];
    if (!sc || (strcmp(sc, "gpumod.bench/1") && !own)) {
        snprintf(got, sizeof got, sc ? "'%.60s'" : "%s", sc ? sc : json_type(schema));
        result_bad(r, "$.schema", "\"gpumod.bench/1\", \"gpumod.eval/1\" or \"gpumod.tune/1\"", got);
    } else if (own && (!k || strcmp(k, own))) {
        snprintf(got, sizeof got, k ? "'%.60s'" : "%s", k ? k : json_type(kind));
        snprintf(want, sizeof want, "\"%s\" (a %s result)", own, sc);
        result_bad(r, "$.kind", want, got);
    } else if (!own && (!k || !result_kinds[ki])) {
        snprintf(got, sizeof got, k ? "'%.60s'" : "%s", k ? k : json_type(kind));
        result_bad(r, "$.kind", "one of \"load\", \"ctx_sweep\", \"switch\"", got);
    } else if (target && !cJSON_IsObject(target) && !cJSON_IsNull(target)) {
        result_bad(r, "$.target", "an object", json_type(target));
    } else if (eval && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "items"))) {
        result_bad(r, "$.items", "an array (an eval result)", json_type(cJSON_GetObjectItemCaseSensitive(j, "items")));
    } else if (own && !cJSON_IsObject(summary)) {
        snprintf(want, sizeof want, "an object (a%s %s result)", eval ? "n" : "", own);
        result_bad(r, "$.summary", want, json_type(summary));
    } else if (!own && strcmp(k, "switch") && !cJSON_IsArray(points)) {
        result_bad(r, "$.points", "an array (a load or ctx_sweep result)", json_type(points));
    } else if (!own && !strcmp(k, "switch") &&
               (!cJSON_IsArray(modes) || cJSON_GetArraySize(modes) != 2 ||
                !cJSON_IsString(cJSON_GetArrayItem(modes, 0)) || !cJSON_IsString(cJSON_GetArrayItem(modes, 1)))) {
        result_bad(r, "$.modes", "an array of two mode ids (a switch result)", json_type(modes));
    } else {
        return own ? own : k;
    }
    return NULL;
}

/* POST /results: a gpumod bench result document (docs/bench.md) stored
 * without its raw requests, or a gpumod eval one (docs/eval.md); 201
 * {"id"}. */
static void post_results(req *r)
{
    if (!r->d->st) {
        api_error(r->c, 503, "unavailable", NULL, "results: the state database is not open");
        return;
    }
    if (r->body->len > API_RESULTS_MAX_BODY) { /* a chunked body: on_head saw no length */
        api_error(r->c, 413, "too_large", NULL, "results: the document is %zu bytes, over the limit of %u bytes",
                    r->body->len, (unsigned)API_RESULTS_MAX_BODY);
        return;
    }
    cJSON *j = body_json(r, "results");
    if (!j) return;
    const char *k = result_check(r, j);
    if (!k) {
        cJSON_Delete(j);
        return;
    }
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(j, "target");
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(j, "points");
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(j, "modes");
    /* the raw requests (--raw) stay in the user's file, not here */
    cJSON *pt;
    cJSON_ArrayForEach(pt, points)
    {
        cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(pt, "iterations"))
            if (cJSON_IsObject(it)) cJSON_DeleteItemFromObjectCaseSensitive(it, "requests");
    }
    cJSON *sum = result_summary(j, k);
    char *doc = cJSON_PrintUnformatted(j), *sumtext = cJSON_PrintUnformatted(sum);
    char tgt[256];
    const char *spec = obj_str(target, "spec");
    if (spec)
        snprintf(tgt, sizeof tgt, "%s", spec);
    else if (!strcmp(k, "switch"))
        snprintf(tgt, sizeof tgt, "%s,%s", cJSON_GetArrayItem(modes, 0)->valuestring,
                 cJSON_GetArrayItem(modes, 1)->valuestring);
    else if (!strcmp(k, "tune") && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(sum, "service")))
        snprintf(tgt, sizeof tgt, "%s", cJSON_GetObjectItemCaseSensitive(sum, "service")->valuestring);
    else
        snprintf(tgt, sizeof tgt, "?");
    store_result sr = {.ts_ms = clock_unix_ms(),
                       .kind = (char *)k,
                       .target = tgt,
                       .service = (char *)(obj_str(target, "service") ? obj_str(target, "service")
                                           : !strcmp(k, "tune") ? obj_str(sum, "service") : NULL),
                       .config_hash = (char *)obj_str(target, "config_hash"),
                       .summary = sumtext,
                       .doc = doc};
    int64_t id = 0, pruned = 0;
    char err[256];
    if (store_result_add(r->d->st, &sr, 0, 0, &id, &pruned, err, sizeof err)) {
        log_warn("results: %s", err);
        api_error(r->c, 500, "internal", NULL, "results: cannot store the result: %s", err);
    } else {
        if (pruned) log_info("results: stored %" PRId64 ", %" PRId64 " older pruned", id, pruned);
        buf b = BUF_INIT;
        buf_printf(&b, "{\"id\":%" PRId64 "}", id);
        api_reply(r->c, 201, &b);
        buf_release(&b);
    }
    free(doc);
    free(sumtext);
    cJSON_Delete(sum);
    cJSON_Delete(j);
}

static void result_row_json(buf *b, const store_result *x)
{
    buf_printf(b, "{\"id\":%" PRId64 ",\"ts\":", x->id);
    buf_json_time(b, x->ts_ms);
    buf_adds(b, ",\"kind\":");
    buf_json_str_or_null(b, x->kind);
    buf_adds(b, ",\"target\":");
    buf_json_str_or_null(b, x->target);
    buf_adds(b, ",\"service\":");
    buf_json_str_or_null(b, x->service);
    buf_adds(b, ",\"config_hash\":");
    buf_json_str_or_null(b, x->config_hash);
    buf_printf(b, ",\"bytes\":%" PRId64 ",\"summary\":", x->bytes);
    buf_adds(b, x->summary && *x->summary ? x->summary : "null");
    buf_addc(b, '}');
}

/* GET /results?service=&kind=&n=: newest first, without the documents. */
static void get_results(req *r)
{
    int64_t n = qint(r, "n");
    if (n == -2 || n == 0 || n > 1000) {
        api_error(r->c, 400, "bad_request", NULL, "results: n must be an integer from 1 to 1000, not '%s'",
                    qget(r, "n"));
        return;
    }
    if (!r->d->st) {
        api_error(r->c, 503, "unavailable", NULL, "results: the state database is not open");
        return;
    }
    const char *svc = qget(r, "service"), *kind = qget(r, "kind");
    store_result *v = NULL;
    size_t cnt = 0;
    char err[256];
    if (store_results(r->d->st, svc && *svc ? svc : NULL, kind && *kind ? kind : NULL, n > 0 ? (size_t)n : 20, &v,
                      &cnt, err, sizeof err)) {
        api_error(r->c, 503, "unavailable", NULL, "results: %s", err);
        return;
    }
    buf b = BUF_INIT;
    buf_adds(&b, "{\"results\":[");
    for (size_t i = 0; i < cnt; i++) {
        if (i) buf_addc(&b, ',');
        result_row_json(&b, &v[i]);
    }
    buf_adds(&b, "]}");
    api_reply(r->c, 200, &b);
    buf_release(&b);
    store_results_free(v, cnt);
}

/* GET /results/ID: the document as stored. */
static void get_result(req *r)
{
    int64_t id = digits_int(r->seg[1]);
    if (id <= 0) {
        api_error(r->c, 400, "bad_request", NULL, "results: '%s' is not a result id (a positive integer)",
                    r->seg[1]);
        return;
    }
    if (!r->d->st) {
        api_error(r->c, 503, "unavailable", NULL, "results: the state database is not open");
        return;
    }
    store_result *v = NULL;
    char err[256];
    int found = store_result_get(r->d->st, id, &v, err, sizeof err);
    if (found < 0) {
        api_error(r->c, 503, "unavailable", NULL, "results: %s", err);
    } else if (!found) {
        api_error(r->c, 404, "not_found", NULL, "results: no result %" PRId64 " (pruned, or never stored)", id);
    } else {
        buf b = BUF_INIT;
        buf_adds(&b, v[0].doc);
        api_reply(r->c, 200, &b);
        buf_release(&b);
        store_results_free(v, 1);
    }
}

/* Body limits per route, decided from the request head: POST /results
 * takes API_RESULTS_MAX_BODY, every other route API_MAX_BODY.  The
 * server's own limit (API_SERVER_MAX_BODY) is set so high that it never
 * answers first: a declared Content-Length over the route's limit is
 * answered 413 here at once, and a chunked body is streamed into a
 * per-connection gather (the connection's ud) and answered 413 as soon
 * as its count passes the route's limit, so no route buffers more than
 * its own limit. */
typedef struct api_gather {
    const http_msg *m; /* valid until the response has ended */
    buf body;
    uint64_t lim;
    bool results;
} api_gather;

static bool is_post_results(const http_msg *m)
{
    return m->method.len == 4 && !memcmp(m->method.p, "POST", 4) && m->target.len >= 8 &&
           !memcmp(m->target.p, "/results", 8) && (m->target.len == 8 || m->target.p[8] == '?');
}

static void reply_too_large(srv_conn *c, const http_msg *m, const char *at_least, uint64_t n, uint64_t lim,
                            bool results)
{
    api_error(c, 413, "too_large", NULL,
                "%.*s %.*s: the body is %s%" PRIu64 " bytes, over the limit of %" PRIu64 " bytes%s",
                (int)m->method.len, m->method.p, (int)m->target.len, m->target.p, at_least, n, lim,
                results ? " (a bench result without --raw requests is far smaller)" : "");
}

static void gather_free(srv_conn *c, api_gather *g)
{
    srv_conn_set_ud(c, NULL);
    buf_release(&g->body);
    free(g);
}

srv_mode api_head(srv_conn *c, const http_msg *m, void *ud)
{
    (void)ud;
    bool results = is_post_results(m);
    uint64_t lim = results ? API_RESULTS_MAX_BODY : API_MAX_BODY;
    if (m->framing == HTTP_FRAME_LENGTH) {
        if (m->content_length <= lim) return SRV_BUFFER;
        reply_too_large(c, m, "", m->content_length, lim, results);
        return SRV_STREAM;
    }
    if (m->framing != HTTP_FRAME_CHUNKED) return SRV_BUFFER;
    api_gather *g = xcalloc(1, sizeof *g);
    g->m = m;
    g->lim = lim;
    g->results = results;
    srv_conn_set_ud(c, g);
    return SRV_STREAM;
}

void api_body(srv_conn *c, const view *chunk, bool last, void *ud)
{
    api_gather *g = srv_conn_ud(c);
    if (!g) return; /* the Content-Length 413 above has answered */
    if (g->body.len + chunk->len > g->lim) {
        reply_too_large(c, g->m, "at least ", (uint64_t)(g->body.len + chunk->len), g->lim, g->results);
        gather_free(c, g);
        return;
    }
    buf_add(&g->body, chunk->p, chunk->len);
    if (!last) return;
    const http_msg *m = g->m;
    buf body = g->body;
    g->body = (buf)BUF_INIT;
    gather_free(c, g);
    view v = {body.p ? body.p : "", body.len};
    api_request(c, m, &v, ud);
    buf_release(&body);
}

/* ---- reload ------------------------------------------------------------ */

static void diags_json(buf *b, const config *cfg, diag_level lv)
{
    bool first = true;
    buf_addc(b, '[');
    for (size_t i = 0; i < cfg->diags.n; i++) {
        const diag *g = &cfg->diags.v[i];
        if (g->level != lv) continue;
        buf_adds(b, first ? "{\"file\":" : ",{\"file\":");
        first = false;
        buf_json_str_or_null(b, g->pos.file);
        buf_printf(b, ",\"line\":%d,\"col\":%d,\"message\":", g->pos.line, g->pos.col);
        buf_json_str(b, g->msg);
        buf_addc(b, '}');
    }
    buf_addc(b, ']');
}

static bool str_eq(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static void record_event(gpumodd *d, const char *reason, const char *data)
{
    if (!d->st) return;
    store_event e = {.ts_ms = clock_unix_ms(), .kind = "reload", .reason = reason, .data = data};
    char err[256];
    if (store_event_add(d->st, &e, NULL, err, sizeof err)) log_warn("%s", err);
}

/* A loaded configuration's warnings, one log line each (as the daemon's
 * start logs them): keys accepted but not yet acted on must be seen. */
static void log_diag_warnings(const config *nc, const char *what)
{
    for (size_t i = 0; i < nc->diags.n; i++) {
        const diag *g = &nc->diags.v[i];
        if (g->level != DIAG_WARNING) continue;
        if (g->pos.file && g->pos.line)
            log_warn("%s: %s:%d:%d: %s", what, g->pos.file, g->pos.line, g->pos.col, g->msg);
        else
            log_warn("%s: %s: %s", what, g->pos.file ? g->pos.file : "-", g->msg);
    }
}

void api_reload(gpumodd *d, const char *origin, buf *out, int *status)
{
    config *nc = xcalloc(1, sizeof *nc);
    config_load(nc, &d->paths);
    buf_clear(out);
    if (nc->diags.errors) {
        buf detail = BUF_INIT, msg = BUF_INIT;
        buf_adds(&detail, "{\"errors\":");
        diags_json(&detail, nc, DIAG_ERROR);
        buf_adds(&detail, ",\"warnings\":");
        diags_json(&detail, nc, DIAG_WARNING);
        buf_addc(&detail, '}');
        buf_printf(&msg, "the configuration in %s has %zu error%s; the running configuration is kept",
                   nc->config_dir, nc->diags.errors, nc->diags.errors == 1 ? "" : "s");
        for (size_t i = 0; i < nc->diags.n; i++) {
            const diag *g = &nc->diags.v[i];
            if (g->level != DIAG_ERROR) continue;
            if (g->pos.file && g->pos.line)
                buf_printf(&msg, "\n%s:%d:%d: %s", g->pos.file, g->pos.line, g->pos.col, g->msg);
            else if (g->pos.file)
                buf_printf(&msg, "\n%s: %s", g->pos.file, g->msg);
            else
                buf_printf(&msg, "\n%s", g->msg);
        }
        api_error_body(out, "config_invalid", msg.p, detail.p);
        log_error("reload (%s) refused: %s", origin, msg.p);
        record_event(d, "reload refused: configuration errors; the running configuration is kept", detail.p);
        buf_release(&detail);
        buf_release(&msg);
        config_release(nc);
        free(nc);
        *status = 422;
        return;
    }
    strv changed = STRV_INIT;
    char err[512];
    if (sup_set_config(d->sup, nc, &changed, err, sizeof err)) {
        api_error_body(out, "config_invalid", err, NULL);
        log_error("reload (%s) refused: %s", origin, err);
        strv_release(&changed);
        config_release(nc);
        free(nc);
        *status = 422;
        return;
    }
    if (d->wd) watchdog_set_settings(d->wd, &nc->set);
    strv notes = STRV_INIT;
    if (strcmp(nc->set.socket, d->socket_path))
        strv_pushf(&notes, "socket changed to '%s': takes effect when the daemon restarts", nc->set.socket);
    if (strcmp(nc->set.state_dir, d->state_dir))
        strv_pushf(&notes, "state_dir changed to '%s': takes effect when the daemon restarts", nc->set.state_dir);
    if (strcmp(nc->set.log_dir, d->log_dir))
        strv_pushf(&notes, "log_dir changed to '%s': takes effect when the daemon restarts", nc->set.log_dir);
    const settings *os = &d->cfg->set;
    if (!str_eq(nc->set.socket_group, os->socket_group))
        strv_pushf(&notes, "socket_group changed to '%s': takes effect when the daemon restarts",
                   nc->set.socket_group ? nc->set.socket_group : "");
    if (nc->set.memory.nvml_timeout_ms != os->memory.nvml_timeout_ms)
        strv_pushf(&notes, "memory.nvml_timeout changed to %lld ms: takes effect when the daemon restarts",
                   (long long)nc->set.memory.nvml_timeout_ms);
    if (nc->set.supervisor.runner != os->supervisor.runner)
        strv_pushf(&notes, "supervisor.runner changed to '%s': takes effect when the daemon restarts",
                   nc->set.supervisor.runner == RUNNER_SYSTEMD ? "systemd" : "spawn");
    if (!str_eq(nc->set.router.listen, os->router.listen) || nc->set.router.enabled != os->router.enabled)
        strv_pushf(&notes, "router.enabled / router.listen changed: takes effect when the daemon restarts");
    config *old = d->cfg;
    d->cfg = nc;
    if (d->router) router_set_config(d->router, nc); /* before the old config's strings go */
    config_release(old);
    free(old);

    buf_printf(out, "{\"ok\":true,\"config_dir\":");
    buf_json_str(out, nc->config_dir);
    buf_printf(out, ",\"presets\":%zu,\"modes\":%zu,\"changed\":[", nc->n_presets, nc->n_modes);
    buf data = BUF_INIT;
    buf_adds(&data, "{\"changed\":[");
    for (size_t i = 0; i < changed.n; i++) {
        buf_adds(out, i ? "," : "");
        buf_json_str(out, changed.v[i]);
        buf_adds(&data, i ? "," : "");
        buf_json_str(&data, changed.v[i]);
    }
    buf_printf(&data, "],\"presets\":%zu,\"modes\":%zu,\"warnings\":", nc->n_presets, nc->n_modes);
    diags_json(&data, nc, DIAG_WARNING);
    buf_addc(&data, '}');
    buf_adds(out, "],\"notes\":[");
    for (size_t i = 0; i < notes.n; i++) {
        buf_adds(out, i ? "," : "");
        buf_json_str(out, notes.v[i]);
    }
    buf_adds(out, "],\"warnings\":");
    diags_json(out, nc, DIAG_WARNING);
    buf_addc(out, '}');
    buf reason = BUF_INIT;
    buf_printf(&reason, "configuration reloaded (%s): %zu presets, %zu modes", origin, nc->n_presets, nc->n_modes);
    if (changed.n) {
        buf_adds(&reason, "; changed while running (restart to apply):");
        for (size_t i = 0; i < changed.n; i++) buf_printf(&reason, " %s", changed.v[i]);
    }
    log_info("%s", reason.p);
    for (size_t i = 0; i < notes.n; i++) log_warn("%s", notes.v[i]);
    log_diag_warnings(nc, "reload");
    record_event(d, reason.p, data.p);
    buf_release(&reason);
    buf_release(&data);
    strv_release(&notes);
    strv_release(&changed);
    *status = 200;
}

static void post_reload(req *r)
{
    buf b = BUF_INIT;
    int status;
    api_reload(r->d, "api", &b, &status);
    api_reply(r->c, status, &b);
    buf_release(&b);
}

/* ---- the table --------------------------------------------------------- */

/* A pattern's segments; "*" matches one segment (a service id). */
typedef struct route {
    const char *method;
    const char *pat[5];
    void (*fn)(req *r);
} route;

/* the tune lease: src/daemon/api_tune.c */
static void tune_post(req *r) { api_tune_post(r->d, r->c, r->body); }
static void tune_get(req *r) { api_tune_get(r->d, r->c); }
static void tune_put(req *r) { api_tune_put(r->d, r->c, r->seg[1], r->body); }
static void tune_delete(req *r) { api_tune_delete(r->d, r->c, r->seg[1]); }

/* ---- sleep ---- */

typedef struct sleep_req {
    srv_conn *c;
    char *id;
} sleep_req;

static void sleep_done(const sup_result *res, void *ud)
{
    sleep_req *q = ud;
    buf b = BUF_INIT;
    if (res->outcome == SUP_OK) {
        api_sleep_json(&b, q->id, res);
    } else {
        buf d = BUF_INIT;
        api_result_detail_json(&d, res);
        api_error_body(&b, sup_outcome_code(res->outcome), res->message ? res->message : "failed", d.p);
        buf_release(&d);
    }
    api_reply(q->c, sup_outcome_status(res->outcome), &b);
    buf_release(&b);
    free(q->id);
    free(q);
}

static void post_sleep(req *r)
{
    const char *origin = qget(r, "origin");
    if (!origin || (strcmp(origin, "cli") && strcmp(origin, "api"))) origin = "api";
    sleep_req *q = xcalloc(1, sizeof *q);
    q->c = r->c;
    q->id = xstrdup(r->seg[1]);
    sup_sleep(r->d->sup, q->id, origin, sleep_done, q);
}

static void post_engine_bench(req *r) { api_ebench_post(r->d, r->c, r->seg[1], r->body); }
static void post_start(req *r) { post_op(r, OP_START); }
static void post_stop(req *r) { post_op(r, OP_STOP); }
static void post_restart(req *r) { post_op(r, OP_RESTART); }

/* ---- a router-mode service's models (daemon/rmodels.c) ---- */

typedef struct model_req {
    srv_conn *c;
    char *svc, *model;
    bool load;
} model_req;

static void model_done(const sup_result *res, void *ud)
{
    model_req *o = ud;
    buf b = BUF_INIT;
    if (res->outcome == SUP_OK) {
        buf_adds(&b, "{\"service\":");
        buf_json_str(&b, o->svc);
        buf_adds(&b, ",\"model\":");
        buf_json_str(&b, o->model);
        buf_printf(&b, ",\"state\":\"%s\"}", o->load ? "loaded" : "unloaded");
    } else {
        buf d = BUF_INIT;
        api_result_detail_json(&d, res);
        api_error_body(&b, sup_outcome_code(res->outcome), res->message ? res->message : "failed",
                       d.len ? d.p : NULL);
        buf_release(&d);
    }
    api_reply(o->c, sup_outcome_status(res->outcome), &b);
    buf_release(&b);
    free(o->svc);
    free(o->model);
    free(o);
}

static void post_model(req *r, bool load)
{
    if (!r->d->rm) {
        api_error(r->c, 503, "unavailable", NULL, "the daemon is starting or shutting down");
        return;
    }
    model_req *o = xcalloc(1, sizeof *o);
    o->c = r->c;
    o->svc = xstrdup(r->seg[1]);
    o->model = xstrdup(r->seg[3]);
    o->load = load;
    const char *origin = qget(r, "origin");
    if (!origin || (strcmp(origin, "cli") && strcmp(origin, "api"))) origin = "api";
    rmodels_op(r->d->rm, o->svc, o->model, load, origin, model_done, o);
}

static void post_model_load(req *r) { post_model(r, true); }
static void post_model_unload(req *r) { post_model(r, false); }

static const route routes[] = {
    {"GET", {"status"}, get_status},
    {"GET", {"services"}, get_services},
    {"GET", {"services", "*"}, get_service},
    {"POST", {"services", "*", "start"}, post_start},
    {"POST", {"services", "*", "stop"}, post_stop},
    {"POST", {"services", "*", "restart"}, post_restart},
    {"POST", {"services", "*", "sleep"}, post_sleep},
    {"POST", {"services", "*", "engine-bench"}, post_engine_bench},
    {"POST", {"services", "*", "models", "*", "load"}, post_model_load},
    {"POST", {"services", "*", "models", "*", "unload"}, post_model_unload},
    {"GET", {"services", "*", "logs"}, get_logs},
    {"GET", {"events"}, get_events},
    {"POST", {"preflight"}, post_preflight},
    {"GET", {"modes"}, get_modes},
    {"GET", {"modes", "current"}, get_mode_current},
    {"POST", {"modes", "switch"}, post_mode_switch},
    {"GET", {"switches"}, get_switches},
    {"GET", {"switches", "*"}, get_switch},
    {"POST", {"reload"}, post_reload},
    {"GET", {"route"}, route_table},
    {"GET", {"route", "default"}, route_default},
    {"GET", {"route", "resolve"}, route_resolve_model},
    {"PUT", {"route", "default"}, route_default},
    {"POST", {"results"}, post_results},
    {"GET", {"results"}, get_results},
    {"GET", {"results", "*"}, get_result},
    {"POST", {"tune"}, tune_post},
    {"GET", {"tune"}, tune_get},
    {"PUT", {"tune", "*"}, tune_put},
    {"DELETE", {"tune", "*"}, tune_delete},
    {NULL},
};

static bool route_matches(const route *rt, const req *r)
{
    size_t n = 0;
    while (n < 5 && rt->pat[n]) n++;
    if (n != r->nseg) return false;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rt->pat[i], "*")) continue;
        if (strcmp(rt->pat[i], r->seg[i])) return false;
    }
    return true;
}

void api_request(srv_conn *c, const http_msg *m, const view *body, void *ud)
{
    gpumodd *d = ud;
    req r = {.d = d, .c = c, .m = m, .body = body};
    if (parse_target(&r)) {
        api_error(c, 400, "bad_request", NULL, "malformed request target '%.*s'", (int)m->target.len,
                    m->target.p);
        req_release(&r);
        return;
    }
    const route *hit = NULL, *path_hit = NULL;
    for (const route *rt = routes; rt->method; rt++) {
        if (!route_matches(rt, &r)) continue;
        if (!path_hit) path_hit = rt;
        if (method_is(&r, rt->method)) {
            hit = rt;
            break;
        }
    }
    if (hit && hit->fn != post_results && body->len > API_MAX_BODY) {
        api_error(c, 413, "too_large", NULL, "%.*s %s: the body is %zu bytes, over the limit of %u bytes",
                    (int)m->method.len, m->method.p, r.path, body->len, (unsigned)API_MAX_BODY);
    } else if (hit) {
        log_debug("%.*s %.*s", (int)m->method.len, m->method.p, (int)m->target.len, m->target.p);
        hit->fn(&r);
    } else if (path_hit) {
        buf allow = BUF_INIT;
        for (const route *rt = routes; rt->method; rt++)
            if (route_matches(rt, &r)) buf_printf(&allow, "%s%s", allow.len ? ", " : "", rt->method);
        api_error(c, 405, "method_not_allowed", NULL, "%.*s %s: method not allowed (allowed: %s)",
                    (int)m->method.len, m->method.p, r.path, allow.p);
        buf_release(&allow);
    } else {
        api_error(c, 404, "not_found", NULL, "no route %.*s %s (see docs/api.md)", (int)m->method.len,
                    m->method.p, r.path);
    }
    req_release(&r);
}
