/* evwait.c - a wait on the daemon's event stream (evwait.h).
 *
 * The stream is opened without since=: it carries what happens after the
 * daemon answered the GET; what happened before is in the state the
 * check reads when the head has come, so nothing falls between the two.
 * Each whole line of the stream (an event, or the "end" line before the
 * daemon closes it) is followed by one check: the daemon writes an event
 * and settles what it reports (a start's outcome, a switch's result) in
 * the same loop turn, so the read that follows the event sees it.  A
 * stream that ends within 50 ms of opening is taken for a daemon without
 * streams: the next check comes 50 ms later, as from a poller. */
#include "client/evwait.h"
#include "client/ctl.h"
#include "util/clock.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#define POLL_MS 50
#define LINE_MAX_BYTES ((size_t)1 << 20)

typedef struct evwait {
    evwait_check check;
    void *ud;
    bool done;
    buf line;       /* a partial line of the stream */
    char ended[32]; /* the reason of an {"end": ...} line, or "" */
} evwait;

static bool on_tick(void *ud)
{
    evwait *w = ud;
    if (!w->done) w->done = w->check(w->ud, w->ended[0] ? w->ended : NULL);
    return !w->done;
}

/* The daemon's last line on a stream it ends: {"end": REASON, ...}. */
static void note_end(evwait *w, const char *p, size_t n)
{
    static const char key[] = "{\"end\":\"";
    for (size_t i = 0; i + sizeof key - 1 <= n; i++) {
        if (memcmp(p + i, key, sizeof key - 1)) continue;
        const char *r = p + i + sizeof key - 1, *e = memchr(r, '"', n - (size_t)(r - p));
        if (e && (size_t)(e - r) < sizeof w->ended) snprintf(w->ended, sizeof w->ended, "%.*s", (int)(e - r), r);
        return;
    }
}

static bool on_body(const char *p, size_t len, void *ud)
{
    evwait *w = ud;
    buf_add(&w->line, p, len);
    char *nl = memrchr(w->line.p, '\n', w->line.len);
    if (!nl) {
        if (w->line.len > LINE_MAX_BYTES) buf_clear(&w->line); /* no event is this long: nothing to keep */
        return true;
    }
    size_t used = (size_t)(nl - w->line.p) + 1;
    note_end(w, w->line.p, used);
    memmove(w->line.p, w->line.p + used, w->line.len - used);
    w->line.len -= used;
    w->line.p[w->line.len] = '\0';
    return on_tick(w);
}

void ev_wait(const config_paths *daemon, const char *query, int64_t tick_ms, evwait_check check, void *ud)
{
    evwait w = {.check = check, .ud = ud, .line = BUF_INIT};
    buf t = BUF_INIT;
    buf_adds(&t, "/events?follow=1");
    if (query && *query) {
        buf_addc(&t, '&');
        buf_adds(&t, query);
    }
    http_stream_opts so = {.on_body = on_body, .on_tick = on_tick, .tick_ms = tick_ms > 0 ? tick_ms : 1000,
                           .ud = &w};
    for (;;) {
        buf_clear(&w.line);
        w.ended[0] = '\0';
        http_reply r;
        /* quiet: a stream that fails (the daemon gone in the middle of
         * it) is followed by a check, which finds out and says so */
        int64_t t0 = clock_mono_ms();
        int rc = ctl_stream(daemon, t.p, &so, true, &r);
        bool streamed = !rc && r.status == 200;
        http_reply_release(&r);
        if (w.done) break;
        /* no stream, or one that ended at once (an older daemon answers
         * follow=1 with the plain list): poll instead of spinning */
        if (!streamed || clock_mono_ms() - t0 < POLL_MS) poll(NULL, 0, POLL_MS);
        if (!on_tick(&w)) break;
    }
    buf_release(&t);
    buf_release(&w.line);
}
