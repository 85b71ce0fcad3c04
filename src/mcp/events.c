/* events.c - resources/updated from the daemon's event stream (see
 * events.h). */
#include "mcp/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/ctl.h"
#include "mcp/rpc.h"
#include "util/buf.h"
#include "util/lines.h"

typedef struct feed {
    mcp_server *s;
    buf line;     /* a partial line */
    long last_id; /* the newest event seen, or the newest at the start */
    bool known;   /* last_id has been read from the daemon */
} feed;

void mcp_event_uris(const cJSON *ev, const strv *subs, strv *out)
{
    const char *svc = jstr(ev, "service"), *kind = jstr(ev, "kind");
    strv_push(out, "gpumod://status");
    strv_push(out, "gpumod://events");
    if (svc) {
        strv_push(out, "gpumod://services");
        strv_pushf(out, "gpumod://services/%s", svc);
    }
    if (kind &&
        (!strcmp(kind, "state") || !strcmp(kind, "switch.phase") || !strcmp(kind, "reload"))) {
        strv_push(out, "gpumod://modes");
        for (size_t i = 0; i < subs->n; i++)
            if (!strncmp(subs->v[i], "gpumod://modes/", 15)) strv_push(out, subs->v[i]);
    }
}

static void on_event(feed *f, const cJSON *ev)
{
    f->last_id = (long)jnum(ev, "id", (double)f->last_id);
    mcp_server *s = f->s;
    strv uris = STRV_INIT, subs = STRV_INIT;
    pthread_mutex_lock(&s->mu);
    bool ready = s->initialized;
    strv_copy(&subs, &s->subs);
    pthread_mutex_unlock(&s->mu);
    if (ready && subs.n) mcp_event_uris(ev, &subs, &uris);
    for (size_t i = 0; i < uris.n; i++) {
        if (strv_find(&subs, uris.v[i]) < 0) continue;
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "uri", uris.v[i]);
        mcp_send(s, rpc_notification("notifications/resources/updated", p));
    }
    strv_release(&uris);
    strv_release(&subs);
}

/* one line of the stream: an event (or the end line) */
static void on_line(void *ud, const char *p, size_t n)
{
    feed *f = ud;
    cJSON *ev = cJSON_ParseWithLength(p, n);
    if (ev && !cJSON_GetObjectItemCaseSensitive(ev, "end")) on_event(f, ev);
    cJSON_Delete(ev);
}

static bool on_body(const char *p, size_t len, void *ud)
{
    feed *f = ud;
    lines_feed(&f->line, p, len, 1 << 20, on_line, f);
    return !f->s->stop;
}

static bool on_tick(void *ud)
{
    feed *f = ud;
    return !f->s->stop;
}

static void nap(mcp_server *s, int64_t ms)
{
    for (int64_t t = 0; t < ms && !s->stop; t += 100)
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
}

/* The newest event's id (0 when there is none yet), false when the
 * daemon does not answer: every stream is opened with since= the last id
 * seen, this at first, so nothing between two streams is lost (a daemon
 * restarted keeps its store, and its ids go on). */
static bool newest_id(mcp_server *s, long *id)
{
    http_reply r;
    char msg[512];
    bool ok = false;
    if (!ctl_request(&s->paths, "GET", "/events?limit=1", NULL, CTL_QUICK_MS, &r, msg,
                     sizeof msg) &&
        r.status == 200) {
        cJSON *j = cJSON_ParseWithLength(r.body.p, r.body.len);
        const cJSON *evs = cJSON_GetObjectItemCaseSensitive(j, "events");
        *id = (long)jnum(cJSON_GetArrayItem(evs, cJSON_GetArraySize(evs) - 1), "id", 0);
        ok = j != NULL;
        cJSON_Delete(j);
    }
    http_reply_release(&r);
    return ok;
}

static void *run(void *arg)
{
    feed f = {.s = arg, .line = BUF_INIT};
    int64_t backoff = 250;
    while (!f.s->stop) {
        char target[96], msg[512];
        if (!f.known && !(f.known = newest_id(f.s, &f.last_id))) {
            backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
            nap(f.s, backoff);
            continue;
        }
        snprintf(target, sizeof target, "/events?follow=1&since=%ld", f.last_id);
        http_stream_opts o = {
            .on_body = on_body, .on_tick = on_tick, .tick_ms = 200, .ud = &f, .stop = &f.s->stop};
        http_reply r;
        int rc = ctl_stream_msg(&f.s->paths, target, &o, &r, msg, sizeof msg);
        bool opened = !rc && r.status == 200;
        http_reply_release(&r);
        f.line.len = 0;
        if (f.s->stop) break;
        backoff = opened ? 250 : backoff * 2 > 2000 ? 2000 : backoff * 2;
        nap(f.s, backoff);
    }
    buf_release(&f.line);
    return NULL;
}

int mcp_events_start(mcp_server *s, pthread_t *th)
{
    return pthread_create(th, NULL, run, s);
}
