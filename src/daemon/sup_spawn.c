/* sup_spawn.c - a service's run (supervisor.h): the run files, spawning
 * through the runner, the output (the ring, the log watches, the
 * engine's log lines), readiness and health probes, measuring the
 * footprint, exits and systemd's respawns, and the restart policy.
 *
 * Readiness is a signal polled under a deadline: a health probe at
 * once, then at the waits of core/lifecycle.c's probe_wait_ms (short
 * near the expected end of the load), brought forward when the engine's
 * log says it is ready; startup_timeout ends the start.  A ready service
 * is probed every health_interval; health_failures in a row make it
 * unhealthy, and the restart policy (core/lifecycle.c restart_decide)
 * says whether and when it starts again. */
#include "daemon/sup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers/check.h"
#include "drivers/driver.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/slurp.h"

#define PROBE_FIRST_MS 5
#define PROBE_CAP_MS 500
#define PROBE_LOAD_DEADLINE_MS 2000
#define TAIL_LINES 10

static void probe_step(uv_timer_t *t);

/* ------------------------------------------------------------------ */
/* run files: <run_dir>/<id>.pid holding "pgid starttime" */

static char *run_file(sup *s, const char *id)
{
    return s->run_dir ? xasprintf("%s/%s.pid", s->run_dir, id) : NULL;
}

static void run_file_write(svc *v)
{
    char *p = run_file(v->s, v->id);
    if (!p) return;
    mkdir(v->s->run_dir, 0700);
    char *tmp = xasprintf("%s.new", p);
    char why[128];
    /* on the loop: a FIFO planted at tmp must fail, not wait for a reader */
    int fd = slurp_open_append(tmp, O_CREAT | O_TRUNC, 0600, why, sizeof why);
    FILE *f = fd >= 0 ? fdopen(fd, "we") : NULL;
    if (f) {
        fprintf(f, "%d %llu\n", (int)v->pgid, (unsigned long long)v->starttime);
        if (fclose(f) == 0 && rename(tmp, p) == 0) {
            free(tmp);
            free(p);
            return;
        }
        snprintf(why, sizeof why, "%s", strerror(errno));
    } else if (fd >= 0) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
    }
    log_warn("supervisor: cannot write run file '%s': %s", p, why);
    struct stat st; /* a leftover of ours goes; whatever else sits there stays */
    if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode)) unlink(tmp);
    free(tmp);
    free(p);
}

void sv_run_file_remove(svc *v)
{
    char *p = run_file(v->s, v->id);
    if (p) unlink(p);
    free(p);
}

/* ------------------------------------------------------------------ */
/* output */

void sv_on_output(const char *data, size_t len, void *ud)
{
    svc *v = ud;
    sup *s = v->s;
    if (v->log) logring_write(v->log, data, len);
    s->watch_iter++;
    for (sup_log_watch *w = s->watches; w; w = w->next)
        if (!w->dead && !strcmp(w->id, v->id)) w->cb(v->id, data, len, w->ud);
    s->watch_iter--;
    if (s->watch_iter == 0) {
        sup_log_watch **pp = &s->watches;
        while (*pp) {
            if ((*pp)->dead) {
                sup_log_watch *d = *pp;
                *pp = d->next;
                free(d->id);
                free(d);
            } else {
                pp = &(*pp)->next;
            }
        }
    }
    if (v->state != SVC_STARTING) return;
    unsigned bits = logscan_feed(&v->ls, data, len);
    if (bits & LOGSCAN_PROGRESS) v->progress = v->ls.progress_pct;
    if ((bits & LOGSCAN_READY) && v->timers) {
        /* the engine says it is ready: probe now instead of at the next
         * step (a probe already on its way is repeated at once should it
         * find the engine still loading: load_probed) */
        if (!v->ready_said) v->ready_said = clock_mono_ms();
        if (!v->probe) uv_timer_start(&v->t_probe, probe_step, 0, 0);
    }
}

/* The last lines of the output, redacted, as one string (caller frees):
 * real newlines and tabs kept (an API message shows the lines as lines;
 * the daemon's own log escapes them), other control bytes escaped. */
static char *log_tail(svc *v)
{
    if (!v->log) return xstrdup("");
    buf b = BUF_INIT;
    logring_tail(v->log, TAIL_LINES, &b);
    size_t n;
    char *red = redact_text(b.p, b.len, &n);
    buf_release(&b);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)red[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            buf_printf(&b, "\\x%02x", c);
        else
            buf_addc(&b, (char)c);
    }
    free(red);
    return buf_detach(&b);
}

/* ------------------------------------------------------------------ */
/* logs */

int sup_log_read(sup *s, const char *id, uint64_t after, size_t n_lines, buf *out, uint64_t *next)
{
    svc *v = sv_find(s, id);
    if (!v) return -1;
    if (!v->log) {
        if (next) *next = 0;
        return 0;
    }
    logring_read(v->log, after, n_lines, out, next);
    return 0;
}

int sup_run_tail(sup *s, const char *id, size_t n_lines, buf *out)
{
    svc *v = sv_find(s, id);
    if (!v) return -1;
    sup_svc_run_tail(v, n_lines, out);
    return 0;
}

void sup_svc_run_tail(const sup_svc *v, size_t n_lines, buf *out)
{
    if (!v->log || !v->ran) return;
    buf b = BUF_INIT;
    uint64_t next = 0;
    logring_read(v->log, UINT64_MAX, n_lines, &b, &next);
    uint64_t from = next - b.len, skip = from < v->run_from ? v->run_from - from : 0;
    if (skip < b.len) buf_add(out, b.p + skip, b.len - (size_t)skip);
    buf_release(&b);
}

sup_log_watch *sup_log_watch_add(sup *s, const char *id, sup_log_cb cb, void *ud)
{
    sup_log_watch *w = xcalloc(1, sizeof *w);
    w->id = xstrdup(id);
    w->cb = cb;
    w->ud = ud;
    w->next = s->watches;
    s->watches = w;
    return w;
}

void sup_log_watch_remove(sup *s, sup_log_watch *w)
{
    if (!w) return;
    if (s->watch_iter > 0) {
        w->dead = true;
        return;
    }
    for (sup_log_watch **pp = &s->watches; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            free(w->id);
            free(w);
            return;
        }
}

/* ------------------------------------------------------------------ */
/* readiness and health */

void sv_stop_probe(svc *v)
{
    if (v->probe) health_cancel(v->probe);
    v->probe = NULL;
    canary_cancel(v->canary);
    v->canary = NULL;
    if (v->timers) uv_timer_stop(&v->t_probe);
}

/* The footprint of a start that became ready.  Host: the summed RSS of
 * the process group.  Per GPU, how the figure is obtained (db.h
 * fp_gpu_how): NVML's per-process memory of the group's pids; where the
 * device has no such figure for them (NOT_AVAILABLE, or none listed) and
 * the admission counted it, a unified device's figure is the drop in
 * MemAvailable since the admission snapshot (one load at a time: the
 * start held the load slot) minus the RSS already counted, floored at 0,
 * and a discrete one's is the admitted bytes, which makes the footprint
 * partial.  Never a measured 0 that was not measured. */
static void measured(svc *v, const snapshot *snap)
{
    sup *s = v->s;
    /* one walk of /proc for the group's pids and RSS (a walk reads every
     * pid's stat: ~1-2 ms on a host with a few hundred processes) */
    pid_t pids[1024];
    size_t np = 0;
    uint64_t host = proctree_group_rss(NULL, v->pgid, pids, 1024, &np);
    int n = (int)np;
    footprint *f = &v->fp;
    memset(f, 0, sizeof *f);
    snprintf(f->hash, sizeof f->hash, "%s", v->run_hash);
    snprintf(f->service, sizeof f->service, "%s", v->id);
    f->measured_at_ms = sv_wall_ms();
    f->host_bytes = host;
    bool delta_used = false; /* the pool's drop is counted once, on the first unified device */
    buf why = BUF_INIT;      /* per device, for the event's reason and the stored detail */
    for (size_t g = 0; g < snap->ngpus && f->ngpu < HOST_MAX_GPUS; g++) {
        const gpu_dev *dev = &snap->gpus[g];
        uint64_t sum = 0;
        bool any = false;
        for (size_t i = 0; i < dev->nprocs; i++)
            for (int k = 0; k < n; k++)
                if ((pid_t)dev->procs[i].pid == pids[k] && dev->procs[i].used_bytes != UINT64_MAX) {
                    sum += dev->procs[i].used_bytes;
                    any = true;
                }
        bool admitted = false;
        uint64_t adm_bytes = 0;
        for (size_t a = 0; v->has_admitted && a < v->admitted.ngpu; a++)
            if (v->admitted.gpu[a].index == dev->index) {
                admitted = true;
                adm_bytes = v->admitted.gpu[a].bytes;
            }
        if (!any && !admitted) continue;
        size_t j = f->ngpu++;
        f->gpu[j].index = dev->index;
        if (any) {
            f->gpu[j].bytes = sum;
            f->gpu[j].how = FP_GPU_NVML;
            buf_printf(&why, ", gpu %d %llu MiB (NVML per-process)", dev->index, (unsigned long long)(sum >> 20));
        } else if (dev->unified && !delta_used && v->adm_meminfo_ok && snap->host.meminfo_ok) {
            uint64_t before = v->adm_mem_available, after = snap->host.mem_available;
            uint64_t drop = before > after ? before - after : 0;
            f->gpu[j].bytes = drop > host ? drop - host : 0;
            f->gpu[j].how = FP_GPU_UNIFIED;
            delta_used = true;
            buf_printf(&why,
                       ", gpu %d %llu MiB (unified: MemAvailable delta: %llu MiB at admission - %llu MiB at ready"
                       " - %llu MiB RSS)",
                       dev->index, (unsigned long long)(f->gpu[j].bytes >> 20), (unsigned long long)(before >> 20),
                       (unsigned long long)(after >> 20), (unsigned long long)(host >> 20));
        } else {
            f->gpu[j].bytes = adm_bytes;
            f->gpu[j].how = FP_GPU_ADMITTED;
            buf_printf(&why, ", gpu %d %llu MiB (admitted: %s)", dev->index, (unsigned long long)(adm_bytes >> 20),
                       !dev->unified        ? "no per-process figure"
                       : delta_used         ? "unified, the pool's drop is counted on another device"
                                            : "unified, MemAvailable unreadable");
        }
    }
    snprintf(f->detail, sizeof f->detail, "%s%s", footprint_partial(f) ? "partial: " : "",
             why.len > 2 ? why.p + 2 : "no GPU");
    v->has_fp = true;
    char err[256];
    if (s->env.st && v->run_hash[0] && strcmp(v->run_hash, RUN_HASH_OLDER) != 0 &&
        store_footprint_put(s->env.st, f, err, sizeof err) != 0)
        log_warn("supervisor: '%s': cannot store the footprint: %s", v->id, err);
    buf d = BUF_INIT;
    buf_printf(&d, "{\"host_bytes\":%llu,\"gpu_bytes\":{", (unsigned long long)f->host_bytes);
    for (size_t g = 0; g < f->ngpu; g++)
        buf_printf(&d, "%s\"%d\":%llu", g ? "," : "", f->gpu[g].index, (unsigned long long)f->gpu[g].bytes);
    buf_adds(&d, "},\"gpu_how\":{");
    for (size_t g = 0; g < f->ngpu; g++)
        buf_printf(&d, "%s\"%d\":\"%s\"", g ? "," : "", f->gpu[g].index, fp_gpu_how_names[f->gpu[g].how]);
    buf_printf(&d, "},\"partial\":%s,\"detail\":", footprint_partial(f) ? "true" : "false");
    buf_json_str(&d, f->detail);
    if (v->adm_meminfo_ok)
        buf_printf(&d, ",\"admission_mem_available_bytes\":%llu", (unsigned long long)v->adm_mem_available);
    else
        buf_adds(&d, ",\"admission_mem_available_bytes\":null");
    if (snap->host.meminfo_ok)
        buf_printf(&d, ",\"ready_mem_available_bytes\":%llu", (unsigned long long)snap->host.mem_available);
    else
        buf_adds(&d, ",\"ready_mem_available_bytes\":null");
    buf_printf(&d, ",\"load_ms\":%lld,\"config_hash\":", (long long)v->load_ms);
    buf_json_str(&d, v->run_hash);
    buf_adds(&d, "}");
    char *words = xasprintf("measured %llu MiB host over %d process(es)%s%s", (unsigned long long)(host >> 20), n,
                            why.p ? why.p : "", footprint_partial(f) ? " (partial)" : "");
    sv_emit(s, v->id, "footprint", NULL, NULL, words, d.p);
    free(words);
    buf_release(&why);
    buf_release(&d);
    sv_release_reservation(v);
    sv_end_start(v, "ready", SUP_OK, NULL);
}

static void health_tick(svc *v);

static void became_ready(svc *v)
{
    v->load_ms = (v->healthy_mono ? v->healthy_mono : clock_mono_ms()) - v->spawn_mono;
    v->healthy_mono = 0;
    v->expect_load_ms = v->load_ms;
    uv_timer_stop(&v->t_start);
    if (v->h) v->pid = v->s->run->pid(v->h); /* the engine, for the exit event and the JSON */
    v->fails = 0;
    v->last_ok_ms = sv_wall_ms();
    v->progress = 100;
    char words[64];
    snprintf(words, sizeof words, "ready after %lld ms", (long long)v->load_ms);
    sv_feed(v, EV_READY, words);
    if (v->state != SVC_READY) return;
    health_tick(v);
    sv_slots_after_ready(v);
    sv_take(v, measured);
}

/* The canary's verdict, as an event (kind canary) and, failed, the
 * start's failure: no restart (the table's EV_CANARY_FAILED is sticky). */
static void canary_done(const canary_report *r, void *ud)
{
    svc *v = ud;
    v->canary = NULL;
    v->last_canary = *r;
    v->has_canary = true;
    v->canary_at_ms = sv_wall_ms();
    buf d = BUF_INIT;
    buf_printf(&d, "{\"ok\":%s,\"ms\":%lld,\"sent\":%d,\"passed\":%d,\"embeddings\":%s,\"prompt\":",
               r->ok ? "true" : "false", (long long)r->ms, r->sent, r->passed, v->canary_embed ? "true" : "false");
    buf_json_str(&d, r->prompt);
    buf_adds(&d, ",\"answer\":");
    buf_json_str(&d, r->sample);
    buf_adds(&d, ",\"why\":");
    buf_json_str_or_null(&d, r->ok ? NULL : r->why);
    buf_addc(&d, '}');
    char words[400];
    if (r->ok)
        snprintf(words, sizeof words, "canary passed: %d of %d answers right in %lld ms", r->passed, r->sent,
                 (long long)r->ms);
    else
        snprintf(words, sizeof words, "canary failed after %lld ms: %s", (long long)r->ms, r->why);
    sv_emit(v->s, v->id, "canary", NULL, NULL, words, d.p);
    buf_release(&d);
    if (r->ok) {
        became_ready(v);
        return;
    }
    char *tail = log_tail(v);
    char *msg = xasprintf("'%s' failed its canary (%s; answer '%s'): it is not restarted, a person must start it; "
                          "log tail:\n%s",
                          v->id, r->why, r->sample, tail);
    sv_set_pending(v, SUP_START_FAILED, msg);
    sv_feed(v, EV_CANARY_FAILED, r->why);
    free(tail);
    free(msg);
}

/* The health check answered 200: the canary runs before the service
 * counts as ready (it still holds the load slot; startup_timeout bounds
 * it too). */
static void canary_begin(svc *v)
{
    uv_timer_stop(&v->t_probe);
    v->healthy_mono = clock_mono_ms();
    int64_t left = v->startup_timeout_ms - (v->healthy_mono - v->spawn_mono);
    canary_spec sp = {.host = v->host,
                      .port = v->port,
                      .embed = v->canary_embed,
                      .prompt = v->canary_prompt,
                      .expect = v->canary_expect,
                      .max_tokens = v->canary_max_tokens,
                      .timeout_ms = left > 1000 ? left : 1000};
    sv_emit(v->s, v->id, "canary", NULL, NULL,
            v->canary_embed ? "healthy: the canary checks two embeddings" : "healthy: the canary asks its prompts",
            NULL);
    v->canary = canary_start(v->s->env.loop, &sp, canary_done, v);
}

/* The wait before the next probe of a loading engine (probe_wait_ms,
 * core/lifecycle.h: short near the load's end). */
static int64_t probe_wait(const svc *v)
{
    int64_t now = clock_mono_ms();
    return probe_wait_ms(v->probe_delay, now - v->spawn_mono, v->expect_load_ms,
                         v->ready_said ? now - v->ready_said : -1);
}

/* A probe's ud is its svc (nothing to free when it is cancelled); gen
 * says whether the answer is still wanted. */
static void load_probed(int status, const char *err, void *ud)
{
    svc *v = ud;
    if (v->probe_gen != v->gen) return;
    v->probe = NULL;
    if (v->state != SVC_STARTING || v->canary) return;
    if (status == 200 && v->pgid > 0) {
        if (v->canary_on)
            canary_begin(v);
        else
            became_ready(v);
        return;
    }
    if (status == 200) /* a unit's main pid is not known yet: the footprint would have no group */
        snprintf(v->probe_err, sizeof v->probe_err, "status 200, main pid not known yet");
    else if (status)
        snprintf(v->probe_err, sizeof v->probe_err, "status %d", status);
    else
        snprintf(v->probe_err, sizeof v->probe_err, "%s", err ? err : "no answer");
    v->probe_delay = v->probe_delay * 2 > PROBE_CAP_MS ? PROBE_CAP_MS : v->probe_delay * 2;
    uv_timer_start(&v->t_probe, probe_step, (uint64_t)probe_wait(v), 0);
}

static void ready_probed(int status, const char *err, void *ud);

static void fail_spawn(svc *v, const char *msg);

static void probe_step(uv_timer_t *t)
{
    svc *v = t->data;
    if (v->probe || v->canary) return; /* the canary decides the rest of this load */
    char e[256];
    bool loading = v->state == SVC_STARTING;
    int64_t deadline = loading ? PROBE_LOAD_DEADLINE_MS : (v->health_interval_ms < 5000 ? v->health_interval_ms : 5000);
    v->probe_gen = v->gen;
    v->probe = health_get(v->s->env.loop, v->host, v->port, v->health_path, deadline,
                          loading ? load_probed : ready_probed, v, e, sizeof e);
    if (v->probe) return;
    /* admission checked the host; should it still be unusable, say so now
     * instead of holding the load slot until startup_timeout */
    char *m = xasprintf("cannot probe the health of '%s': %s", v->id, e);
    log_warn("supervisor: %s", m);
    if (loading)
        fail_spawn(v, m);
    else if (v->state == SVC_READY || v->state == SVC_UNHEALTHY)
        ready_probed(0, m, v);
    free(m);
}

static void health_tick(svc *v)
{
    if (v->driver == DRV_REMOTE) return;
    uv_timer_start(&v->t_probe, probe_step, (uint64_t)v->health_interval_ms, 0);
}

static void ready_probed(int status, const char *err, void *ud)
{
    svc *v = ud;
    if (v->probe_gen != v->gen) return;
    v->probe = NULL;
    if (v->state != SVC_READY && v->state != SVC_UNHEALTHY) return;
    if (status == 200) {
        v->fails = 0;
        v->last_ok_ms = sv_wall_ms();
        sv_feed(v, EV_HEALTH_OK, "health probe answered 200");
    } else {
        v->fails++;
        char why[200];
        if (status)
            snprintf(why, sizeof why, "status %d", status);
        else
            snprintf(why, sizeof why, "%s", err ? err : "no answer");
        log_info("supervisor: '%s': health probe %lld/%lld failed: %s", v->id, (long long)v->fails,
                 (long long)v->health_failures, why);
        if (v->fails >= v->health_failures) {
            char words[320];
            snprintf(words, sizeof words, "%lld health probes in a row failed (last: %s)", (long long)v->fails, why);
            v->fails = 0;
            sv_feed(v, EV_HEALTH_FAILED, words);
            return;
        }
    }
    if (v->state == SVC_READY) health_tick(v);
}

static void start_timed_out(uv_timer_t *t)
{
    svc *v = t->data;
    if (v->state != SVC_STARTING || !v->h) return;
    char *tail = log_tail(v);
    const char *last = v->canary ? "healthy, the canary still waiting for an answer"
                       : v->probe_err[0] ? v->probe_err
                                         : "none";
    char *msg = xasprintf("'%s' was not ready after startup_timeout %lld ms (last probe: %s); log tail:\n%s", v->id,
                          (long long)v->startup_timeout_ms, last, tail);
    sv_set_pending(v, SUP_START_FAILED, msg);
    char words[96];
    snprintf(words, sizeof words, "not ready after %lld ms", (long long)v->startup_timeout_ms);
    sv_feed(v, EV_START_TIMEOUT, words);
    free(tail);
    free(msg);
}

/* ------------------------------------------------------------------ */
/* exits */

void sv_on_exit_cb(int code, int sig, void *ud)
{
    svc *v = ud;
    sup *s = v->s;
    v->exited = true;
    v->has_exit = true;
    v->exit_code = code;
    v->exit_sig = sig;
    v->exit_ms = sv_wall_ms();
    char fixed[128], cs[16] = "null", ss[16] = "null";
    if (code >= 0) snprintf(cs, sizeof cs, "%d", code);
    if (sig) snprintf(ss, sizeof ss, "%d", sig);
    snprintf(fixed, sizeof fixed, "{\"code\":%s,\"signal\":%s,\"pid\":%d}", cs, ss, (int)(v->pid ? v->pid : v->pgid));
    char words[640];
    const char *why = s->run->end_reason ? s->run->end_reason(v->h, &v->end_failed) : NULL;
    if (!why) v->end_failed = false;
    bool detached = s->run->detached && s->run->detached(v->h);
    if (why && sig)
        snprintf(words, sizeof words, "killed by signal %d (%s): %s", sig, strsignal(sig), why);
    else if (why && code >= 0)
        snprintf(words, sizeof words, "exited with code %d: %s", code, why);
    else if (why)
        snprintf(words, sizeof words, "%s", why);
    else if (sig)
        snprintf(words, sizeof words, "killed by signal %d (%s)", sig, strsignal(sig));
    else
        snprintf(words, sizeof words, "exited with code %d", code);
    sv_emit(s, v->id, "exit", NULL, NULL, words, fixed);
    v->exit_told = false;
    if (detached) {
        /* the unit runs on (systemd's bus went): its processes are not
         * ours to wait for nor to signal */
        sv_run_file_remove(v);
        v->pgid = v->pid = 0;
    }

    if (v->killing) {
        sv_kill_helper_exited(v);
        return;
    }
    if (v->state == SVC_STARTING) {
        char *tail = log_tail(v);
        char *msg = xasprintf("'%s' %s during load; log tail:\n%s", v->id, words, tail);
        sv_set_pending(v, SUP_START_FAILED, msg);
        char w2[700];
        snprintf(w2, sizeof w2, "%s during load", words);
        sv_feed(v, EV_EXITED, w2);
        free(tail);
        free(msg);
        return;
    }
    if (v->state == SVC_READY || v->state == SVC_UNHEALTHY || v->state == SVC_SLEEPING) {
        /* the helper killed and reaped what was left of the group before
         * it exited (docs/exec.md): the process is over */
        v->gen++;
        sv_stop_probe(v);
        if (v->slot) /* it exited while its footprint was being measured */
            sv_end_start(v, "failed", SUP_START_FAILED, "exited right after it became ready");
        s->run->close(v->h);
        v->h = NULL;
        sv_run_file_remove(v);
        v->pgid = v->pid = 0;
        char w2[700];
        snprintf(w2, sizeof w2, "%s while %s", words, svc_state_names[v->state]);
        sv_feed(v, EV_EXITED, w2);
        return;
    }
    /* failed already, or down: nothing else to do */
}

/* A runner that owns restarts (systemd): the main process changed. */
void sv_loading_again(svc *v)
{
    v->spawn_mono = clock_mono_ms();
    v->probe_err[0] = 0;
    v->progress = -1;
    logscan_init(&v->ls, v->driver);
    v->ready_said = 0;
    sv_ensure_timers(v);
    uv_timer_start(&v->t_start, start_timed_out, (uint64_t)v->startup_timeout_ms, 0);
    v->probe_delay = PROBE_FIRST_MS;
    uv_timer_start(&v->t_probe, probe_step, PROBE_FIRST_MS, 0);
}

void sv_on_respawn_cb(pid_t pid, int64_t restarts, int code, int sig, void *ud)
{
    svc *v = ud;
    sup *s = v->s;
    if (v->killing) {
        if (pid > 0) v->pgid = s->run->pgid(v->h);
        return;
    }
    if (pid > 0) {
        v->exit_told = false;
        v->pid = pid;
        v->pgid = s->run->pgid(v->h);
        if (v->pgid <= 0) v->pgid = pid;
        v->starttime = proctree_starttime(NULL, v->pgid);
        run_file_write(v);
        if (restarts == 0) return; /* the first main process of this start */
        char words[128];
        snprintf(words, sizeof words, "systemd restarted it: main pid %d (NRestarts +%lld)", (int)pid,
                 (long long)restarts);
        if (v->state != SVC_STARTING) { /* the exit went unseen between two reads */
            v->gen++;
            sv_stop_probe(v);
            sv_feed(v, EV_RESPAWNED, words);
        }
        sv_loading_again(v);
        return;
    }
    /* the main process exited: systemd restarts the unit (restarts > 0)
     * or decides still (restarts < 0: other processes of the unit linger,
     * it deactivates; the restart or the end follows) */
    char fixed[128], cs[16] = "null", ss[16] = "null", words[160];
    if (code >= 0) snprintf(cs, sizeof cs, "%d", code);
    if (sig) snprintf(ss, sizeof ss, "%d", sig);
    snprintf(fixed, sizeof fixed, "{\"code\":%s,\"signal\":%s,\"pid\":%d}", cs, ss, (int)(v->pid ? v->pid : v->pgid));
    if (sig)
        snprintf(words, sizeof words, "killed by signal %d (%s)", sig, strsignal(sig));
    else
        snprintf(words, sizeof words, "exited with code %d", code);
    if (!v->exit_told) {
        v->has_exit = true;
        v->exit_code = code;
        v->exit_sig = sig;
        v->exit_ms = sv_wall_ms();
        sv_emit(s, v->id, "exit", NULL, NULL, words, fixed);
    }
    if (restarts < 0) {
        v->exit_told = true;
        sv_run_file_remove(v);
        v->pgid = v->pid = 0;
        v->gen++;
        sv_stop_probe(v);
        if (v->slot && v->state == SVC_READY)
            sv_end_start(v, "failed", SUP_START_FAILED, "exited right after it became ready");
        if (v->timers) uv_timer_stop(&v->t_start);
        char dw[240];
        snprintf(dw, sizeof dw, "%s; the unit deactivates (its other processes end): systemd restarts it or gives up",
                 words);
        sv_feed(v, EV_RESPAWNED, dw);
        return;
    }
    v->exit_told = false;
    char data[160], rw[200];
    snprintf(data, sizeof data, "{\"attempt\":%lld,\"by\":\"systemd\"}", (long long)restarts);
    snprintf(rw, sizeof rw, "%s; systemd restarts it (restart %lld, Restart=on-failure)", words, (long long)restarts);
    sv_emit(s, v->id, "restart", NULL, NULL, rw, data);
    v->attempt = restarts;
    sv_run_file_remove(v);
    v->pgid = v->pid = 0;
    v->gen++;
    sv_stop_probe(v);
    if (v->slot && v->state == SVC_READY) /* it exited while its footprint was being measured */
        sv_end_start(v, "failed", SUP_START_FAILED, "exited right after it became ready");
    if (v->timers) uv_timer_stop(&v->t_start); /* the new main process gets its own startup_timeout */
    sv_feed(v, EV_RESPAWNED, rw);
}

/* ------------------------------------------------------------------ */
/* spawning */

static void fail_spawn(svc *v, const char *msg)
{
    sv_set_pending(v, SUP_START_FAILED, msg);
    sv_feed(v, EV_EXITED, msg); /* starting -> failed; the kill finds nothing and ends the start */
}

void sv_copy_running(svc *v, const preset *p, const settings *st)
{
    v->driver = p->driver;
    v->run_ctx = p->context_size > 0 ? p->context_size : 0;
    sv_set_str(&v->host, driver_host(p));
    v->port = (int)p->port;
    sv_set_str(&v->health_path, driver_health_path(p));
    v->startup_timeout_ms = p->startup_timeout_ms > 0 ? p->startup_timeout_ms : st->supervisor.startup_timeout_ms;
    v->stop_timeout_ms = st->supervisor.stop_timeout_ms;
    v->health_interval_ms = st->supervisor.health_interval_ms > 0 ? st->supervisor.health_interval_ms : 5000;
    v->health_failures = st->supervisor.health_failures > 0 ? st->supervisor.health_failures : 1;
    v->verify_ms = st->memory.verify_freed_timeout_ms > 0 ? st->memory.verify_freed_timeout_ms : 60000;
    const restart_policy *pr = &p->restart, *sr = &st->supervisor.restart;
    v->pol.max_restarts = pr->max_restarts >= 0 ? pr->max_restarts : sr->max_restarts;
    v->pol.window_ms = pr->window_ms >= 0 ? pr->window_ms : sr->window_ms;
    v->pol.backoff_initial_ms = pr->backoff_initial_ms >= 0 ? pr->backoff_initial_ms : sr->backoff_initial_ms;
    v->pol.backoff_max_ms = pr->backoff_max_ms >= 0 ? pr->backoff_max_ms : sr->backoff_max_ms;
    v->canary_on = p->canary.enabled && p->driver != DRV_REMOTE;
    sv_set_str(&v->canary_prompt, p->canary.prompt);
    sv_set_str(&v->canary_expect, p->canary.expect);
    v->canary_max_tokens = p->canary.max_tokens;
}

void sv_open_log(svc *v, const settings *st)
{
    if (v->log) return;
    const char *dir = st->log_dir;
    char *d = dir ? xstrdup(dir) : xasprintf("%s/logs", st->state_dir ? st->state_dir : ".");
    mkdir(d, 0750);
    char *path = xasprintf("%s/%s.log", d, v->id);
    v->log = logring_new(path, st->supervisor.log_max_mb * 1024 * 1024, st->supervisor.log_keep);
    if (logring_error(v->log)[0]) log_warn("supervisor: '%s': %s", v->id, logring_error(v->log));
    free(path);
    free(d);
}

void sv_spawn_it(svc *v, const preset *p)
{
    sup *s = v->s;
    const settings *st = sv_set_of(s);
    char err[512];
    launch l = LAUNCH_INIT;
    if (driver_launch(p, st, &l, err, sizeof err) != 0) {
        char *m = xasprintf("cannot build the command of '%s': %s", v->id, err);
        fail_spawn(v, m);
        free(m);
        return;
    }
    char *bin = find_program(l.argv.v[0]);
    if (!bin) {
        char *m = xasprintf("cannot start '%s': program '%s' not found in PATH", v->id, l.argv.v[0]);
        fail_spawn(v, m);
        free(m);
        launch_release(&l);
        return;
    }
    free(l.argv.v[0]);
    l.argv.v[0] = bin;
    v->canary_embed = driver_argv_embeds(&l.argv);
    sv_slots_dir(v, p);

    sv_open_log(v, st);
    v->ran = true;
    v->run_from = v->log ? logring_end(v->log) : 0;
    logscan_init(&v->ls, p->driver);
    v->ready_said = 0;
    v->progress = -1;
    v->exited = false;
    v->probe_err[0] = 0;
    runner_spec rs = {.argv = &l.argv, .env = &l.env, .cwd = l.cwd, .id = v->id,
                      .on_output = sv_on_output, .on_exit = sv_on_exit_cb,
                      .on_respawn = s->run->owns_restarts ? sv_on_respawn_cb : NULL, .ud = v};
    v->h = s->run->spawn(s->run, &rs, err, sizeof err);
    if (!v->h) {
        fail_spawn(v, err);
        launch_release(&l);
        return;
    }
    v->pgid = s->run->pgid(v->h);
    v->pid = v->pgid;
    v->starttime = proctree_starttime(NULL, v->pgid);
    v->spawn_mono = clock_mono_ms();
    run_file_write(v);

    strv shown = STRV_INIT;
    strv_copy(&shown, &l.argv);
    redact_argv(&shown);
    for (size_t i = 0; i < shown.n; i++) { /* "sh -c '... HF_TOKEN=x ...'", "-H 'Authorization: Bearer x'" */
        char *t = redact_text(shown.v[i], strlen(shown.v[i]), NULL);
        free(shown.v[i]);
        shown.v[i] = t;
    }
    buf d = BUF_INIT;
    buf_printf(&d, "{\"pid\":%d,\"pgid\":%d,\"argv\":[", (int)v->pgid, (int)v->pgid);
    for (size_t i = 0; i < shown.n; i++) {
        if (i) buf_addc(&d, ',');
        buf_json_str(&d, shown.v[i]);
    }
    buf_adds(&d, "],\"origin\":");
    buf_json_str(&d, v->origin);
    buf_adds(&d, "}");
    char words[96];
    if (v->pgid > 0)
        snprintf(words, sizeof words, "spawned process group %d", (int)v->pgid);
    else /* a unit: its main pid comes once systemd ran ExecStartPre */
        snprintf(words, sizeof words, "started as a %s unit", s->run->name);
    sv_emit(s, v->id, "spawn", NULL, NULL, words, d.p);
    buf_release(&d);
    strv_release(&shown);
    launch_release(&l);

    uv_timer_start(&v->t_start, start_timed_out, (uint64_t)v->startup_timeout_ms, 0);
    v->probe_delay = PROBE_FIRST_MS;
    uv_timer_start(&v->t_probe, probe_step, PROBE_FIRST_MS, 0);
}

/* ------------------------------------------------------------------ */
/* restarts */

/* The restart timer is cancelled (a stop, the watchdog, shutdown): a
 * start that joined while the service was unhealthy waits on that restart
 * and is answered here, or never. */
void sv_cancel_restart(svc *v, sup_outcome res, const char *msg)
{
    if (v->timers) uv_timer_stop(&v->t_restart);
    v->next_restart_ms = 0;
    if (v->starts && (v->state == SVC_DOWN || v->state == SVC_FAILED) && !v->killing)
        sv_end_start(v, "cancelled", res, msg);
}

void sv_cancel_restart_for(svc *v, const char *by)
{
    if (v->s->shutting) {
        sv_cancel_restart(v, SUP_SHUTTING_DOWN, "the daemon is shutting down");
        return;
    }
    char *m = xasprintf("the restart of '%s' was cancelled by %s", v->id, by);
    sv_cancel_restart(v, SUP_CONFLICT, m);
    free(m);
}

static void restart_fire(uv_timer_t *t)
{
    svc *v = t->data;
    v->next_restart_ms = 0;
    if (v->state != SVC_DOWN || v->s->shutting) {
        sv_cancel_restart_for(v, "a state change");
        return;
    }
    sv_do_start(v, "restart", NULL); /* the overrides of the run it restarts */
}

void sv_policy_restart(svc *v)
{
    restart_decision d;
    restart_decide(&v->pol, &v->hist, clock_mono_ms(), &d);
    if (!d.restart || v->s->shutting) {
        char words[160];
        snprintf(words, sizeof words, "restarts exhausted: %lld in %lld ms (max_restarts %lld)", (long long)d.in_window,
                 (long long)v->pol.window_ms, (long long)v->pol.max_restarts);
        if (v->s->shutting) snprintf(words, sizeof words, "daemon shutting down: no restart");
        if (!v->s->shutting) sv_feed(v, EV_GIVE_UP, words);
        /* a start waiting on the restart (joined while unhealthy) ends here */
        if (v->starts) {
            if (v->s->shutting)
                sv_end_start(v, "cancelled", SUP_SHUTTING_DOWN, "the daemon is shutting down");
            else
                sv_end_start(v, "failed", SUP_START_FAILED, words);
        }
        return;
    }
    v->attempt++;
    char data[160], words[96];
    snprintf(data, sizeof data, "{\"attempt\":%lld,\"in_window\":%lld,\"delay_ms\":%lld}", (long long)v->attempt,
             (long long)d.in_window + 1, (long long)d.delay_ms);
    snprintf(words, sizeof words, "restart %lld in %lld ms", (long long)v->attempt, (long long)d.delay_ms);
    sv_emit(v->s, v->id, "restart", NULL, NULL, words, data);
    v->next_restart_ms = sv_wall_ms() + d.delay_ms;
    sv_ensure_timers(v);
    uv_timer_start(&v->t_restart, restart_fire, (uint64_t)d.delay_ms, 0);
}

