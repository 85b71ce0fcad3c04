/* hostmon.c - snapshots on libuv's thread pool, one at a time.
 *
 * Waiters are two lists: those of the take in flight (`cur`) and those
 * that asked after it began (`next`), who get the following take, never
 * the one already running (it may predate what they must see: a process
 * that has just exited).  The finished snapshot is moved, not copied, into
 * `last` (its gpus[].procs arrays change owner), and every waiter of that
 * take gets a pointer to it. */
#include "daemon/hostmon.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/clock.h"

typedef struct waiter {
    hostmon_cb cb;
    void *ud;
    struct waiter *next;
} waiter;

struct hostmon {
    uv_loop_t *loop;
    snapshot_opts o;
    char *proc_root, *nvml_lib, *smi_path;
    uv_work_t work;
    uv_timer_t closer; /* only to be closed: the close callback frees on the loop */
    bool running, closing;
    snapshot taking; /* written by the worker thread while running */
    snapshot last;
    bool has_last;
    int64_t last_ms;
    waiter *cur, *cur_tail, *nxt, *nxt_tail;
    void (*close_cb)(void *ud);
    void *close_ud;
};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

hostmon *hostmon_new(uv_loop_t *loop, const snapshot_opts *o)
{
    hostmon *h = xcalloc(1, sizeof *h);
    h->loop = loop;
    h->o = *o;
    h->o.proc_root = h->proc_root = dup_or_null(o->proc_root);
    h->o.nvml_lib = h->nvml_lib = dup_or_null(o->nvml_lib);
    h->o.smi_path = h->smi_path = dup_or_null(o->smi_path);
    uv_timer_init(loop, &h->closer);
    h->closer.data = h;
    h->work.data = h;
    return h;
}

static void free_waiters(waiter *w)
{
    while (w) {
        waiter *n = w->next;
        free(w);
        w = n;
    }
}

static void closed(uv_handle_t *t)
{
    hostmon *h = t->data;
    free_waiters(h->cur);
    free_waiters(h->nxt);
    if (h->has_last) snapshot_release(&h->last);
    void (*cb)(void *) = h->close_cb;
    void *ud = h->close_ud;
    free(h->proc_root);
    free(h->nvml_lib);
    free(h->smi_path);
    free(h);
    if (cb) cb(ud);
}

static void do_work(uv_work_t *w)
{
    hostmon *h = w->data;
    memset(&h->taking, 0, sizeof h->taking);
    snapshot_take(&h->taking, &h->o);
}

static void start(hostmon *h);

static void after_work(uv_work_t *w, int status)
{
    hostmon *h = w->data;
    h->running = false;
    if (status == 0) {
        if (h->has_last) snapshot_release(&h->last);
        h->last = h->taking; /* procs arrays change owner */
        memset(&h->taking, 0, sizeof h->taking);
        h->has_last = true;
        h->last_ms = clock_mono_ms();
    }
    if (h->closing) {
        uv_close((uv_handle_t *)&h->closer, closed);
        return;
    }
    waiter *list = h->cur;
    h->cur = h->cur_tail = NULL;
    /* waiters may ask for another take from their callback: it goes to nxt */
    while (list) {
        waiter *n = list->next;
        if (h->has_last) list->cb(&h->last, list->ud);
        free(list);
        list = n;
        if (h->closing) { /* closed from a callback: the rest are dropped */
            free_waiters(list);
            return;
        }
    }
    if (h->nxt) start(h);
}

static void start(hostmon *h)
{
    h->cur = h->nxt;
    h->cur_tail = h->nxt_tail;
    h->nxt = h->nxt_tail = NULL;
    h->running = true;
    int rc = uv_queue_work(h->loop, &h->work, do_work, after_work);
    if (rc != 0) { /* cannot happen with a valid loop; take it here rather than hang the waiters */
        do_work(&h->work);
        after_work(&h->work, 0);
    }
}

void hostmon_take(hostmon *h, hostmon_cb cb, void *ud)
{
    if (h->closing) return;
    waiter *w = xcalloc(1, sizeof *w);
    w->cb = cb;
    w->ud = ud;
    if (h->nxt_tail)
        h->nxt_tail->next = w;
    else
        h->nxt = w;
    h->nxt_tail = w;
    if (!h->running) start(h);
}

const snapshot *hostmon_last(const hostmon *h, int64_t *taken_ms)
{
    if (!h->has_last) return NULL;
    if (taken_ms) *taken_ms = h->last_ms;
    return &h->last;
}

void hostmon_close(hostmon *h, void (*cb)(void *ud), void *ud)
{
    if (h->closing) return;
    h->closing = true;
    h->close_cb = cb;
    h->close_ud = ud;
    if (!h->running) uv_close((uv_handle_t *)&h->closer, closed);
    /* else after_work closes */
}
