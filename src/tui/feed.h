/* feed.h - the dashboard's threads: the event stream follower (GET
 * /events?follow=1), the selected service's log follower (GET
 * /services/ID/logs?follow=1) and the worker that runs one action request
 * at a time.  Each hands what it got to the main thread under a mutex and
 * wakes it with a byte on wake_fd; the main thread never blocks on the
 * daemon for longer than a quick request. */
#ifndef GPUMOD_TUI_FEED_H
#define GPUMOD_TUI_FEED_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/buf.h"

/* An event seen on the stream, for GPUMOD_TUI_STAMP. */
typedef struct feed_stamp {
    int64_t id;
    char ts[40];
} feed_stamp;

typedef struct tui_feed tui_feed;

/* Shared by the three threads (feed.c). */
void thr_block_signals(void); /* in a new thread: the main thread takes the signals */
void thr_poke(int fd);        /* one byte to the main thread's wake pipe */
void thr_nap(int64_t ms, volatile sig_atomic_t *stop);    /* a backoff that a stop cuts short */
void thr_stop(pthread_t th, volatile sig_atomic_t *stop); /* set stop, interrupt the wait, join */

/* Call once in main() before any thread starts: the no-op SIGUSR1 that
 * interrupts a follower's wait when it is stopped. */
void feed_signals_init(void);

/* Follow the event stream until feed_stop; reconnects from the last id
 * seen, backing off (100 ms doubling to 2 s) while the daemon is away. */
tui_feed *feed_start(const config_paths *paths, int wake_fd);
/* Whether the stream is open now; *changed when that changed since the
 * last call. */
bool feed_connected(tui_feed *f, bool *changed);
/* The events that came since the last call (at most max; the rest are
 * dropped from the record, not from the screen).  Returns how many. */
size_t feed_take(tui_feed *f, feed_stamp *out, size_t max);
/* Stops the thread, joins it, frees f. */
void feed_stop(tui_feed *f);

typedef struct tui_logs tui_logs;
/* Follow service's log (the last 200 lines, then what comes). */
tui_logs *logs_start(const config_paths *paths, const char *service, int wake_fd);
/* The last max lines kept, oldest first, into b (one per line); a note
 * when the log cannot be read.  Returns the number of lines. */
size_t logs_copy(tui_logs *l, buf *b, size_t max);
void logs_stop(tui_logs *l);

/* One request the worker runs (an action). */
typedef struct tui_job {
    int kind;        /* the caller's */
    char target[64]; /* the service or mode it is about */
    char method[8];
    char path[320];
    char *body; /* owned; may be NULL */
    int64_t timeout_ms;
    /* the outcome */
    int rc; /* ctl_call's: 0 answered, else the exit code (3 no daemon, 4 timed out) */
    int status;
    buf reply;
} tui_job;

typedef struct tui_jobs tui_jobs;
tui_jobs *jobs_start(const config_paths *paths, int wake_fd);
/* Takes ownership of j; false (j freed) when a job is already running. */
bool jobs_submit(tui_jobs *w, tui_job *j);
/* The finished job (caller frees with job_free), or NULL. */
tui_job *jobs_done(tui_jobs *w);
bool jobs_busy(tui_jobs *w);
/* Does not wait for a request in flight (its deadline may be long): the
 * process is about to exit. */
void jobs_abandon(tui_jobs *w);
void job_free(tui_job *j);

#endif
