/* sup_kill.c - verified stops (supervisor.h sup_stop, sup_hurry).
 *
 * Stops are verified: SIGTERM to the group, SIGKILL after stop_timeout,
 * then /proc scanned at once, again when the exec helper's exit is
 * reported (it exits only once its group is killed and reaped), and polled
 * after 2, 5, 10 and 20 ms, then every 50 ms (one proctree_scan per loop
 * turn shared by every service being stopped) until no member of the
 * group is left and a
 * fresh snapshot shows none of the pids seen in it holding GPU memory,
 * bounded by verify_freed_timeout (past it: a warning event, down anyway;
 * 0: no NVML wait).  A kill has its own generation (kill_gen): a stop
 * joining a kill already on its way changes nothing the kill waits for.
 * A group is signalled only when a scan just found members in it, so a
 * reaped helper's pgid (maybe reused) is never signalled.
 *
 * Docker presets are stopped by signals to the group like every other
 * driver (the `docker run` client in the group forwards them); the
 * `docker stop`/`docker rm` commands of driver_stop_argv are not run yet. */
#include "daemon/sup_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/log.h"

#define KILL_AFTER_SIGKILL_MS 10000 /* verify_freed_timeout 0: how long SIGKILL gets */
#define VERIFY_RETRY_MS 100

/* ------------------------------------------------------------------ */
/* killing */

static void kill_poll(uv_timer_t *t);
static void kill_done(svc *v, const char *warning);

static void note_members(svc *v, const pid_t *pids, int n)
{
    for (int i = 0; i < n && i < 1024; i++) {
        bool have = false;
        for (size_t k = 0; k < v->nseen; k++)
            if (v->seen[k] == pids[i]) have = true;
        if (!have && v->nseen < MAX_SEEN) v->seen[v->nseen++] = pids[i];
    }
}

/* Signal the group only when a scan just found n > 0 members: the group
 * exists, so its pgid is still ours (a pgid stays taken while any member
 * lives). */
static void signal_group(svc *v, int sig, int n)
{
    /* a unit is stopped through systemd even while its main pid is not
     * known yet (ExecStartPre runs) */
    bool unit = v->s->run->owns_restarts && v->h && !v->exited;
    if (!unit && (v->pgid <= 1 || n <= 0)) return;
    int rc = -1;
    errno = ESRCH;
    if (v->h && !v->exited) rc = v->s->run->signal_group(v->h, sig);
    /* the helper is gone, members are not; a unit's processes are
     * systemd's, never signalled behind it (after a bus loss they run on) */
    if (rc != 0 && errno == ESRCH && v->pgid > 1 && n > 0 && !v->s->run->owns_restarts)
        rc = kill(-v->pgid, sig);
    if (rc != 0 && errno != ESRCH)
        log_warn("supervisor: '%s': cannot signal process group %d: %s", v->id, (int)v->pgid, strerror(errno));
}

void sv_scan_drop(sup *s)
{
    proctree_scan_release(s->scan, s->nscan);
    free(s->scan);
    s->scan = NULL;
    s->nscan = 0;
    s->scan_valid = false;
}

/* The live members of v's group (at most max into pids), from one /proc
 * scan per loop turn covering every group being killed: at shutdown the
 * polls of all services fire together and share it. */
static int group_members(svc *v, pid_t *pids, int max)
{
    sup *s = v->s;
    if (v->pgid <= 0) return 0;
    uint64_t now = uv_now(s->env.loop);
    bool have = s->scan_valid && s->scan_now == now;
    size_t k = 0;
    if (have) {
        while (k < s->nscan && s->scan[k].pgid != v->pgid) k++;
        have = k < s->nscan;
    }
    if (!have) {
        sv_scan_drop(s);
        pid_t *pg = xcalloc(s->nsvcs + 1, sizeof *pg);
        size_t n = 0;
        pg[n++] = v->pgid;
        for (size_t i = 0; i < s->nsvcs; i++)
            if (s->svcs[i] != v && s->svcs[i]->killing && s->svcs[i]->pgid > 0) pg[n++] = s->svcs[i]->pgid;
        s->scan = xcalloc(n, sizeof *s->scan);
        s->nscan = n;
        char err[256];
        if (proctree_scan(NULL, pg, n, s->scan, err, sizeof err) != 0) {
            log_warn("supervisor: '%s': %s", v->id, err);
            free(pg);
            sv_scan_drop(s);
            /* fall back to the one group */
            int r = proctree_group(NULL, v->pgid, pids, (size_t)max, NULL, 0);
            return r < 0 ? 0 : r;
        }
        free(pg);
        s->scan_valid = true;
        s->scan_now = now;
        k = 0;
    }
    const proctree_group_info *g = &s->scan[k];
    int n = (int)g->n;
    for (int i = 0; i < n && i < max; i++) pids[i] = g->pids[i];
    return n;
}

/* The delay before the next kill poll: short right after a signal (a
 * group that heeds SIGTERM is gone within a few ms), then KILL_POLL_MS. */
static uint64_t kill_next_ms(svc *v)
{
    static const uint64_t first[] = {0, 2, 5, 10, 20};
    int k = v->kill_polls++;
    return k < (int)(sizeof first / sizeof *first) ? first[k] : KILL_POLL_MS;
}

static void kill_arm(svc *v)
{
    uv_timer_start(&v->t_kill, kill_poll, kill_next_ms(v), 0);
}

static int64_t after_sigkill_ms(const svc *v)
{
    return v->verify_ms > 0 ? v->verify_ms : KILL_AFTER_SIGKILL_MS;
}

void sv_begin_kill(svc *v)
{
    sv_ensure_timers(v);
    /* Already on its way: nothing to add, and nothing the kill waits for
     * may be made stale (its snapshots carry kill_gen). */
    if (v->killing) return;
    v->gen++; /* answers for the start or health checks are stale now */
    v->kill_gen++;
    sv_stop_probe(v);
    uv_timer_stop(&v->t_start);
    v->killing = true;
    v->kill_phase = 0;
    v->kill_t0 = clock_mono_ms();
    v->kill_polls = 0;
    v->nseen = 0;
    if (sv_slots_before_kill(v)) return; /* the slots' save first (sup_slots.c) */
    sv_kill_signal(v);
}

void sv_kill_signal(svc *v)
{
    v->kill_t0 = clock_mono_ms();
    if (v->pgid > 1 || (v->s->run->owns_restarts && v->h)) {
        pid_t pids[1024];
        int n = v->pgid > 1 ? proctree_group(NULL, v->pgid, pids, 1024, NULL, 0) : 0;
        if (n < 0) n = 0;
        note_members(v, pids, n);
        if (v->s->hurry) {
            signal_group(v, SIGKILL, n);
            v->kill_phase = 1;
            v->kill_deadline = v->kill_t0 + after_sigkill_ms(v);
        } else {
            signal_group(v, SIGTERM, n);
        }
    }
    kill_arm(v); /* the first scan on the next loop turn */
}

static bool gpu_holds(const snapshot *snap, const svc *v, char *what, size_t len)
{
    for (size_t g = 0; g < snap->ngpus; g++)
        for (size_t i = 0; i < snap->gpus[g].nprocs; i++)
            for (size_t k = 0; k < v->nseen; k++)
                if ((pid_t)snap->gpus[g].procs[i].pid == v->seen[k]) {
                    snprintf(what, len, "pid %d still holds %llu MiB on GPU %d", (int)v->seen[k],
                             (unsigned long long)(snap->gpus[g].procs[i].used_bytes == UINT64_MAX
                                                      ? 0
                                                      : snap->gpus[g].procs[i].used_bytes >> 20),
                             snap->gpus[g].index);
                    return true;
                }
    return false;
}

static void verified(svc *v, const snapshot *snap)
{
    char what[160];
    if (v->s->hurry || !gpu_holds(snap, v, what, sizeof what)) {
        kill_done(v, NULL);
        return;
    }
    if (clock_mono_ms() >= v->kill_deadline) {
        char *w = xasprintf("stopped, but after verify_freed_timeout (%lld ms) %s", (long long)v->verify_ms, what);
        kill_done(v, w);
        free(w);
        return;
    }
    uv_timer_start(&v->t_kill, kill_poll, VERIFY_RETRY_MS, 0);
}

static void kill_poll(uv_timer_t *t)
{
    svc *v = t->data;
    sup *s = v->s;
    int64_t now = clock_mono_ms();
    if (v->kill_phase == 2) { /* the retry of a GPU memory check */
        if (s->hurry) {
            kill_done(v, NULL);
            return;
        }
        sv_take_gen(v, true, verified);
        return;
    }
    pid_t pids[1024];
    int n = group_members(v, pids, 1024);
    if (n > 1024) n = 1024;
    note_members(v, pids, n);
    bool gone = n == 0 && (!v->h || v->exited);
    if (gone) {
        uv_timer_stop(&v->t_kill);
        const snapshot *last = hostmon_last(s->env.hm, NULL);
        if (v->nseen > 0 && last && last->nvml == NVML_OK && v->verify_ms > 0 && !s->hurry) {
            v->kill_phase = 2;
            v->kill_deadline = now + v->verify_ms;
            sv_take_gen(v, true, verified);
        } else {
            kill_done(v, NULL);
        }
        return;
    }
    if (v->kill_phase == 0 && (s->hurry || now - v->kill_t0 >= v->stop_timeout_ms)) {
        if (n > 0)
            log_info("supervisor: '%s': still running %lld ms after SIGTERM: SIGKILL to process group %d", v->id,
                     (long long)(now - v->kill_t0), (int)v->pgid);
        signal_group(v, SIGKILL, n);
        v->kill_phase = 1;
        v->kill_polls = 1; /* the next scans come soon again */
        v->kill_deadline = now + after_sigkill_ms(v);
    } else if (v->kill_phase == 1 && now >= v->kill_deadline) {
        char *w = n > 0 ? xasprintf("stopped, but %d process(es) of group %d survived SIGKILL for %lld ms (pid %d)",
                                    n, (int)v->pgid, (long long)after_sigkill_ms(v), (int)pids[0])
                        : xasprintf("stopped, but the exec helper of group %d never reported its exit",
                                    (int)v->pgid);
        uv_timer_stop(&v->t_kill);
        kill_done(v, w);
        free(w);
        return;
    }
    kill_arm(v);
}


static void kill_done(svc *v, const char *warning)
{
    sup *s = v->s;
    int64_t took_ms = clock_mono_ms() - v->kill_t0;
    uv_timer_stop(&v->t_kill);
    v->killing = false;
    v->kill_gen++; /* a verify still in flight is over */
    v->kill_phase = 0;
    if (warning) {
        char *d = xasprintf("{\"pid\":%d,\"code\":null,\"signal\":null,\"warning\":true}", (int)v->pgid);
        sv_emit(s, v->id, "exit", NULL, NULL, warning, d);
        free(d);
        log_warn("supervisor: '%s': %s", v->id, warning);
    }
    /* the runner reaps a helper that has not reported its exit yet */
    if (v->h) s->run->close(v->h);
    v->h = NULL;
    if (v->pgid > 0) sv_run_file_remove(v);
    pid_t old = v->pgid;
    v->pgid = v->pid = 0;
    v->progress = -1;
    sv_release_reservation(v);
    char words[128];
    if (old > 0)
        snprintf(words, sizeof words, "process group %d gone after %lld ms", (int)old, (long long)took_ms);
    else
        snprintf(words, sizeof words, "nothing was running");
    svc_state before = v->state;
    sv_feed(v, EV_STOPPED, words);
    if (v->slot && before == SVC_UNHEALTHY) /* health failed while the footprint was being measured */
        sv_end_start(v, "failed", SUP_START_FAILED, "health failed right after it became ready");
    /* what the stop ends */
    if (before == SVC_STOPPING || before == SVC_FAILED) {
        if (v->starts || v->slot || v->queued) {
            const char *outcome = before == SVC_FAILED || v->pend == SUP_START_FAILED ? "failed" : "cancelled";
            sv_end_start(v, outcome, v->pend != SUP_OK ? v->pend : SUP_CONFLICT,
                         v->pend_msg ? v->pend_msg : "stopped before it was ready");
        }
        waiter *w = v->stops;
        v->stops = NULL;
        sv_call_waiters(w, &(sup_result){.outcome = SUP_OK});
    }
    sv_maybe_shutdown_done(s);
}

void sup_hurry(sup *s)
{
    if (!s) return;
    s->hurry = true;
    if (s->recon_cb) sv_recon_kill_now(s);
    for (size_t i = 0; i < s->nsvcs; i++) {
        svc *v = s->svcs[i];
        if (!v->killing || !v->timers) continue;
        v->kill_gen++; /* a verify in flight is not waited for */
        if (v->kill_phase == 0) {
            pid_t pids[1024];
            int n = v->pgid > 1 ? proctree_group(NULL, v->pgid, pids, 1024, NULL, 0) : 0;
            if (n < 0) n = 0;
            note_members(v, pids, n);
            if (n > 0)
                log_info("supervisor: '%s': hurried: SIGKILL to process group %d", v->id, (int)v->pgid);
            signal_group(v, SIGKILL, n);
            v->kill_phase = 1;
            v->kill_deadline = clock_mono_ms() + after_sigkill_ms(v);
        }
        /* the poll confirms the group gone (phase 2: done at once) */
        v->kill_polls = 0;
        kill_arm(v);
    }
}

/* The exec helper of a group being killed exited: expected, it exits only
 * once its group is killed and reaped (docs/exec.md), so look now rather
 * than at the next poll (on the next loop turn, outside the runner's
 * callback; a scan of this loop turn is stale now). */
void sv_kill_helper_exited(svc *v)
{
    v->s->scan_valid = false;
    if (v->kill_phase != 2 && v->timers) {
        v->kill_polls = 1;
        uv_timer_start(&v->t_kill, kill_poll, 0, 0);
    }
}
