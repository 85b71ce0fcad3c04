/* svcwait.c - waiting for a start's outcome on the event stream
 * (svcwait.h, evwait.h).
 *
 * Each check reads the service (GET /services/ID?daemon=1) and decides on
 * its last_start: the daemon sets a start's outcome in the same loop turn
 * as the event that ends it (the footprint event of a ready start, the
 * state event of a failed one), so the read after that event sees it.  A
 * read that fails means the daemon went away; a daemon whose pid or start
 * time changed restarted, and the ticket is gone with it. */
#include "cli/svcwait.h"
#include "cli/ctl.h"
#include "client/evwait.h"
#include "util/clock.h"
#include "util/url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TICK_TTY_MS 200
#define TICK_MS 1000

typedef struct waiter {
    cli *c;
    const svc_wait_in *in;
    uint64_t seq;
    double dpid;
    char *dstarted;
    int64_t deadline;
    cJSON *s;     /* the service as last read */
    bool done;
    int rc;
} waiter;

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
static bool refresh(waiter *w, const char *ended)
{
    buf t = BUF_INIT;
    buf_adds(&t, "/services/");
    url_query_escape(&t, w->in->id);
    buf_adds(&t, "?daemon=1");
    http_reply r;
    int rc = ctl_call(&w->c->paths, "GET", t.p, NULL, CTL_QUICK_MS, true, &r);
    buf_release(&t);
    if (rc) {
        clear_line(w);
        bool stopping = ended && !strcmp(ended, "shutting_down");
        fprintf(stderr, "gpumod: service start: the daemon %s while '%s' was starting (start ticket %llu); once "
                "a daemon runs, 'gpumod service show %s' tells the state\n",
                stopping ? "is shutting down" : rc == EXIT_TIMEOUT ? "stopped answering" : "went away", w->in->id,
                (unsigned long long)w->seq, w->in->id);
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

static bool check(void *ud, const char *ended)
{
    waiter *w = ud;
    if (refresh(w, ended)) decide(w);
    return w->done;
}

int svc_wait_start(cli *c, const svc_wait_in *in, cJSON **svc)
{
    waiter w = {.c = c, .in = in, .seq = in->seq, .s = *svc};
    *svc = NULL;
    w.dpid = jnum(in->daemon, "pid", -1);
    w.dstarted = jstr(in->daemon, "started") ? xstrdup(jstr(in->daemon, "started")) : NULL;
    w.deadline = clock_mono_ms() + in->limit_ms;
    decide(&w);
    if (!w.done) {
        buf q = BUF_INIT;
        buf_adds(&q, "service=");
        url_query_escape(&q, in->id);
        int64_t tick = in->tty ? TICK_TTY_MS : TICK_MS;
        ev_wait(&c->paths, q.p, in->limit_ms < tick ? in->limit_ms + 1 : tick, check, &w);
        buf_release(&q);
    }
    free(w.dstarted);
    if (w.rc) {
        cJSON_Delete(w.s);
        return w.rc;
    }
    *svc = w.s;
    return EXIT_OK;
}
