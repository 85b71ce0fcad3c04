/* load.c - the load generator: one load point on a fresh libuv loop,
 * driving client.c.  Closed loop: `concurrency` streams, a freed slot
 * sends the next at once (t_sched = the moment it became free).  Open
 * loop: arrivals at gamma-distributed gaps (seeded, so a schedule is
 * reproducible); over the cap a request waits in the client with t_sched
 * kept as scheduled, so the wait shows as client queueing, not as server
 * latency.  Warmup requests go first through the same loop and are
 * dropped.  Bodies come from spec->body when given, one per request as it
 * is sent (so none repeats), freed when the request ends.  A SIGINT stops
 * the sending; what still streams 2 s later is cut (n_cut), not failed.
 *
 * The schedule and the loop-lag probe run on timerfds (ns deadlines)
 * polled by the loop rather than on uv timers, whose millisecond clock
 * would add up to 1 ms of false lag to every sample: the self-check must
 * measure the client, not the timer's rounding.
 *
 * The self-check (research/bench.md 8.6, (c)6): this thread's CPU over the
 * wall time (runs of 1 s or more), schedule lag (the hand-off to curl minus
 * when the request was due: connecting and the cap's queue are not the
 * client's lateness; queue_client keeps t_send - t_sched), loop lag (a 10 ms periodic
 * timer's lateness), bytes read per second and the most requests in
 * flight; bself_judge turns them into a verdict.  Loop lag has two causes
 * that call for different answers: the loop busy with the client's own
 * work (the client is the bottleneck) and the thread waiting for a CPU
 * (a busy host: the server on the same machine, other jobs).  Each sample
 * is split by the thread's CPU time since the previous one: its own work
 * can be at most that (loop_busy_ms); the run queue wait is read from
 * schedstat. */
#include "bench/bench.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <uv.h>

#include "oai/client.h"
#include "util/errf.h"

#define TICK_MS 50         /* interrupt and deadline checks; progress every 2nd */
#define LAG_PERIOD_NS 10000000LL
#define STOP_GRACE_NS 2000000000LL
#define DRAIN_SLACK_NS 1000000000LL
/* A closed loop's first streams start RAMP_BATCH per loop turn: setting
 * up a connection costs tens of microseconds, and 1,000 of them in one
 * callback would leave the first streams' tokens unread (and their stamps
 * late) for as long.  The delay shows as those requests' schedule lag. */
#define RAMP_BATCH 16

typedef struct lreq {
    breq r;
    bool warm;
    bool cut;          /* ended by the SIGINT's grace, not by the server */
    int64_t lag_ns;    /* handed to curl - due (the schedule lag) */
    char *body;        /* from spec->body (owned), else NULL */
} lreq;

typedef struct lrun {
    const bload_spec *s;
    uv_loop_t loop;
    bclient *cli;
    volatile int *intr;
    bool interrupted;

    long n_sched, n_sent;  /* requests scheduled / sent, warmup included */
    long n_meas_done, n_warm_done;
    lreq **meas;           /* measured requests, in send order */
    size_t n_meas, meas_cap;
    bool sched_done;       /* no more requests will be scheduled */
    bool finished;
    int64_t t_start, t_meas_start; /* t_meas_start: first measured request's t_sched (0 before) */
    int64_t stop_deadline; /* interrupted: in-flight requests end by then */
    bool cutting;          /* the grace passed: what ends now was cut */
    int64_t drain_deadline;/* after the last send: the request timeout and slack */
    long max_in_flight;

    /* open loop */
    int sfd;
    uv_poll_t spoll;
    int64_t next_ns;
    uint64_t rng;
    int64_t *wq;           /* t_sched of requests waiting for the cap (a ring) */
    size_t wq_head, wq_len, wq_cap;

    /* loop lag */
    int lfd;
    uv_poll_t lpoll;
    int64_t lag_base;
    uint64_t lag_ticks;
    double *lags, *own_lags;
    size_t n_lags, lags_cap;
    int64_t runq0;
    int64_t lag_cpu; /* the thread's CPU time at the previous sample (ns) */

    /* the self-check's start: user and system CPU (s), the thread's CPU (ns) */
    double user0, sys0;
    int64_t cpu0;

    /* closed loop: the first `concurrency` sends, RAMP_BATCH per loop turn */
    uv_idle_t ramp;
    long ramp_left;

    uv_timer_t tick;
    unsigned ticks;
    int open_handles;
} lrun;

/* ---- helpers ------------------------------------------------------------- */

static void arm_fd(int fd, int64_t at_ns, int64_t interval_ns)
{
    struct itimerspec its = {
        .it_value = {at_ns / 1000000000, at_ns % 1000000000},
        .it_interval = {interval_ns / 1000000000, interval_ns % 1000000000},
    };
    if (at_ns <= 0)
        its.it_value = (struct timespec){0, 1}; /* at once (0 would disarm) */
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void disarm_fd(int fd)
{
    struct itimerspec its = {0};
    timerfd_settime(fd, 0, &its, NULL);
}

static uint64_t drain_fd(int fd)
{
    uint64_t n = 0;
    if (read(fd, &n, sizeof n) != (ssize_t)sizeof n)
        return 0;
    return n;
}

static double thread_cpu_s(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    return *user + *sys;
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Time this thread has spent runnable but waiting for a CPU (ns), from
 * /proc/thread-self/schedstat; -1 when unknown (no schedstats). */
static int64_t thread_runq_ns(void)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return -1;
    long long run, wait;
    int n = fscanf(f, "%lld %lld", &run, &wait);
    fclose(f);
    return n == 2 ? wait : -1;
}

static double gap_s(lrun *L)
{
    double b = L->s->burstiness > 0 ? L->s->burstiness : 1.0;
    return brng_gap(&L->rng, L->s->rate, b);
}

/* May one more request be scheduled at t (ns)? */
static bool can_schedule(lrun *L, int64_t t)
{
    const bload_spec *s = L->s;
    if (L->sched_done)
        return false;
    if (L->n_sched < s->warmup)
        return true;
    if (s->requests > 0)
        return L->n_sched < s->warmup + s->requests;
    return !L->t_meas_start || t < L->t_meas_start + (int64_t)(s->duration_s * 1e9);
}

/* ---- sending ------------------------------------------------------------- */

static void maybe_finish(lrun *L);

/* Send one request scheduled at t_sched and due at `due` (t_sched, or
 * under an open loop's cap the later moment a slot freed): the schedule
 * lag is the hand-off to curl minus due, the client's own lateness;
 * connecting is the network's and the cap's wait is queue_client's. */
static void send_one(lrun *L, int64_t t_sched, int64_t due)
{
    const bload_spec *s = L->s;
    long k = L->n_sent++;
    lreq *q = xcalloc(1, sizeof *q);
    breq_init(&q->r);
    q->r.t_sched = t_sched;
    q->warm = k < s->warmup;
    char id[128], *idp = NULL;
    if (!q->warm) {
        if (L->n_meas == L->meas_cap) {
            L->meas_cap = L->meas_cap ? L->meas_cap * 2 : 256;
            L->meas = xrealloc(L->meas, L->meas_cap * sizeof *L->meas);
        }
        L->meas[L->n_meas++] = q;
    }
    if (s->id_prefix && *s->id_prefix) {
        if (q->warm || s->warmup_ids)
            snprintf(id, sizeof id, "%s-w%ld", s->id_prefix, k);
        else
            snprintf(id, sizeof id, "%s-%zu", s->id_prefix, L->n_meas - 1);
        idp = id;
    }
    const char *bj;
    size_t bl;
    if (s->body) {
        q->body = s->body(s->body_ud, (uint64_t)k, &bl);
        bj = q->body;
    } else {
        const bload_body *b = &s->bodies[(size_t)k % s->n_bodies];
        bj = b->json;
        bl = b->len;
    }
    int64_t now = bclient_now_ns();
    q->lag_ns = now > due ? now - due : 0;
    bclient_send(L->cli, &q->r, bj, bl, idp, q);
    long inf = bclient_in_flight(L->cli);
    if (inf > L->max_in_flight)
        L->max_in_flight = inf;
}

/* Schedule one request at t: the measured window starts with the first
 * measured one; the cap (open loop) makes it wait. */
static void schedule_one(lrun *L, int64_t t)
{
    if (L->n_sched == L->s->warmup && !L->t_meas_start)
        L->t_meas_start = t;
    L->n_sched++;
    int cap = L->s->shape == BLOAD_OPEN ? L->s->concurrency : 0;
    if (cap > 0 && (bclient_in_flight(L->cli) >= cap || L->wq_len)) {
        if (L->wq_len == L->wq_cap) {
            size_t ncap = L->wq_cap ? L->wq_cap * 2 : 64;
            int64_t *nq = xmalloc(ncap * sizeof *nq);
            for (size_t i = 0; i < L->wq_len; i++)
                nq[i] = L->wq[(L->wq_head + i) % L->wq_cap];
            free(L->wq);
            L->wq = nq;
            L->wq_cap = ncap;
            L->wq_head = 0;
        }
        L->wq[(L->wq_head + L->wq_len++) % L->wq_cap] = t;
        return;
    }
    send_one(L, t, t);
}

static void sched_stop(lrun *L)
{
    if (L->sched_done)
        return;
    L->sched_done = true;
    L->drain_deadline = bclient_now_ns() + L->s->request_timeout_ms * 1000000 + DRAIN_SLACK_NS;
    if (L->sfd >= 0)
        disarm_fd(L->sfd);
}

static void on_sched(uv_poll_t *h, int status, int events)
{
    lrun *L = h->data;
    drain_fd(L->sfd);
    int64_t now = bclient_now_ns();
    while (L->next_ns <= now) {
        if (!can_schedule(L, L->next_ns)) {
            sched_stop(L);
            maybe_finish(L);
            return;
        }
        schedule_one(L, L->next_ns);
        L->next_ns += (int64_t)(gap_s(L) * 1e9);
    }
    if (!can_schedule(L, L->next_ns)) {
        sched_stop(L);
        maybe_finish(L);
        return;
    }
    arm_fd(L->sfd, L->next_ns, 0);
}

static void on_done(void *ud, breq *r, void *req_ud, int64_t now)
{
    lrun *L = ud;
    lreq *q = req_ud;
    free(q->body); /* curl is done with it */
    q->body = NULL;
    if (q->warm) {
        L->n_warm_done++;
        breq_release(&q->r);
        free(q);
    } else {
        L->n_meas_done++;
        q->cut = L->cutting;
    }
    if (L->finished)
        return;
    if (L->s->shape == BLOAD_CLOSED) {
        if (can_schedule(L, now))
            schedule_one(L, now);
        else
            sched_stop(L);
    } else if (L->wq_len && !L->stop_deadline) {
        int64_t t = L->wq[L->wq_head];
        L->wq_head = (L->wq_head + 1) % L->wq_cap;
        L->wq_len--;
        send_one(L, t, now > t ? now : t);
    }
    maybe_finish(L);
}

static void on_ramp(uv_idle_t *h)
{
    lrun *L = h->data;
    for (int i = 0; i < RAMP_BATCH && L->ramp_left > 0 && can_schedule(L, L->t_start); i++) {
        L->ramp_left--;
        schedule_one(L, L->t_start);
    }
    if (!can_schedule(L, L->t_start))
        sched_stop(L);
    if (!L->ramp_left || L->sched_done) {
        uv_idle_stop(h);
        maybe_finish(L);
    }
}

/* ---- loop lag, ticks, the end --------------------------------------------- */

static void on_lag(uv_poll_t *h, int status, int events)
{
    lrun *L = h->data;
    uint64_t n = drain_fd(L->lfd);
    if (!n)
        return;
    int64_t now = bclient_now_ns();
    int64_t due = L->lag_base + (int64_t)(L->lag_ticks + 1) * LAG_PERIOD_NS;
    L->lag_ticks += n;
    int64_t cpu = thread_cpu_ns();
    if (L->n_lags == L->lags_cap) {
        L->lags_cap = L->lags_cap ? L->lags_cap * 2 : 1024;
        L->lags = xrealloc(L->lags, L->lags_cap * sizeof *L->lags);
        L->own_lags = xrealloc(L->own_lags, L->lags_cap * sizeof *L->own_lags);
    }
    double late = now > due ? (now - due) / 1e6 : 0.0, busy = (cpu - L->lag_cpu) / 1e6;
    L->lag_cpu = cpu;
    L->lags[L->n_lags] = late;
    L->own_lags[L->n_lags++] = busy < late ? busy : late;
}

static void on_closed(uv_handle_t *h)
{
    lrun *L = h->data;
    L->open_handles--;
}

static void finish(lrun *L)
{
    if (L->finished)
        return;
    L->finished = true;
    bclient_close(L->cli);
    if (L->sfd >= 0) {
        uv_poll_stop(&L->spoll);
        uv_close((uv_handle_t *)&L->spoll, on_closed);
    }
    uv_poll_stop(&L->lpoll);
    uv_close((uv_handle_t *)&L->lpoll, on_closed);
    uv_timer_stop(&L->tick);
    uv_close((uv_handle_t *)&L->tick, on_closed);
    if (L->s->shape == BLOAD_CLOSED) {
        uv_idle_stop(&L->ramp);
        uv_close((uv_handle_t *)&L->ramp, on_closed);
    }
}

static void maybe_finish(lrun *L)
{
    if (L->sched_done && !L->wq_len && !bclient_in_flight(L->cli))
        finish(L);
}

static void on_tick(uv_timer_t *t)
{
    lrun *L = t->data;
    int64_t now = bclient_now_ns();
    if (L->intr && *L->intr && !L->interrupted) {
        L->interrupted = true;
        sched_stop(L);
        L->wq_len = 0; /* never sent: not measured */
        L->stop_deadline = now + STOP_GRACE_NS;
    }
    if (L->stop_deadline && now >= L->stop_deadline && bclient_in_flight(L->cli)) {
        L->cutting = true;
        bclient_abort_all(L->cli, "interrupted: still streaming 2 s after SIGINT");
        L->cutting = false;
    }
    else if (L->sched_done && L->drain_deadline && now >= L->drain_deadline && bclient_in_flight(L->cli))
        bclient_abort_all(L->cli, "the client's deadline passed (request timeout and 1 s) with the request in flight");
    /* duration mode, closed loop: the window ends even when no slot frees */
    if (!L->sched_done && L->s->requests == 0 && L->t_meas_start &&
        now >= L->t_meas_start + (int64_t)(L->s->duration_s * 1e9) && L->s->shape == BLOAD_CLOSED)
        sched_stop(L);
    maybe_finish(L);
    if (L->finished)
        return;
    if (++L->ticks % 2 == 0 && L->s->progress)
        L->s->progress(L->s->ud, L->n_meas_done, L->s->requests, (now - L->t_start) / 1e9);
}

/* ---- the run ------------------------------------------------------------- */

static int check_spec(const bload_spec *s, char *err, size_t errlen)
{
    if (!s->url || !*s->url) {
        errf(err, errlen, "load: no URL to send to");
        return -1;
    }
    if (!s->body && (!s->bodies || !s->n_bodies)) {
        errf(err, errlen, "load: no request bodies");
        return -1;
    }
    if ((s->requests > 0) == (s->duration_s > 0) || s->requests < 0 || s->duration_s < 0 ||
        !isfinite(s->duration_s)) {
        errf(err, errlen, "load: give either a request count (> 0) or a duration (> 0 s), not %s",
             s->requests > 0 ? "both" : "neither");
        return -1;
    }
    if (s->warmup < 0) {
        errf(err, errlen, "load: warmup %ld is negative", s->warmup);
        return -1;
    }
    if (s->request_timeout_ms <= 0) {
        errf(err, errlen, "load: request timeout %" PRId64 " ms must be > 0", s->request_timeout_ms);
        return -1;
    }
    if (s->shape == BLOAD_CLOSED && s->concurrency < 1) {
        errf(err, errlen, "load: closed loop needs concurrency >= 1, got %d", s->concurrency);
        return -1;
    }
    if (s->shape == BLOAD_OPEN) {
        if (!(s->rate > 0) || !isfinite(s->rate)) {
            errf(err, errlen, "load: open loop needs a rate > 0 requests/s, got %g", s->rate);
            return -1;
        }
        if (s->burstiness < 0 || isnan(s->burstiness)) {
            errf(err, errlen, "load: burstiness must be > 0 (1 Poisson), got %g", s->burstiness);
            return -1;
        }
        if (s->concurrency < 0) {
            errf(err, errlen, "load: concurrency cap %d is negative", s->concurrency);
            return -1;
        }
    }
    return 0;
}

/* How many streams the run holds at most: the concurrency, or for an
 * uncapped open loop an estimate from the rate and the timeout.  0, or -1
 * with err set when the fd limit cannot hold them (an estimate only warns:
 * err is cleared). */
static int plan_streams(const bload_spec *spec, long *streams, char *err, size_t errlen)
{
    *streams = spec->concurrency > 0 ? spec->concurrency : 0;
    if (spec->shape == BLOAD_OPEN && !*streams) {
        double est = spec->rate * spec->request_timeout_ms / 1000.0;
        *streams = est > 100000 ? 100000 : (long)est + 1;
    }
    if (bclient_fd_budget(*streams, err, errlen) < 0) {
        if (spec->shape == BLOAD_CLOSED || spec->concurrency > 0) return -1;
        if (err && errlen) /* uncapped open loop: an estimate, not a requirement */
            err[0] = 0;
    }
    return 0;
}

/* Free the run's state: its timerfds, its loop and what it collected. */
static void lrun_free(lrun *L)
{
    if (L->lfd >= 0) close(L->lfd);
    if (L->sfd >= 0) close(L->sfd);
    if (uv_loop_close(&L->loop) != 0) {
        uv_run(&L->loop, UV_RUN_DEFAULT);
        uv_loop_close(&L->loop);
    }
    free(L->meas);
    free(L->wq);
    free(L->lags);
    free(L->own_lags);
    free(L);
}

/* A run's state with its loop, its client and its timerfds (the schedule's
 * only for an open loop).  NULL with err set. */
static lrun *lrun_open(const bload_spec *spec, volatile int *interrupted, long streams, char *err,
                       size_t errlen)
{
    lrun *L = xcalloc(1, sizeof *L);
    L->s = spec;
    L->intr = interrupted;
    L->sfd = L->lfd = -1;
    L->rng = spec->seed;
    if (uv_loop_init(&L->loop) < 0) {
        errf(err, errlen, "load: uv_loop_init failed");
        free(L);
        return NULL;
    }
    bclient_opts o = {
        .url = spec->url,
        .headers = spec->headers,
        .timeout_ms = spec->request_timeout_ms,
        .max_conns = streams > 16 ? streams + 16 : 32,
        .done = on_done,
        .ud = L,
    };
    L->cli = bclient_new(&L->loop, &o, err, errlen);
    if (!L->cli) {
        lrun_free(L);
        return NULL;
    }
    L->lfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (spec->shape == BLOAD_OPEN)
        L->sfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (L->lfd < 0 || (spec->shape == BLOAD_OPEN && L->sfd < 0)) {
        errf(err, errlen, "load: timerfd_create: %s", strerror(errno));
        bclient_close(L->cli);
        uv_run(&L->loop, UV_RUN_DEFAULT);
        bclient_free(L->cli);
        lrun_free(L);
        return NULL;
    }
    return L;
}

/* The self-check's starting marks: CPU times, the clock, the run queue. */
static void mark_start(lrun *L)
{
    thread_cpu_s(&L->user0, &L->sys0);
    L->t_start = bclient_now_ns();
    L->lag_cpu = thread_cpu_ns();
    L->cpu0 = L->lag_cpu;
    L->runq0 = thread_runq_ns();
}

/* Start the loop's handles: the loop-lag probe, the tick, and the first
 * sends (a closed loop's ramp) or the open loop's schedule. */
static void start_handles(lrun *L)
{
    uv_poll_init(&L->loop, &L->lpoll, L->lfd);
    L->lpoll.data = L;
    L->open_handles++;
    L->lag_base = L->t_start;
    uv_poll_start(&L->lpoll, UV_READABLE, on_lag);
    arm_fd(L->lfd, L->t_start + LAG_PERIOD_NS, LAG_PERIOD_NS);
    uv_unref((uv_handle_t *)&L->lpoll);

    uv_timer_init(&L->loop, &L->tick);
    L->tick.data = L;
    L->open_handles++;
    uv_timer_start(&L->tick, on_tick, TICK_MS, TICK_MS);

    if (L->s->shape == BLOAD_CLOSED) {
        L->ramp_left = L->s->concurrency;
        uv_idle_init(&L->loop, &L->ramp);
        L->ramp.data = L;
        L->open_handles++;
        uv_idle_start(&L->ramp, on_ramp);
    } else {
        uv_poll_init(&L->loop, &L->spoll, L->sfd);
        L->spoll.data = L;
        L->open_handles++;
        uv_poll_start(&L->spoll, UV_READABLE, on_sched);
        L->next_ns = L->t_start;
        arm_fd(L->sfd, L->next_ns, 0);
    }
}

/* The self-check's figures since mark_start, but the schedule lag. */
static void self_check(const lrun *L, bself *self)
{
    double u1, s1;
    int64_t t_end = bclient_now_ns();
    thread_cpu_s(&u1, &s1);
    self->user_s = u1 - L->user0;
    self->sys_s = s1 - L->sys0;
    self->wall_s = (t_end - L->t_start) / 1e9;
    /* CLOCK_THREAD_CPUTIME_ID is exact where getrusage's split is ticks;
     * under a second of wall either is noise (NaN: not judged) */
    self->cpu_pct = self->wall_s >= BSELF_CPU_MIN_WALL_S
                        ? 100.0 * (thread_cpu_ns() - L->cpu0) / 1e9 / self->wall_s
                        : NAN;
    self->bytes_per_s = self->wall_s > 0 ? bclient_bytes_in(L->cli) / self->wall_s : NAN;
    self->max_in_flight = L->max_in_flight;
    bsum_compute(&self->loop_lag_ms, L->lags, L->n_lags);
    bsum_compute(&self->loop_busy_ms, L->own_lags, L->n_lags);
    int64_t rq = thread_runq_ns();
    self->runq_wait_s = rq >= 0 && L->runq0 >= 0 ? (rq - L->runq0) / 1e9 : NAN;
}

/* The measured requests into out in send order, then those the SIGINT cut
 * (L->meas is emptied); the window W and the schedule lag with them. */
static void collect_requests(lrun *L, bload_result *out)
{
    out->reqs = xcalloc(L->n_meas ? L->n_meas : 1, sizeof *out->reqs);
    double *sl = xcalloc(L->n_meas ? L->n_meas : 1, sizeof *sl);
    size_t n_sl = 0, n_cut = 0;
    for (size_t i = 0; i < L->n_meas; i++)
        n_cut += L->meas[i]->cut;
    size_t ki = 0, kc = L->n_meas - n_cut;
    int64_t w_end_ok = 0, w_end_any = 0;
    for (size_t i = 0; i < L->n_meas; i++) {
        lreq *q = L->meas[i];
        breq *r = &out->reqs[q->cut ? kc++ : ki++];
        *r = q->r; /* moves ev and error */
        if (r->t_send && (!out->w_start || r->t_send < out->w_start)) out->w_start = r->t_send;
        if (!q->cut && r->t_done > w_end_any) w_end_any = r->t_done;
        if (!q->cut && breq_ok(r) && r->t_done > w_end_ok) w_end_ok = r->t_done;
        sl[n_sl++] = q->lag_ns / 1e6;
        free(q);
    }
    /* W ends at the last successful completion: a timeout or a reset is
     * not a completion (with none, the last end of any request) */
    out->w_end = w_end_ok ? w_end_ok : w_end_any;
    out->n = L->n_meas - n_cut;
    out->n_cut = n_cut;
    bsum_compute(&out->self.sched_lag_ms, sl, n_sl);
    free(sl);
}

int bload_run(const bload_spec *spec, bload_result *out, volatile int *interrupted, char *err,
              size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_spec(spec, err, errlen) < 0) return -1;
    if (interrupted && *interrupted) { /* nothing is sent after a SIGINT */
        out->reqs = xcalloc(1, sizeof *out->reqs);
        out->self.cpu_pct = out->self.bytes_per_s = out->self.runq_wait_s = NAN;
        return 0;
    }
    long streams;
    if (plan_streams(spec, &streams, err, errlen) < 0) return -1;
    lrun *L = lrun_open(spec, interrupted, streams, err, errlen);
    if (!L) return -1;

    mark_start(L);
    start_handles(L);
    maybe_finish(L);
    uv_run(&L->loop, UV_RUN_DEFAULT);
    if (!L->finished) { /* cannot happen: the tick keeps the loop alive until finish */
        finish(L);
        uv_run(&L->loop, UV_RUN_DEFAULT);
    }

    self_check(L, &out->self);
    collect_requests(L, out);
    out->n_warmup = (size_t)L->n_warm_done;
    if (interrupted && L->interrupted) *interrupted = 1;
    bself_judge(&out->self, NAN, spec->shape == BLOAD_OPEN);
    bclient_free(L->cli);
    lrun_free(L);
    return 0;
}

void bload_result_release(bload_result *r)
{
    for (size_t i = 0; i < r->n + r->n_cut; i++)
        breq_release(&r->reqs[i]);
    free(r->reqs);
    r->reqs = NULL;
    r->n = r->n_cut = 0;
}

/* ---- the verdict ----------------------------------------------------------- */

static void warn(bself *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(bself *s, const char *fmt, ...)
{
    if (s->n_warnings >= (int)(sizeof s->warnings / sizeof s->warnings[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->warnings[s->n_warnings++], sizeof s->warnings[0], fmt, ap);
    va_end(ap);
}

/* The p99 when n supports it, else the max (a short run is judged by its
 * worst sample: there are too few to ignore one). */
static double tail(const bsum *b, const char **name)
{
    if (b->p_ok[3]) {
        *name = "p99";
        return b->p[3];
    }
    *name = "max";
    return b->max;
}

void bself_judge(bself *s, double median_itl_ms, bool open_loop)
{
    s->client_bound = false;
    s->n_warnings = 0;
    double thr = 1.0;
    if (isfinite(median_itl_ms) && 0.05 * median_itl_ms > thr)
        thr = 0.05 * median_itl_ms;
    if (isfinite(s->cpu_pct) && s->cpu_pct > 85.0) {
        s->client_bound = true;
        warn(s, "client CPU %.0f %% of one core (> 85 %%): the client, not the server, may be the bottleneck",
             s->cpu_pct);
    }
    const char *nm, *nb;
    double v, vb;
    if (s->loop_busy_ms.n && (vb = tail(&s->loop_busy_ms, &nb)) > thr) {
        s->client_bound = true;
        warn(s, "client event-loop lag from its own work %s %.2f ms > %.2f ms (max of 1 ms and 5 %% of the median "
             "ITL): token stamps are late by up to that much", nb, vb, thr);
    } else if (s->loop_lag_ms.n && (v = tail(&s->loop_lag_ms, &nm)) > thr) {
        if (isfinite(s->runq_wait_s))
            warn(s, "client event-loop lag %s %.2f ms > %.2f ms, not the client's own work: its thread waited "
                 "%.2f s of %.2f s for a CPU (a busy host); token stamps are late by up to that much",
                 nm, v, thr, s->runq_wait_s, s->wall_s);
        else
            warn(s, "client event-loop lag %s %.2f ms > %.2f ms, not the client's own work (a busy host); token "
                 "stamps are late by up to that much", nm, v, thr);
    }
    if (open_loop && s->sched_lag_ms.n && (v = tail(&s->sched_lag_ms, &nm)) > thr) {
        s->client_bound = true;
        warn(s, "client schedule lag %s %.2f ms > %.2f ms (max of 1 ms and 5 %% of the median ITL): requests "
             "went out later than scheduled", nm, v, thr);
    }
}
