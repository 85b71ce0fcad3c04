/* watchdog.c - the memory watchdog's glue (see watchdog.h): a timer every
 * memory.watchdog.interval that measures, asks the pure decision
 * (src/core/watchdog.h) and has the supervisor stop the service it names.
 *
 * What is read where, and why it never blocks the loop:
 *   - MemAvailable and PSI: procmem_read_meminfo / procmem_read_psi under
 *     proc_root, synchronously (two small files, microseconds).
 *   - per live service: the anonymous + shmem resident bytes of its
 *     process group (RssAnon + RssShmem: mmapped weights are file pages
 *     the kernel can drop, never "use" past a need), from ONE pass over
 *     the real /proc per tick for every group (proctree_scan; a
 *     service's processes are never in a fixture), and the GPU memory
 *     NVML reports for the group's pids, from hostmon's last snapshot.
 *     NVML itself is never called here: each tick asks hostmon for a fresh
 *     snapshot on the thread pool (at most one take of ours in flight, so
 *     takes cannot pile up behind a slow NVML), and the next tick uses it.
 *     The GPU figures therefore lag by at most one interval plus one
 *     snapshot; the host figures are current.
 * A service the watchdog has stopped is not acted on again while that
 * start of it (id + spawn time) is still live; the core never picks a
 * service that is already stopping.
 *
 * Close order: watchdog_close before hostmon_close (a take of ours in
 * flight must come back, or the close waits for it forever). */
#include "daemon/watchdog.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/watchdog.h"
#include "util/log.h"
#include "host/proctree.h"
#include "util/clock.h"

#define MIB ((uint64_t)1 << 20)
#define MAX_SERVICES 256

typedef struct wd_fig {
    char *id;
    svc_state state;
    bool loading;
    int64_t started_ms;
    pid_t pgid;
    size_t nprocs;
    bool need_known;
    uint64_t need_bytes, limit_bytes;
    bool used_known;
    uint64_t host_bytes, gpu_bytes;
    bool gpu_known; /* NVML answered per-process figures for this snapshot */
} wd_fig;

typedef struct acted {
    char *id;
    int64_t started_ms;
} acted;

struct watchdog {
    uv_loop_t *loop;
    uv_timer_t timer;
    sup *s;
    hostmon *hm;
    const settings *set;
    char *proc_root;
    int64_t interval_ms;
    bool take_inflight, closing, timer_closed;
    void (*close_cb)(void *ud);
    void *close_ud;

    /* the last tick */
    bool ticked;
    int64_t last_tick_unix_ms;
    host_mem host;
    char host_err[256];
    char nvml[16];
    int64_t snap_age_ms; /* -1: no snapshot yet */
    wd_fig *figs;
    size_t nfigs;
    char note[512];
    char last_note[512]; /* what was logged, so a lasting condition is logged once */

    /* the last stop */
    bool has_action;
    int64_t action_unix_ms;
    char action_service[128], action_trigger[32], action_reason[320];

    acted *acted;
    size_t nacted;
};

static void figs_clear(watchdog *w)
{
    for (size_t i = 0; i < w->nfigs; i++)
        free(w->figs[i].id);
    free(w->figs);
    w->figs = NULL;
    w->nfigs = 0;
}

static uint64_t need_total(const need *n)
{
    uint64_t t = n->host_bytes;
    size_t ng = n->ngpu < HOST_MAX_GPUS ? n->ngpu : HOST_MAX_GPUS;
    for (size_t g = 0; g < ng; g++)
        t = t > UINT64_MAX - n->gpu[g].bytes ? UINT64_MAX : t + n->gpu[g].bytes;
    return t;
}

static void policy_from(const settings *set, wd_policy *p)
{
    p->floor_bytes = (uint64_t)set->memory.watchdog_floor_mb * MIB;
    p->psi_full_avg10_max = set->memory.watchdog_psi_full_avg10_max;
    p->over_need_factor = set->memory.watchdog_over_need_factor;
    p->over_need_margin_bytes = (uint64_t)set->memory.watchdog_over_need_margin_mb * MIB;
}

/* GPU bytes NVML reports for the pids of the group, over every device. */
static uint64_t group_gpu_bytes(const snapshot *snap, const pid_t *pids, size_t npids)
{
    uint64_t t = 0;
    size_t ng = snap->ngpus < HOST_MAX_GPUS ? snap->ngpus : HOST_MAX_GPUS;
    for (size_t g = 0; g < ng; g++) {
        const gpu_dev *d = &snap->gpus[g];
        for (size_t k = 0; k < d->nprocs; k++) {
            if (d->procs[k].used_bytes == UINT64_MAX) continue;
            for (size_t i = 0; i < npids; i++)
                if ((pid_t)d->procs[k].pid == pids[i]) {
                    t += d->procs[k].used_bytes;
                    break;
                }
        }
    }
    return t;
}

/* gi: the service's group from this tick's one /proc pass (NULL when it
 * has no process yet, or /proc could not be listed). */
static void measure(watchdog *w, const sup_usage *u, wd_fig *f, const snapshot *snap,
                    const proctree_group_info *gi)
{
    memset(f, 0, sizeof *f);
    f->id = xstrdup(u->id);
    f->state = u->state;
    f->started_ms = u->started_ms;
    f->pgid = u->pgid;
    f->need_known = u->admitted.source[0] != '\0';
    f->need_bytes = need_total(&u->admitted);
    wd_policy p;
    policy_from(w->set, &p);
    f->limit_bytes = f->need_known ? watchdog_limit(f->need_bytes, &p) : 0;
    if (u->pgid <= 0 || !gi) return; /* no process yet: used unknown, not "loading" */
    f->host_bytes = gi->anon_bytes;
    f->nprocs = gi->n;
    f->used_known = true;
    /* loading = holds the load slot AND has a process whose usage is
     * known: a start still in admission (slot, pgid 0) has nothing to
     * stop, and choosing it would spare the service that does */
    f->loading = u->loading;
    if (snap && snap->nvml == NVML_OK && snap->ngpus > 0) {
        f->gpu_bytes = group_gpu_bytes(snap, gi->pids, gi->n);
        f->gpu_known = true;
    }
}

static bool was_acted(const watchdog *w, const char *id, int64_t started_ms)
{
    for (size_t i = 0; i < w->nacted; i++)
        if (w->acted[i].started_ms == started_ms && strcmp(w->acted[i].id, id) == 0) return true;
    return false;
}

/* Forget stops whose service start is no longer live. */
static void acted_prune(watchdog *w)
{
    size_t keep = 0;
    for (size_t i = 0; i < w->nacted; i++) {
        bool live = false;
        for (size_t k = 0; k < w->nfigs && !live; k++)
            live = w->figs[k].started_ms == w->acted[i].started_ms &&
                   strcmp(w->figs[k].id, w->acted[i].id) == 0;
        if (live)
            w->acted[keep++] = w->acted[i];
        else
            free(w->acted[i].id);
    }
    w->nacted = keep;
}

static void fig_json(buf *b, const wd_fig *f)
{
    buf_adds(b, "{\"id\":");
    buf_json_str(b, f->id);
    buf_printf(b, ",\"state\":\"%s\",\"loading\":%s,\"pgid\":", svc_state_names[f->state],
               f->loading ? "true" : "false");
    if (f->pgid > 0)
        buf_printf(b, "%d,\"nprocs\":%zu", (int)f->pgid, f->nprocs);
    else
        buf_adds(b, "null,\"nprocs\":0");
    if (f->used_known)
        buf_printf(b, ",\"used_bytes\":%llu", (unsigned long long)(f->host_bytes + f->gpu_bytes));
    else
        buf_adds(b, ",\"used_bytes\":null");
    if (f->used_known)
        buf_printf(b, ",\"host_used_bytes\":%llu", (unsigned long long)f->host_bytes);
    else
        buf_adds(b, ",\"host_used_bytes\":null");
    if (f->gpu_known)
        buf_printf(b, ",\"gpu_used_bytes\":%llu", (unsigned long long)f->gpu_bytes);
    else
        buf_adds(b, ",\"gpu_used_bytes\":null");
    if (f->need_known)
        buf_printf(b, ",\"need_bytes\":%llu,\"limit_bytes\":%llu}",
                   (unsigned long long)f->need_bytes, (unsigned long long)f->limit_bytes);
    else
        buf_adds(b, ",\"need_bytes\":null,\"limit_bytes\":null}");
}

/* The host side of the figures, shared by the event data and status. */
static void host_json(buf *b, const watchdog *w)
{
    wd_policy p;
    policy_from(w->set, &p);
    if (w->host.meminfo_ok)
        buf_printf(b, "\"mem_available_bytes\":%llu", (unsigned long long)w->host.mem_available);
    else
        buf_adds(b, "\"mem_available_bytes\":null");
    if (w->host.psi_ok)
        buf_printf(b, ",\"psi_full_avg10\":%g", w->host.psi_full_avg10);
    else
        buf_adds(b, ",\"psi_full_avg10\":null");
    buf_printf(b,
               ",\"floor_bytes\":%llu,\"psi_full_avg10_max\":%g,\"over_need_factor\":%g,\"over_"
               "need_margin_bytes\":%llu",
               (unsigned long long)p.floor_bytes, p.psi_full_avg10_max, p.over_need_factor,
               (unsigned long long)p.over_need_margin_bytes);
    buf_adds(b, ",\"nvml\":");
    buf_json_str(b, w->nvml);
}

static void services_json(buf *b, const watchdog *w)
{
    buf_adds(b, "\"services\":[");
    for (size_t i = 0; i < w->nfigs; i++) {
        if (i) buf_addc(b, ',');
        fig_json(b, &w->figs[i]);
    }
    buf_addc(b, ']');
}

static void act(watchdog *w, const wd_decision *d)
{
    const wd_fig *f = &w->figs[d->index];
    if (was_acted(w, f->id, f->started_ms)) return;
    w->acted = xrealloc(w->acted, (w->nacted + 1) * sizeof *w->acted);
    w->acted[w->nacted].id = xstrdup(f->id);
    w->acted[w->nacted].started_ms = f->started_ms;
    w->nacted++;

    buf data = BUF_INIT;
    buf_adds(&data, "{\"trigger\":");
    buf_json_str(&data, d->trigger);
    buf_addc(&data, ',');
    host_json(&data, w);
    buf_adds(&data, ",\"service\":");
    fig_json(&data, f);
    buf_addc(&data, ',');
    services_json(&data, w);
    buf_addc(&data, '}');

    w->has_action = true;
    w->action_unix_ms = w->last_tick_unix_ms;
    snprintf(w->action_service, sizeof w->action_service, "%s", f->id);
    snprintf(w->action_trigger, sizeof w->action_trigger, "%s", d->trigger);
    snprintf(w->action_reason, sizeof w->action_reason, "%s", d->reason);
    log_warn("watchdog: %s (%s)", d->reason, d->trigger);
    char *id = xstrdup(f->id); /* the supervisor may call back into anything; keep our own copies */
    sup_watchdog_stop(w->s, id, d->reason, data.p);
    free(id);
    buf_release(&data);
}

static void on_take(const snapshot *snap, void *ud)
{
    watchdog *w = ud;
    w->take_inflight = false;
    if (w->closing && w->timer_closed) {
        /* the close waited for us */
        void (*cb)(void *) = w->close_cb;
        void *cud = w->close_ud;
        figs_clear(w);
        for (size_t i = 0; i < w->nacted; i++)
            free(w->acted[i].id);
        free(w->acted);
        free(w->proc_root);
        free(w);
        if (cb) cb(cud);
    }
}

static void tick(uv_timer_t *t)
{
    watchdog *w = t->data;
    if (w->closing) return;
    char err[256];
    w->ticked = true;
    w->last_tick_unix_ms = clock_unix_ms();
    w->host_err[0] = '\0';
    memset(&w->host, 0, sizeof w->host);
    if (procmem_read_meminfo(&w->host, w->proc_root, err, sizeof err) < 0) {
        w->host.meminfo_ok = false;
        snprintf(w->host_err, sizeof w->host_err, "%s", err);
    }
    if (procmem_read_psi(&w->host, w->proc_root, err, sizeof err) < 0) {
        w->host.psi_ok = false;
        if (!w->host_err[0]) snprintf(w->host_err, sizeof w->host_err, "%s", err);
    }

    int64_t taken_ms = 0;
    const snapshot *snap = hostmon_last(w->hm, &taken_ms);
    snprintf(w->nvml, sizeof w->nvml, "%s", snap ? nvml_state_names[snap->nvml] : "unknown");
    w->snap_age_ms = snap ? clock_mono_ms() - taken_ms : -1;

    sup_usage us[MAX_SERVICES];
    size_t n = sup_usages(w->s, us, MAX_SERVICES);
    if (n > MAX_SERVICES) n = MAX_SERVICES;
    figs_clear(w);
    w->figs = n ? xcalloc(n, sizeof *w->figs) : NULL;
    w->nfigs = n;
    /* one /proc pass for every live group (never one per service) */
    pid_t pgids[MAX_SERVICES];
    size_t ng = 0;
    for (size_t i = 0; i < n; i++)
        if (us[i].pgid > 0) pgids[ng++] = us[i].pgid;
    proctree_group_info gis[MAX_SERVICES];
    bool scanned = proctree_scan("/proc", pgids, ng, gis, err, sizeof err) == 0;
    if (!scanned && !w->host_err[0]) snprintf(w->host_err, sizeof w->host_err, "%s", err);
    wd_service v[MAX_SERVICES];
    for (size_t i = 0; i < n; i++) {
        wd_fig *f = &w->figs[i];
        const proctree_group_info *gi = NULL;
        if (us[i].pgid > 0) {
            /* a pgid listed twice has its members in the first slot */
            for (size_t j = 0; j < ng && scanned; j++)
                if (gis[j].pgid == us[i].pgid) {
                    gi = &gis[j];
                    break;
                }
        }
        measure(w, &us[i], f, snap, gi);
        v[i] =
            (wd_service){.id = f->id,
                         .loading = f->loading,
                         .stopping = f->state == SVC_STOPPING || was_acted(w, f->id, f->started_ms),
                         .asleep = f->state == SVC_SLEEPING,
                         .need_known = f->need_known,
                         .need_bytes = f->need_bytes,
                         .used_known = f->used_known,
                         .used_bytes = f->host_bytes + f->gpu_bytes,
                         .started_ms = f->started_ms};
    }
    proctree_scan_release(gis, ng);
    acted_prune(w);

    wd_host h = {.meminfo_ok = w->host.meminfo_ok,
                 .mem_available_bytes = w->host.mem_available,
                 .psi_ok = w->host.psi_ok,
                 .psi_full_avg10 = w->host.psi_full_avg10};
    wd_policy p;
    policy_from(w->set, &p);
    wd_decision d;
    watchdog_decide(&h, v, n, &p, &d);

    /* what the decision could not act on, plus a hung NVML (the gate
     * refuses every start while it lasts: nvml.hung) */
    snprintf(w->note, sizeof w->note, "%s", d.note);
    if (snap && snap->nvml == NVML_HUNG) {
        size_t len = strlen(w->note);
        snprintf(w->note + len, sizeof w->note - len,
                 "%sNVML hung: new starts are refused (gate nvml.hung)", len ? "; " : "");
    }
    if (strcmp(w->note, w->last_note) != 0) {
        if (w->note[0])
            log_warn("watchdog: %s", w->note);
        else if (w->last_note[0])
            log_info("watchdog: cleared: %s", w->last_note);
        snprintf(w->last_note, sizeof w->last_note, "%s", w->note);
    }

    if (d.stop) act(w, &d);

    /* fresh NVML figures for the next tick, only while something runs */
    if (n > 0 && !w->take_inflight && !w->closing) {
        w->take_inflight = true;
        hostmon_take(w->hm, on_take, w);
    }
}

static int64_t interval_of(const settings *set)
{
    int64_t ms = set->memory.watchdog_interval_ms;
    return ms > 0 ? ms : 500;
}

watchdog *watchdog_new(uv_loop_t *loop, sup *s, hostmon *hm, const settings *set,
                       const char *proc_root)
{
    watchdog *w = xcalloc(1, sizeof *w);
    w->loop = loop;
    w->s = s;
    w->hm = hm;
    w->set = set;
    if (!proc_root || !*proc_root) proc_root = getenv("GPUMOD_PROC_ROOT");
    w->proc_root = xstrdup(proc_root && *proc_root ? proc_root : "/proc");
    w->snap_age_ms = -1;
    snprintf(w->nvml, sizeof w->nvml, "unknown");
    uv_timer_init(loop, &w->timer);
    w->timer.data = w;
    w->interval_ms = interval_of(set);
    uv_timer_start(&w->timer, tick, (uint64_t)w->interval_ms, (uint64_t)w->interval_ms);
    return w;
}

void watchdog_set_settings(watchdog *w, const settings *set)
{
    w->set = set;
    int64_t iv = interval_of(set);
    if (iv != w->interval_ms && !w->closing) {
        w->interval_ms = iv;
        uv_timer_start(&w->timer, tick, (uint64_t)iv, (uint64_t)iv);
    }
}

void watchdog_json(watchdog *w, buf *out)
{
    buf_printf(out, "{\"interval_ms\":%lld,\"last_tick\":", (long long)w->interval_ms);
    char ts[40];
    if (w->ticked) {
        clock_rfc3339(w->last_tick_unix_ms, ts, sizeof ts);
        buf_json_str(out, ts);
    } else {
        buf_adds(out, "null"); /* the figures below are all null until the first tick */
    }
    buf_addc(out, ',');
    host_json(out, w);
    buf_adds(out, ",\"host_error\":");
    if (w->host_err[0])
        buf_json_str(out, w->host_err);
    else
        buf_adds(out, "null");
    if (w->snap_age_ms >= 0)
        buf_printf(out, ",\"gpu_figures_age_ms\":%lld", (long long)w->snap_age_ms);
    else
        buf_adds(out, ",\"gpu_figures_age_ms\":null");
    buf_adds(out, ",\"note\":");
    if (w->note[0])
        buf_json_str(out, w->note);
    else
        buf_adds(out, "null");
    buf_addc(out, ',');
    services_json(out, w);
    buf_adds(out, ",\"last_action\":");
    if (!w->has_action) {
        buf_adds(out, "null}");
        return;
    }
    clock_rfc3339(w->action_unix_ms, ts, sizeof ts);
    buf_adds(out, "{\"at\":");
    buf_json_str(out, ts);
    buf_adds(out, ",\"service\":");
    buf_json_str(out, w->action_service);
    buf_adds(out, ",\"trigger\":");
    buf_json_str(out, w->action_trigger);
    buf_adds(out, ",\"reason\":");
    buf_json_str(out, w->action_reason);
    buf_adds(out, "}}");
}

static void timer_closed(uv_handle_t *h)
{
    watchdog *w = h->data;
    w->timer_closed = true;
    if (w->take_inflight) return; /* on_take finishes the close */
    w->take_inflight = true;
    on_take(NULL, w);
}

void watchdog_close(watchdog *w, void (*cb)(void *ud), void *ud)
{
    if (w->closing) return;
    w->closing = true;
    w->close_cb = cb;
    w->close_ud = ud;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, timer_closed);
}
