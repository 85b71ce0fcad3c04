/* logs.c - the log pane's follower (feed.h): GET /services/ID/logs?follow=1
 * in a thread of its own, the last LOG_KEEP lines kept in a ring.
 *
 * The stream starts with the last 200 lines, then the output as it comes;
 * when it ends (the daemon restarted, the reader fell behind) it is
 * followed again after a pause from what comes then (n=0), and an error
 * (an unknown service, no daemon) becomes the pane's note until it can be
 * read again.  Lines are cut at LOG_LINE_MAX bytes: the pane is a view,
 * the whole log is the service's log_file. */
#include "tui/feed.h"
#include "client/ctl.h"
#include "tui/model.h"
#include "util/lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_KEEP 400
#define LOG_LINE_MAX 512

struct tui_logs {
    config_paths paths;
    char service[64];
    int wake_fd;
    pthread_t th;
    volatile sig_atomic_t stop;
    buf part;           /* a partial line (the thread's own) */
    pthread_mutex_t mu; /* guards what follows */
    char *ring[LOG_KEEP];
    size_t head, n; /* oldest at head */
    char note[256];
};

static void keep_line(void *ud, const char *p, size_t n)
{
    tui_logs *l = ud;
    if (n > LOG_LINE_MAX) n = LOG_LINE_MAX;
    char *s = xstrndup(p, n);
    for (char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 && *c != '\t') *c = ' '; /* no escape reaches the terminal */
    pthread_mutex_lock(&l->mu);
    size_t at = (l->head + l->n) % LOG_KEEP;
    if (l->n == LOG_KEEP) {
        free(l->ring[l->head]);
        l->head = (l->head + 1) % LOG_KEEP;
        at = (l->head + l->n - 1) % LOG_KEEP;
    } else {
        l->n++;
    }
    l->ring[at] = s;
    l->note[0] = '\0';
    pthread_mutex_unlock(&l->mu);
}

static bool logs_body(const char *p, size_t n, void *ud)
{
    tui_logs *l = ud;
    if (lines_feed(&l->part, p, n, 64 * 1024, keep_line, l)) thr_poke(l->wake_fd);
    return !l->stop;
}

static void set_note(tui_logs *l, const char *text)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->note, sizeof l->note, "%s", text);
    pthread_mutex_unlock(&l->mu);
    thr_poke(l->wake_fd);
}

static void *logs_main(void *ud)
{
    tui_logs *l = ud;
    thr_block_signals();
    bool first = true;
    while (!l->stop) {
        char *t = xasprintf("/services/%s/logs?follow=1&n=%d", l->service, first ? 200 : 0);
        buf_clear(&l->part);
        http_stream_opts so = {.on_body = logs_body, .ud = l, .stop = &l->stop};
        http_reply r;
        int rc = ctl_stream(&l->paths, t, &so, true, &r);
        free(t);
        if (l->stop) {
            http_reply_release(&r);
            break;
        }
        if (rc) {
            set_note(l, "the daemon is not reachable");
        } else if (r.status != 200) {
            buf e = BUF_INIT;
            model_error_text(&e, r.status, r.body.p, r.body.len);
            set_note(l, e.p);
            buf_release(&e);
        } else {
            first = false;
        }
        http_reply_release(&r);
        thr_nap(rc || r.status != 200 ? 2000 : 500, &l->stop);
    }
    return NULL;
}

tui_logs *logs_start(const config_paths *paths, const char *service, int wake_fd)
{
    tui_logs *l = xcalloc(1, sizeof *l);
    l->paths = *paths;
    snprintf(l->service, sizeof l->service, "%s", service);
    l->wake_fd = wake_fd;
    buf_init(&l->part);
    snprintf(l->note, sizeof l->note, "reading the log of '%s'", service);
    pthread_mutex_init(&l->mu, NULL);
    if (pthread_create(&l->th, NULL, logs_main, l)) {
        pthread_mutex_destroy(&l->mu);
        free(l);
        return NULL;
    }
    return l;
}

size_t logs_copy(tui_logs *l, buf *b, size_t max)
{
    pthread_mutex_lock(&l->mu);
    size_t n = l->n < max ? l->n : max;
    for (size_t i = l->n - n; i < l->n; i++) {
        buf_adds(b, l->ring[(l->head + i) % LOG_KEEP]);
        buf_addc(b, '\n');
    }
    if (l->note[0] && n < max) {
        buf_printf(b, "[%s]\n", l->note);
        n++;
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

void logs_stop(tui_logs *l)
{
    if (!l) return;
    thr_stop(l->th, &l->stop);
    for (size_t i = 0; i < l->n; i++)
        free(l->ring[(l->head + i) % LOG_KEEP]);
    pthread_mutex_destroy(&l->mu);
    buf_release(&l->part);
    free(l);
}
