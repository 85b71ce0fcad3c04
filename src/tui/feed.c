/* feed.c - the event stream follower and what the dashboard's threads
 * share (feed.h).
 *
 * The follower is the dashboard's only clock: it blocks in the stream's
 * read (ctl_stream, no tick that matters: one an hour) and wakes the main
 * thread with a byte when an event comes or the stream opens or fails.
 * A stream that ends is followed again from the last id seen (since=), so
 * a daemon restart or a slow-reader cut loses nothing; while the daemon
 * is away the reconnects back off from 100 ms to 2 s.  A stop sets a flag
 * and sends SIGUSR1 (a no-op handler installed without SA_RESTART) until
 * the thread has exited: the signal cuts the poll() inside the client. */
#include "tui/feed.h"
#include "client/ctl.h"
#include "util/clock.h"
#include "util/lines.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STAMPS_MAX 4096
#define LINE_MAX_BYTES ((size_t)1 << 20)

struct tui_feed {
    config_paths paths;
    int wake_fd;
    pthread_t th;
    volatile sig_atomic_t stop;
    buf line;           /* a partial line of the stream (the thread's own) */
    int64_t since;      /* the last event id seen, -1 none (the thread's own) */
    bool slow;          /* the daemon cut this reader: follow again at once */
    pthread_mutex_t mu; /* guards what follows */
    bool connected, changed;
    feed_stamp *stamps;
    size_t nstamps;
};

static void on_usr1(int sig)
{
    (void)sig;
}

void feed_signals_init(void)
{
    struct sigaction sa = {.sa_handler = on_usr1}; /* no SA_RESTART: a wait must see it */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

void thr_block_signals(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGQUIT);
    sigaddset(&s, SIGWINCH);
    sigaddset(&s, SIGPIPE);
    /* ncurses' own Ctrl-Z handling runs on the main thread, never beside a draw */
    sigaddset(&s, SIGTSTP);
    sigaddset(&s, SIGCONT);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
}

void thr_poke(int fd)
{
    ssize_t n = write(fd, "x", 1);
    (void)n; /* a full pipe already holds a wake-up */
}

void thr_nap(int64_t ms, volatile sig_atomic_t *stop)
{
    int64_t end = clock_mono_ms() + ms;
    for (int64_t left = ms; left > 0 && !*stop; left = end - clock_mono_ms())
        poll(NULL, 0, (int)left);
}

void thr_stop(pthread_t th, volatile sig_atomic_t *stop)
{
    *stop = 1;
    for (;;) {
        /* the signal may come before the thread enters its wait: again
         * every 20 ms until it has exited */
        pthread_kill(th, SIGUSR1);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int rc = pthread_timedjoin_np(th, NULL, &ts);
        if (rc != ETIMEDOUT) return;
    }
}

static void set_connected(tui_feed *f, bool on)
{
    pthread_mutex_lock(&f->mu);
    bool was = f->connected;
    f->connected = on;
    if (was != on) f->changed = true;
    pthread_mutex_unlock(&f->mu);
    if (was != on) thr_poke(f->wake_fd);
}

/* One line: an event, or the daemon's last line {"end", "since"}. */
static void feed_line(void *ud, const char *p, size_t n)
{
    tui_feed *f = ud;
    cJSON *j = cJSON_ParseWithLength(p, n);
    if (!j) return;
    const char *end = jstr(j, "end");
    if (end) {
        f->since = (int64_t)jnum(j, "since", (double)f->since);
        f->slow = !strcmp(end, "slow_reader");
    } else {
        f->since = (int64_t)jnum(j, "id", (double)f->since);
        pthread_mutex_lock(&f->mu);
        if (f->nstamps < STAMPS_MAX) {
            feed_stamp *s = &f->stamps[f->nstamps++];
            s->id = f->since;
            snprintf(s->ts, sizeof s->ts, "%s", jstr(j, "ts") ? jstr(j, "ts") : "-");
        }
        pthread_mutex_unlock(&f->mu);
        thr_poke(f->wake_fd);
    }
    cJSON_Delete(j);
}

static bool feed_body(const char *p, size_t n, void *ud)
{
    tui_feed *f = ud;
    lines_feed(&f->line, p, n, LINE_MAX_BYTES, feed_line, f);
    return !f->stop;
}

/* the head of a 200 came: the stream is open */
static bool feed_open(void *ud)
{
    tui_feed *f = ud;
    set_connected(f, true);
    return !f->stop;
}

static void *feed_main(void *ud)
{
    tui_feed *f = ud;
    thr_block_signals();
    int64_t backoff = 100;
    while (!f->stop) {
        buf t = BUF_INIT;
        buf_adds(&t, "/events?follow=1");
        if (f->since >= 0) buf_printf(&t, "&since=%lld", (long long)f->since);
        buf_clear(&f->line);
        f->slow = false;
        http_stream_opts so = {.on_body = feed_body,
                               .on_tick = feed_open,
                               .tick_ms = 3600000,
                               .ud = f,
                               .stop = &f->stop};
        http_reply r;
        int rc = ctl_stream(&f->paths, t.p, &so, true, &r);
        bool ok = !rc && r.status == 200;
        http_reply_release(&r);
        buf_release(&t);
        if (f->stop) break;
        if (!ok) {
            set_connected(f, false);
            thr_nap(backoff, &f->stop);
            backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
            continue;
        }
        backoff = 100;
        if (!f->slow) thr_nap(backoff, &f->stop); /* the daemon ended it: it may be going away */
    }
    return NULL;
}

tui_feed *feed_start(const config_paths *paths, int wake_fd)
{
    tui_feed *f = xcalloc(1, sizeof *f);
    f->paths = *paths;
    f->wake_fd = wake_fd;
    buf_init(&f->line);
    f->since = -1;
    f->stamps = xcalloc(STAMPS_MAX, sizeof *f->stamps);
    pthread_mutex_init(&f->mu, NULL);
    if (pthread_create(&f->th, NULL, feed_main, f)) {
        pthread_mutex_destroy(&f->mu);
        free(f->stamps);
        free(f);
        return NULL;
    }
    return f;
}

bool feed_connected(tui_feed *f, bool *changed)
{
    pthread_mutex_lock(&f->mu);
    bool on = f->connected;
    *changed = f->changed;
    f->changed = false;
    pthread_mutex_unlock(&f->mu);
    return on;
}

size_t feed_take(tui_feed *f, feed_stamp *out, size_t max)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->nstamps < max ? f->nstamps : max;
    memcpy(out, f->stamps, n * sizeof *out);
    f->nstamps = 0;
    pthread_mutex_unlock(&f->mu);
    return n;
}

void feed_stop(tui_feed *f)
{
    if (!f) return;
    thr_stop(f->th, &f->stop);
    pthread_mutex_destroy(&f->mu);
    buf_release(&f->line);
    free(f->stamps);
    free(f);
}
