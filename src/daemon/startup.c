/* startup.c - the start-up mode brought up (startup.h).
 *
 * A daemon killed with -9 (or crashed) leaves its engines to the exec
 * helpers, which kill them within milliseconds, but the driver releases
 * their GPU memory later: a switch planned at once is refused by the gate
 * on memory nobody uses any more, and the host would stay in no mode.  So
 * when reconcile found run files (sup_left_behind), the first attempt
 * waits, as a stop's verify-freed does and bounded by the same
 * verify_freed_timeout, until no GPU process NVML lists is dead.  Then
 * the switch; one refused by the gate or failed in a start is tried again
 * with backoff (1 s, doubling, at most 30 s) while switch.startup_retry
 * allows.  Each step is an event, so `gpumod events` tells why the host
 * came up late or not at all. */
#include "daemon/startup.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/clock.h"
#include "util/errf.h"

#define RELEASE_POLL_MS 100
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 30000

struct startup {
    swx *x;
    switch_env env;
    char *target;
    uv_timer_t t;
    bool stopped;
    int attempt;
    int64_t t0, backoff_ms, release_deadline;
};

static const settings *set_of(const startup *su)
{
    return &(*su->env.cfg)->set;
}

/* One switch.phase event, data {"phase":"startup","step":...,"attempt":N}. */
static void note(startup *su, const char *step, const char *reason)
{
    char data[160];
    snprintf(data, sizeof data, "{\"phase\":\"startup\",\"step\":\"%s\",\"attempt\":%d}", step, su->attempt);
    store_event e = {.ts_ms = clock_unix_ms(), .kind = "switch.phase", .from = "-", .to = su->target,
                     .reason = reason, .data = data};
    char err[256];
    if (store_event_add(su->env.st, &e, &e.id, err, sizeof err)) {
        log_warn("start-up mode: %s", err);
        return;
    }
    if (su->env.on_event) su->env.on_event(&e, su->env.ud);
}

static void attempt(startup *su);

static void on_timer(uv_timer_t *t)
{
    startup *su = t->data;
    if (!su->stopped) attempt(su);
}

/* A GPU process NVML lists whose pid is gone: memory still being
 * released (a pid of another namespace looks so too; the wait is bounded). */
static bool dead_holder(const snapshot *snap, char *what, size_t len)
{
    for (size_t g = 0; g < snap->ngpus; g++)
        for (size_t i = 0; i < snap->gpus[g].nprocs; i++) {
            const gpu_proc *p = &snap->gpus[g].procs[i];
            if (p->pid == 0 || kill((pid_t)p->pid, 0) == 0 || errno != ESRCH) continue;
            uint64_t mib = p->used_bytes == UINT64_MAX ? 0 : p->used_bytes >> 20;
            snprintf(what, len, "pid %u (gone) still holds %llu MiB on GPU %d", (unsigned)p->pid,
                     (unsigned long long)mib, snap->gpus[g].index);
            return true;
        }
    return false;
}

static void released(const snapshot *snap, void *ud)
{
    startup *su = ud;
    if (su->stopped) return;
    char what[128], *m;
    int64_t now = clock_mono_ms(), waited = now - su->t0;
    if (snap->nvml != NVML_OK || !dead_holder(snap, what, sizeof what)) {
        m = xasprintf("start-up: a previous daemon left GPU memory held; released after %lld ms", (long long)waited);
    } else if (now < su->release_deadline) {
        uv_timer_start(&su->t, on_timer, RELEASE_POLL_MS, 0);
        return;
    } else {
        m = xasprintf("start-up: a previous daemon left GPU memory held; after verify_freed_timeout (%lld ms) %s; "
                      "planning anyway",
                      (long long)waited, what);
    }
    note(su, "released", m);
    log_info("%s", m);
    free(m);
    su->release_deadline = 0;
    attempt(su);
}

static bool retryable(const switch_result *r)
{
    return (r->status == 409 && r->code && !strcmp(r->code, "gate_refused")) ||
           (r->status == 422 && r->code && !strcmp(r->code, "start_failed"));
}

static void done(const switch_result *r, void *ud)
{
    startup *su = ud;
    if (su->stopped) return;
    const char *why = r->message ? r->message : "failed";
    int64_t spent = clock_mono_ms() - su->t0, budget = set_of(su)->sw.startup_retry_ms;
    char *m;
    if (r->status == 200) {
        m = xasprintf("start-up: mode '%s' is up (attempt %d, %lld ms)", su->target, su->attempt, (long long)spent);
        note(su, "committed", m);
        log_info("%s", m);
    } else if (retryable(r) && spent + su->backoff_ms <= budget) {
        m = xasprintf("start-up: attempt %d to bring up mode '%s' failed: %s; next attempt in %lld ms", su->attempt,
                      su->target, why, (long long)su->backoff_ms);
        note(su, "retry", m);
        log_warn("%s", m);
        uv_timer_start(&su->t, on_timer, (uint64_t)su->backoff_ms, 0);
        su->backoff_ms = su->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : su->backoff_ms * 2;
    } else {
        if (retryable(r))
            m = xasprintf("start-up: gave up on mode '%s' after %d attempt(s) in %lld ms, within "
                          "switch.startup_retry (%lld ms): %s",
                          su->target, su->attempt, (long long)spent, (long long)budget, why);
        else
            m = xasprintf("start-up: gave up on mode '%s' after %d attempt(s): %s", su->target, su->attempt, why);
        note(su, "gave_up", m);
        log_warn("%s", m);
    }
    free(m);
}

static void attempt(startup *su)
{
    if (su->release_deadline) { /* still waiting for the memory */
        hostmon_take(su->env.hm, released, su);
        return;
    }
    su->attempt++;
    switch_req rq = {.mode = su->target, .origin = "startup", .queue = true};
    switch_request(su->x, &rq, done, su);
}

startup *startup_begin(swx *x, const switch_env *env, const char *target)
{
    startup *su = xcalloc(1, sizeof *su);
    su->x = x;
    su->env = *env;
    su->target = xstrdup(target);
    su->t0 = clock_mono_ms();
    su->backoff_ms = BACKOFF_FIRST_MS;
    uv_timer_init(env->loop, &su->t);
    su->t.data = su;
    int64_t verify = set_of(su)->memory.verify_freed_timeout_ms;
    if (env->sup && sup_left_behind(env->sup) && env->hm && verify > 0) su->release_deadline = su->t0 + verify;
    attempt(su);
    return su;
}

void startup_stop(startup *su)
{
    if (!su || su->stopped) return;
    su->stopped = true;
    uv_timer_stop(&su->t);
    uv_close((uv_handle_t *)&su->t, NULL);
}

void startup_free(startup *su)
{
    if (!su) return;
    free(su->target);
    free(su);
}
