/* api_events.c - GET /events?follow=1 (api_events.h): the event stream,
 * one event object a line (NDJSON) in a chunked response.
 *
 * Design: a stream never holds events of its own.  It remembers the id
 * of the last event it has passed (sent or filtered out) and reads what
 * follows from the store, the one place every event is written; the
 * store calls back after each insert (store_on_event), on the loop
 * thread, and every stream reads on from its id.  The stored backlog and
 * the live events are therefore one sequence: nothing is lost between
 * them and nothing is sent twice.  Catching up pauses while the peer is
 * congested and goes on from on_drain; once caught up, a reader that
 * lets more than the cap queue up is cut with a last line naming the id
 * to follow again from (the daemon's memory stays bounded). */
#include "daemon/api_events.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What a live stream may let queue for a reader that does not read.
 * GPUMOD_EVENTS_FOLLOW_MAX (bytes) lowers it for the tests. */
#define EVSTREAM_MAX_QUEUED ((size_t)1 << 20)
/* Events read from the store at a time. */
#define EVSTREAM_PAGE 256

typedef struct api_evstream {
    gpumodd *d;
    srv_conn *c;
    char *service;   /* the filter, or NULL */
    unsigned kinds;  /* store_event_query.kinds */
    int64_t last_id; /* the last event passed: the stream goes on after it */
    bool caught_up;  /* the backlog is out: live from here */
    size_t cap;      /* EVSTREAM_MAX_QUEUED or the tests' lower one */
    struct api_evstream *next;
} api_evstream;

static size_t max_queued(void)
{
    const char *v = getenv("GPUMOD_EVENTS_FOLLOW_MAX");
    char *end;
    unsigned long long n = v && *v ? strtoull(v, &end, 10) : 0;
    return n && !*end ? (size_t)n : EVSTREAM_MAX_QUEUED;
}

static void evstream_end(api_evstream *s, const char *why, const char *message)
{
    gpumodd *d = s->d;
    for (api_evstream **pp = &d->evstreams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    if (why) {
        buf b = BUF_INIT;
        buf_adds(&b, "{\"end\":");
        buf_json_str(&b, why);
        buf_printf(&b, ",\"since\":%" PRId64 ",\"message\":", s->last_id);
        buf_json_str(&b, message);
        buf_adds(&b, "}\n");
        srv_write(s->c, b.p, b.len);
        buf_release(&b);
    }
    srv_end(s->c);
    free(s->service);
    free(s);
}

/* Send one page after s->last_id.  1: more may follow, 0: caught up,
 * -1: the store failed or the peer is gone (s may be freed: leave it). */
static int evstream_page(api_evstream *s)
{
    store_event_query q = {.since_id = s->last_id, .service = s->service, .kinds = s->kinds,
                           .limit = EVSTREAM_PAGE};
    store_event *ev = NULL;
    size_t n = 0;
    char err[256];
    if (store_events_query(s->d->st, &q, &ev, &n, err, sizeof err)) {
        log_warn("events: a follow stream ended: %s", err);
        evstream_end(s, "error", err);
        return -1;
    }
    buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        api_event_json(&b, &ev[i]);
        buf_addc(&b, '\n');
        s->last_id = ev[i].id;
    }
    /* a write to a dead connection may already have ended s (on_abort) */
    int w = srv_write(s->c, b.p, b.len);
    buf_release(&b);
    store_events_free(ev, n);
    return w < 0 ? -1 : n == EVSTREAM_PAGE;
}

/* Catch up page by page while the peer keeps up; live, cut a reader that
 * lets more than the cap queue. */
static void evstream_pump(api_evstream *s)
{
    size_t queued = srv_conn_queued(s->c), cap = s->cap;
    if (s->caught_up && queued > cap) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "events: the reader fell %zu bytes behind; this stream ends after event %" PRId64
                 ": follow again with since=%" PRId64,
                 queued, s->last_id, s->last_id);
        log_warn("events: a follow stream fell more than %zu bytes behind; ended it after event %" PRId64, cap,
                 s->last_id);
        evstream_end(s, "slow_reader", msg);
        return;
    }
    for (;;) {
        if (!s->caught_up && srv_conn_congested(s->c)) return; /* on_drain goes on */
        int more = evstream_page(s);
        if (more < 0) return;
        if (!more) {
            s->caught_up = true;
            return;
        }
    }
}

static void evstream_notify(int64_t id, void *ud)
{
    gpumodd *d = ud;
    (void)id;
    for (api_evstream *s = d->evstreams, *next; s; s = next) {
        next = s->next; /* a pump may end s */
        if (s->caught_up) evstream_pump(s);
    }
}

void api_events_follow(gpumodd *d, srv_conn *c, int64_t since_id, const char *service, unsigned kinds)
{
    if (srv_respond_start(c, 200, "application/x-ndjson") < 0) return;
    api_evstream *s = xcalloc(1, sizeof *s);
    s->d = d;
    s->c = c;
    s->service = service ? xstrdup(service) : NULL;
    s->kinds = kinds;
    s->last_id = since_id;
    s->cap = max_queued();
    s->next = d->evstreams;
    d->evstreams = s;
    store_on_event(d->st, evstream_notify, d);
    evstream_pump(s);
}

bool api_events_abort(gpumodd *d, srv_conn *c)
{
    for (api_evstream *s = d->evstreams; s; s = s->next)
        if (s->c == c) {
            evstream_end(s, NULL, NULL);
            return true;
        }
    return false;
}

void api_events_drain(gpumodd *d, srv_conn *c)
{
    for (api_evstream *s = d->evstreams; s; s = s->next)
        if (s->c == c) {
            if (!s->caught_up) evstream_pump(s);
            return;
        }
}

void api_events_close(gpumodd *d)
{
    while (d->evstreams) {
        api_evstream *s = d->evstreams;
        char msg[160];
        snprintf(msg, sizeof msg, "events: the daemon is shutting down; follow again with since=%" PRId64,
                 s->last_id);
        evstream_end(s, "shutting_down", msg);
    }
}
