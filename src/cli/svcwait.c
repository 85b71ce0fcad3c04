/* svcwait.c - waiting for a start's outcome on the event stream
 * (svcwait.h).
 *
 * The stream is opened without since=: it carries what happens after the
 * daemon answered the GET.  What happened before is in the service's
 * state, read again when the stream's head has come (the first tick), so
 * an outcome that came between the start's answer and the stream is not
 * missed.  After that each line of the stream (an event of this service)
 * makes one GET of the service: the outcome is in its last_start, which
 * the daemon sets in the same loop turn as the event that ends the start
 * (the footprint event of a ready start, the state event of a failed
 * one), so the GET that follows the event sees it.  A stream the daemon
 * ends (its stop, a slow reader) is opened again after one more read of
 * the service; a stream that fails is followed by that read too, which
 * finds the daemon gone or restarted and says so; a daemon without the
 * stream (an older one) is polled every 50 ms instead. */
#include "cli/svcwait.h"
#include "cli/ctl.h"
#include "util/clock.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TICK_TTY_MS 200
#define TICK_MS 1000
#define POLL_MS 50

typedef struct waiter {
    cli *c;
    const svc_wait_in *in;
    uint64_t seq;
    double dpid;
    char *dstarted;
    int64_t deadline;
    cJSON *s;     /* the service as last read */
    buf line;     /* a partial line of the stream */
    bool done;
    int rc;
} waiter;

static void url_id(buf *t, const char *id)
{
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-_.~", *p))
            buf_addc(t, (char)*p);
        else
            buf_printf(t, "%%%02X", *p);
    }
}

static void clear_line(const waiter *w)
{
    if (w->in->tty) {
        fputs("\r\033[K", stdout);
        fflush(stdout);
    }
}

static void progress_draw(const cJSON *s, const char *id)
{
    const char *state = jstr(s, "state");
    buf b = BUF_INIT;
    buf_adds(&b, "\r\033[K");
    if (!jnull(s, "queued")) {
        buf_printf(&b, "%s: queued #%.0f for the load slot", id, jnum(s, "queued", 0));
    } else {
        int pct = jnull(s, "progress_pct") ? 0 : (int)jnum(s, "progress_pct", 0);
        int fill = pct * 30 / 100;
        buf_addc(&b, '[');
        for (int i = 0; i < 30; i++) buf_addc(&b, i < fill ? '#' : '.');
        buf_printf(&b, "] %3d%% %s %s", pct, id, state ? state : "?");
    }
    fputs(b.p, stdout);
    fflush(stdout);
    buf_release(&b);
}

static void finish(waiter *w, int rc)
{
    w->done = true;
    w->rc = rc;
}

/* Read the service again; false (and done) when the daemon is gone,
 * restarted, or the answer is not the service. */
static bool refresh(waiter *w)
{
    buf t = BUF_INIT;
    buf_adds(&t, "/services/");
    url_id(&t, w->in->id);
    buf_adds(&t, "?daemon=1");
    http_reply r;
    int rc = ctl_call(w->c, "GET", t.p, NULL, CTL_QUICK_MS, true, &r);
    buf_release(&t);
    if (rc) {
        clear_line(w);
        fprintf(stderr, "gpumod: service start: the daemon %s while '%s' was starting (start ticket %llu); once "
                "a daemon runs, 'gpumod service show %s' tells the state\n",
                rc == EXIT_TIMEOUT ? "stopped answering" : "went away", w->in->id, (unsigned long long)w->seq,
                w->in->id);
        finish(w, rc);
        return false;
    }
    cJSON *j = NULL;
    if (r.status != 200) rc = ctl_fail(&r, "service");
    else if (!(j = ctl_json(&r, "service"))) rc = EXIT_REFUSED;
    http_reply_release(&r);
    if (rc) {
        clear_line(w);
        finish(w, rc);
        return false;
    }
    const cJSON *wd = cJSON_GetObjectItemCaseSensitive(j, "daemon");
    const char *wst = jstr(wd, "started");
    bool restarted = jnum(wd, "pid", -1) != w->dpid || !w->dstarted || !wst || strcmp(wst, w->dstarted);
    cJSON_Delete(w->s);
    w->s = cJSON_DetachItemFromObjectCaseSensitive(j, "service");
    if (restarted || !w->s) {
        clear_line(w);
        fprintf(stderr, "gpumod: service start: the daemon restarted while '%s' was starting (pid %.0f, now %.0f); "
                "start ticket %llu is gone: 'gpumod service show %s' tells the state\n", w->in->id, w->dpid,
                jnum(wd, "pid", -1), (unsigned long long)w->seq, w->in->id);
        finish(w, EXIT_DAEMON);
    }
    cJSON_Delete(j);
    return !w->done;
}

/* Decide on the service as last read: done (an outcome, the ticket gone,
 * the limit passed) or not yet (the progress drawn). */
static void decide(waiter *w)
{
    const char *id = w->in->id;
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(w->s, "last_start");
    const char *outcome = jstr(ls, "outcome"), *state = jstr(w->s, "state");
    uint64_t lseq = ls && !cJSON_IsNull(ls) ? (uint64_t)jnum(ls, "seq", 0) : 0;
    if (lseq > w->seq) {
        /* someone else's start replaced ours: its outcome is ours now */
        if (w->c->verbose >= 0) {
            clear_line(w);
            fprintf(stderr, "gpumod: service start: a newer start of '%s' (#%llu by %s) replaced ticket %llu; "
                    "waiting for it\n", id, (unsigned long long)lseq, jstr(ls, "origin") ? jstr(ls, "origin") : "?",
                    (unsigned long long)w->seq);
        }
        w->seq = lseq;
    }
    if (lseq == w->seq && outcome && strcmp(outcome, "pending")) {
        finish(w, EXIT_OK);
    } else if (lseq < w->seq && state && (!strcmp(state, "down") || !strcmp(state, "failed"))) {
        clear_line(w);
        fprintf(stderr, "gpumod: service start: '%s' is %s and start ticket %llu is gone (stopped or cancelled "
                "meanwhile); see 'gpumod events --service %s'\n", id, state, (unsigned long long)w->seq, id);
        finish(w, EXIT_REFUSED);
    } else if (clock_mono_ms() >= w->deadline) {
        clear_line(w);
        fprintf(stderr, "gpumod: service start: '%s' is not ready after %.0f s (still %s; the start goes on: "
                "'gpumod service show %s')\n", id, w->in->limit_ms / 1000.0, state ? state : "?", id);
        finish(w, EXIT_TIMEOUT);
    } else if (w->in->tty) {
        progress_draw(w->s, id);
    }
}

static bool on_tick(void *ud)
{
    waiter *w = ud;
    if (refresh(w)) decide(w);
    return !w->done;
}

/* Each whole line is an event of the service (or the stream's "end"
 * line, after which the daemon closes it): read the service again. */
static bool on_body(const char *p, size_t len, void *ud)
{
    waiter *w = ud;
    buf_add(&w->line, p, len);
    char *nl = memrchr(w->line.p, '\n', w->line.len);
    if (!nl) {
        if (w->line.len > (size_t)1 << 20) buf_clear(&w->line); /* no event is this long: not ours to keep */
        return true;
    }
    size_t used = (size_t)(nl - w->line.p) + 1;
    memmove(w->line.p, w->line.p + used, w->line.len - used);
    w->line.len -= used;
    w->line.p[w->line.len] = '\0';
    return on_tick(w);
}

/* One stream until it ends or the wait is decided; false when the
 * daemon has no stream to offer (the caller polls instead). */
static bool follow_once(waiter *w)
{
    buf t = BUF_INIT;
    buf_adds(&t, "/events?follow=1&service=");
    url_id(&t, w->in->id);
    int64_t left = w->deadline - clock_mono_ms() + 1;
    int64_t tick = w->in->tty ? TICK_TTY_MS : TICK_MS;
    http_stream_opts so = {.on_body = on_body, .on_tick = on_tick, .tick_ms = left < tick ? left : tick, .ud = w};
    http_reply r;
    buf_clear(&w->line);
    /* quiet: a stream that fails (the daemon gone in the middle of it) is
     * followed by a read of the service, which says what happened */
    int rc = ctl_stream(w->c, t.p, &so, true, &r);
    buf_release(&t);
    bool streamed = !rc && r.status == 200;
    http_reply_release(&r);
    return streamed;
}

int svc_wait_start(cli *c, const svc_wait_in *in, cJSON **svc)
{
    waiter w = {.c = c, .in = in, .seq = in->seq, .s = *svc, .line = BUF_INIT};
    *svc = NULL;
    w.dpid = jnum(in->daemon, "pid", -1);
    w.dstarted = jstr(in->daemon, "started") ? xstrdup(jstr(in->daemon, "started")) : NULL;
    w.deadline = clock_mono_ms() + in->limit_ms;
    decide(&w);
    while (!w.done) {
        if (!follow_once(&w) && !w.done) poll(NULL, 0, POLL_MS);
        /* the stream ended (or there is none): read once more and go on */
        if (!w.done) on_tick(&w);
    }
    free(w.dstarted);
    buf_release(&w.line);
    if (w.rc) {
        cJSON_Delete(w.s);
        return w.rc;
    }
    *svc = w.s;
    return EXIT_OK;
}
