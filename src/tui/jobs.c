/* jobs.c - the worker that runs the dashboard's actions (feed.h): one
 * request at a time, so that a stop that waits for the memory to come
 * back, or a restart that waits for ready, never freezes the screen.
 * Each request has its deadline (tui_job.timeout_ms); the outcome goes
 * back under the mutex with a byte on the wake pipe. */
#include "tui/feed.h"
#include "client/ctl.h"

#include <stdlib.h>
#include <string.h>

struct tui_jobs {
    config_paths paths;
    int wake_fd;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tui_job *todo, *done;
    bool running, quit;
};

void job_free(tui_job *j)
{
    if (!j) return;
    free(j->body);
    buf_release(&j->reply);
    free(j);
}

static void *jobs_main(void *ud)
{
    tui_jobs *w = ud;
    thr_block_signals();
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->todo && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->quit) break;
        tui_job *j = w->todo;
        w->todo = NULL;
        pthread_mutex_unlock(&w->mu);
        http_reply r;
        j->rc = ctl_call(&w->paths, j->method, j->path, j->body, j->timeout_ms, true, &r);
        j->status = r.status;
        buf_init(&j->reply);
        buf_add(&j->reply, r.body.p, r.body.len);
        http_reply_release(&r);
        pthread_mutex_lock(&w->mu);
        w->done = j;
        w->running = false;
        thr_poke(w->wake_fd);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

tui_jobs *jobs_start(const config_paths *paths, int wake_fd)
{
    tui_jobs *w = xcalloc(1, sizeof *w);
    w->paths = *paths;
    w->wake_fd = wake_fd;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, jobs_main, w)) {
        free(w);
        return NULL;
    }
    return w;
}

bool jobs_submit(tui_jobs *w, tui_job *j)
{
    pthread_mutex_lock(&w->mu);
    bool ok = !w->running && !w->todo;
    if (ok) {
        buf_init(&j->reply);
        w->todo = j;
        w->running = true;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    if (!ok) job_free(j);
    return ok;
}

tui_job *jobs_done(tui_jobs *w)
{
    pthread_mutex_lock(&w->mu);
    tui_job *j = w->done;
    w->done = NULL;
    pthread_mutex_unlock(&w->mu);
    return j;
}

bool jobs_busy(tui_jobs *w)
{
    pthread_mutex_lock(&w->mu);
    bool b = w->running;
    pthread_mutex_unlock(&w->mu);
    return b;
}

void jobs_abandon(tui_jobs *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    bool idle = !w->running;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    /* an idle worker is joined; one in a request is left to the exit */
    if (idle) {
        pthread_join(w->th, NULL);
        job_free(w->done);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
    } else {
        pthread_detach(w->th);
    }
}
