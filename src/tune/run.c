/* run.c (tune) - the search: the lease taken, each variant checked (the
 * menu, the rules, the gate's dry run) and compared with its reference
 * in interleaved pairs, the winner re-verified, the host given back
 * (tune.h, docs/tune.md). */
#include "tune/tune.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/ctl.h"
#include "client/evwait.h"
#include "tune/ebench.h"
#include "tune/propose.h"
#include "tune/quality.h"
#include "tune/vcheck.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/exitcode.h"
#include "util/url.h"

static volatile int interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* every measurement of one configuration in this run */
typedef struct pool {
    char *key;
    double *obj, *p90;
    size_t n, cap;
    double mem_mb, start_sum;
    int starts;
} pool;

typedef struct trun {
    tune_opts *o;
    tune_result *res;
    tlink link;
    tune_strat st;
    tune_variant cur;
    bool cur_known;
    uint64_t seed;
    char tmpdir[64];
    pool *pools;
    size_t npools;
    tune_rule_in rule;
    tune_row *prior;       /* rows of the run resumed */
    size_t nprior;
    char *spec;            /* what a resumed run must match */
    char *hardware;
    vcheck vc;
    double t0, cmp_ms_sum;
    int ncmp;
    int fatal;             /* an exit code: the reference could not run, the daemon went away */
} trun;

static void say(const trun *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const trun *r, const char *fmt, ...)
{
    if (r->o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumod tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static pool *pool_of(trun *r, const tune_variant *v)
{
    buf k = BUF_INIT;
    variant_key(&r->o->space, v, &k);
    for (size_t i = 0; i < r->npools; i++)
        if (!strcmp(r->pools[i].key, k.p)) {
            buf_release(&k);
            return &r->pools[i];
        }
    r->pools = xrealloc(r->pools, (r->npools + 1) * sizeof *r->pools);
    pool *p = &r->pools[r->npools++];
    memset(p, 0, sizeof *p);
    p->key = buf_detach(&k);
    p->mem_mb = NAN;
    return p;
}

static void pool_add(pool *p, double obj, double p90)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->obj = xrealloc(p->obj, p->cap * sizeof *p->obj);
        p->p90 = xrealloc(p->p90, p->cap * sizeof *p->p90);
    }
    p->obj[p->n] = obj;
    p->p90[p->n++] = p90;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, size_t n)
{
    double *t = xcalloc(n ? n : 1, sizeof *t);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) t[k++] = v[i];
    qsort(t, k, sizeof *t, cmp_d);
    double m = !k ? NAN : k % 2 ? t[k / 2] : (t[k / 2 - 1] + t[k / 2]) / 2;
    free(t);
    return m;
}

static void pool_fill(const pool *p, tune_row *row)
{
    row->median = median(p->obj, p->n);
    row->p90 = median(p->p90, p->n);
    row->mem_peak_mb = p->mem_mb;
    row->start_ms = p->starts ? p->start_sum / p->starts : NAN;
}

/* GPU bytes of the service's footprint, MiB (NaN without one) */
static double footprint_mb(const cJSON *svc)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(svc, "footprint"),
                                                      "gpu_bytes");
    if (!cJSON_IsObject(g)) return NAN;
    double s = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, g) s += cJSON_IsNumber(it) ? it->valuedouble : 0;
    return s / 1048576.0;
}

/* Make v the running configuration, by a restart even when it runs
 * already, unless reuse (the quality check's eval may use what runs).
 * Every measurement follows a restart of its own, so that both sides of
 * a pair meet alike conditions: a process just started (its caches cold,
 * the daemon sampling its footprint beside it) and one that has run for
 * minutes are not alike, and reusing the running side would give one
 * configuration more of the one kind.  TSTART_READY, or why not. */
static tstart_kind ensure(trun *r, const tune_variant *v, bool reuse, char *why, size_t whylen)
{
    if (r->o->engine_bench) return TSTART_READY; /* each measurement is a llama-bench run of its own */
    if (reuse && r->cur_known && variant_eq(&r->cur, v)) return TSTART_READY;
    buf ov = BUF_INIT, k = BUF_INIT;
    variant_overrides_json(&r->o->space, v, &ov);
    variant_key(&r->o->space, v, &k);
    say(r, "starting %s", k.p);
    tstart s;
    tlink_restart(&r->link, ov.p, r->o->start_timeout_ms, &s);
    buf_release(&ov);
    buf_release(&k);
    r->cur_known = s.kind == TSTART_READY;
    r->cur = *v;
    if (s.kind == TSTART_READY) {
        pool *p = pool_of(r, v);
        double mb = footprint_mb(s.svc);
        if (isfinite(mb) && (!isfinite(p->mem_mb) || mb > p->mem_mb)) p->mem_mb = mb;
        p->start_sum += s.ms;
        p->starts++;
    } else {
        snprintf(why, whylen, "%s", s.msg);
    }
    cJSON_Delete(s.svc);
    return s.kind;
}

/* 0 measured, else the tstart_kind of why not */
static int measure(trun *r, const tune_variant *v, char *why, size_t whylen)
{
    tune_meas m;
    int rc;
    if (r->o->engine_bench) {
        buf ov = BUF_INIT;
        variant_overrides_json(&r->o->space, v, &ov);
        tune_ebench e = {.n_prompt = r->o->n_prompt, .n_gen = r->o->n_gen, .repetitions = 3,
                         .timeout_ms = (int64_t)(r->o->load.timeout_s * 1000), .obj = r->o->obj};
        rc = tune_ebench_measure(&r->link, &e, ov.p, &m, why, whylen);
        buf_release(&ov);
    } else {
        rc = tune_measure(&r->o->load, r->seed++, r->tmpdir, &interrupted, &m, why, whylen) ? TSTART_FAILED : 0;
    }
    if (!rc) pool_add(pool_of(r, v), m.obj, m.p90);
    return rc;
}

static void row_reason(tune_row *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void row_reason(tune_row *row, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    if (row->reason) {
        char *t = xasprintf("%s; %s", row->reason, s);
        free(row->reason);
        free(s);
        s = t;
    }
    row->reason = s;
}

/* The variant could not start or run: its outcome and why, with the
 * log's tail for a failure. */
static void variant_down(trun *r, tune_row *row, tstart_kind k, const char *why)
{
    if (k == TSTART_REFUSED) {
        row->outcome = TO_SKIPPED;
        row_reason(row, "the gate refused its start: %s", why);
        return;
    }
    if (k == TSTART_CANARY) {
        row->outcome = TO_UNSAFE;
        row_reason(row, "failed the canary: %s", why);
        return;
    }
    row->outcome = TO_FAILED;
    char *tail = r->o->engine_bench ? xstrdup("") : tlink_log_tail(&r->link, 5); /* llama-bench's is in why */
    for (char *p = tail; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    row_reason(row, "%s%s%s", why, *tail ? " | log: " : "", tail);
    free(tail);
}

static bool stop_now(trun *r)
{
    if (interrupted) {
        if (!r->res->stopped) r->res->stopped = xstrdup("interrupted (Ctrl-C or SIGTERM)");
        return true;
    }
    const char *lost = tlink_lost(&r->link);
    if (lost) {
        if (!r->res->stopped) r->res->stopped = xstrdup(lost);
        r->fatal = EXIT_REFUSED;
        return true;
    }
    return r->fatal != 0;
}

/* The pairs: the one running now first, then the other, alternating the
 * order from pair to pair (A B B A A B ...), so that a linear drift
 * cancels; each measurement after a restart of its own (ensure).
 * 0 measured; 1 the variant is down (row set); -1 stopped or the
 * reference could not run (r->fatal). */
static int pairs(trun *r, const tune_variant *var, const tune_variant *ref, tune_row *row, double *a, double *b)
{
    bool var_first = r->cur_known && variant_eq(&r->cur, var);
    char why[2048];
    for (int i = 0; i < r->o->rounds; i++) {
        for (int half = 0; half < 2; half++) {
            if (stop_now(r)) return -1;
            bool is_var = (half == 0) == var_first;
            const tune_variant *c = is_var ? var : ref;
            tstart_kind k = ensure(r, c, false, why, sizeof why);
            if (k != TSTART_READY && is_var) {
                variant_down(r, row, k, why);
                return 1;
            }
            if (k != TSTART_READY) {
                fprintf(stderr, "gpumod tune: the reference configuration did not start: %s\n", why);
                r->fatal = EXIT_REFUSED;
                return -1;
            }
            say(r, "measuring %s (pair %d of %d)", is_var ? row->key : row->ref_key, i + 1, r->o->rounds);
            int mk = measure(r, c, why, sizeof why);
            if (mk && stop_now(r)) return -1; /* Ctrl-C cut the measurement: not its failure */
            if (mk) {
                if (is_var) {
                    variant_down(r, row, (tstart_kind)mk, why);
                    return 1;
                }
                fprintf(stderr, "gpumod tune: measuring the reference failed: %s\n", why);
                r->fatal = EXIT_REFUSED;
                return -1;
            }
            pool *p = pool_of(r, c);
            (is_var ? b : a)[i] = p->obj[p->n - 1];
        }
        var_first = !var_first;
    }
    return 0;
}

/* The quality constraint: the suite's answers of the variant no worse
 * than the reference's (eval's compare); the reference's result is kept
 * per configuration. */
static void quality_check(trun *r, const tune_variant *var, const tune_variant *ref, tune_row *row)
{
    char why[2048];
    const tune_variant *both[2] = {ref, var};
    char *files[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        const pool *pp = pool_of(r, both[i]); /* may move r->pools: its index after */
        files[i] = xasprintf("%s/eval-%zu.json", r->tmpdir, (size_t)(pp - r->pools));
        if (i == 0 && access(files[0], R_OK) == 0) continue; /* this reference was evaluated already */
        tstart_kind sk = ensure(r, both[i], true, why, sizeof why);
        if (sk != TSTART_READY) {
            if (i == 1) variant_down(r, row, sk, why);
            else row_reason(row, "the quality check could not start the reference: %s", why);
            if (i == 0) row->outcome = TO_UNSAFE;
            goto out;
        }
        say(r, "evaluating %s on %s", i ? row->key : row->ref_key, r->o->quality);
        if (tune_eval_run(&r->o->load, r->o->quality, files[i], &interrupted, why, sizeof why)) {
            row->outcome = TO_UNSAFE;
            row_reason(row, "the quality check did not run: %s", why);
            unlink(files[i]);
            goto out;
        }
    }
    int w = tune_eval_compare(files[0], files[1], why, sizeof why);
    if (w != 0) {
        row->outcome = TO_UNSAFE;
        row_reason(row, w > 0 ? "quality: worse than its reference on %s (%s)" : "quality: %s%s",
                   w > 0 ? r->o->quality : "", why);
    } else {
        row_reason(row, "quality: no worse (%s)", why);
    }
    unlink(files[1]);
out:
    free(files[0]);
    free(files[1]);
}

/* One comparison: the row of var against ref. */
static int compare(trun *r, const tune_variant *var, const tune_variant *ref, tune_row *row)
{
    double a[64], b[64];
    int rc = pairs(r, var, ref, row, a, b);
    pool_fill(pool_of(r, var), row);
    if (rc) return rc;
    if (tune_decide(a, b, (size_t)r->o->rounds, &r->rule, &row->d) != 0) {
        row->outcome = TO_FAILED;
        row_reason(row, "the measurements cannot be judged (a value not finite)");
        return 1;
    }
    row->has_decision = true;
    row->outcome = row->d.outcome;
    if (r->o->max_mem_mb > 0 && row->mem_peak_mb > r->o->max_mem_mb) {
        row_reason(row, "its GPU footprint %.0f MiB is over --max-memory %.0f MiB (was %s)", row->mem_peak_mb,
                   r->o->max_mem_mb, tune_outcome_names[row->outcome]);
        row->outcome = TO_UNSAFE;
    }
    if (row->outcome == TO_IMPROVEMENT && r->o->quality) quality_check(r, var, ref, row);
    return 0;
}

static const tune_row *prior_row(const trun *r, const char *key, const char *ref)
{
    for (size_t i = 0; i < r->nprior; i++)
        if (!strcmp(r->prior[i].key, key) && !strcmp(r->prior[i].ref_key, ref)) return &r->prior[i];
    return NULL;
}

static void row_start(trun *r, tune_row *row, const tune_variant *var, const tune_variant *ref)
{
    buf var_l = BUF_INIT, val_l = BUF_INIT, k = BUF_INIT, rk = BUF_INIT;
    variant_label(&r->o->space, var, &var_l, &val_l);
    variant_key(&r->o->space, var, &k);
    variant_key(&r->o->space, ref, &rk);
    row->var = buf_detach(&var_l);
    row->val = buf_detach(&val_l);
    row->key = buf_detach(&k);
    row->ref_key = buf_detach(&rk);
    row->flagged = r->o->allow_traffic;
}

static void save_state(trun *r, bool done)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "v", 1);
    cJSON_AddStringToObject(s, "service", r->o->service);
    cJSON_AddStringToObject(s, "spec", r->spec);
    cJSON_AddBoolToObject(s, "done", done);
    cJSON *rows = cJSON_AddArrayToObject(s, "rows");
    for (size_t i = 0; i < r->res->n; i++)
        if (r->res->rows[i].outcome != TO_BASELINE) cJSON_AddItemToArray(rows, tune_row_json(&r->res->rows[i]));
    char *t = cJSON_PrintUnformatted(s);
    cJSON_Delete(s);
    tlink_save(&r->link, t);
    free(t);
}

/* Check, then compare (or take the row of the run resumed).  The row is
 * added to the result; its outcome is reported to the strategy. */
static void step(trun *r, const tune_variant *var, const tune_variant *ref, tune_outcome as)
{
    if (r->o->budget_s > 0 && r->ncmp) {
        double el = (clock_mono_ms_f() - r->t0) / 1000, per = r->cmp_ms_sum / r->ncmp / 1000;
        if (el + per > r->o->budget_s) {
            if (!r->res->stopped)
                r->res->stopped = xasprintf("the time budget of %.0f s: %.0f s spent, a comparison takes about "
                                            "%.0f s", r->o->budget_s, el, per);
            return;
        }
    }
    tune_row *row = tune_result_add(r->res);
    row_start(r, row, var, ref);
    const tune_row *pr = prior_row(r, row->key, row->ref_key);
    if (pr && as != TO_FINAL) {
        int seq = row->seq;
        tune_row_release(row);
        cJSON *j = tune_row_json(pr);
        tune_row_from_json(j, row); /* a deep copy */
        cJSON_Delete(j);
        row->seq = seq;
        row_reason(row, "resumed");
    } else if (vcheck_variant(&r->vc, &r->link, &r->o->space, var, row)) {
        double t = clock_mono_ms_f();
        if (compare(r, var, ref, row) < 0) { /* stopped half way: no row (--resume measures it again) */
            tune_row_release(row);
            r->res->n--;
            return;
        }
        r->cmp_ms_sum += clock_mono_ms_f() - t;
        r->ncmp++;
    }
    if (as == TO_FINAL) {
        r->res->confirmed = row->has_decision && row->d.outcome == TO_IMPROVEMENT;
        row_reason(row, r->res->confirmed ? "re-verified: an improvement again"
                                          : "not confirmed by the re-verification (%s)",
                   tune_outcome_names[row->has_decision ? row->d.outcome : row->outcome]);
        row->outcome = TO_FINAL;
    } else {
        strat_report(&r->st, var, row->outcome, row->has_decision ? row->d.gain : 0);
    }
    tune_print_row(r->o, row);
    save_state(r, false);
}

/* ---- the search ---- */

static void search(trun *r)
{
    tune_variant var, ref;
    if (r->o->strat != STRAT_PROPOSE) {
        while (!stop_now(r) && !(r->o->budget_s > 0 && r->res->stopped) && strat_next(&r->st, &var, &ref))
            step(r, &var, &ref, TO_NO_CHANGE);
        return;
    }
    for (int k = 0; k < r->o->max_props && !stop_now(r) && !r->res->stopped; k++) {
        tune_proposal p;
        propose_next(r->o, &r->st.inc, r->res, r->hardware, 120000, &p);
        if (p.kind == PROP_STOP) {
            say(r, "the proposer stops: %s", p.reason);
            break;
        }
        if (p.kind == PROP_CHANGE) {
            say(r, "the proposer: %s=%s (%s)", p.key, p.value, p.reason);
            size_t n0 = r->res->n;
            step(r, &p.v, &r->st.inc, TO_NO_CHANGE);
            if (r->res->n > n0 && p.reason[0]) row_reason(&r->res->rows[r->res->n - 1], "proposer: %s", p.reason);
            continue;
        }
        /* invalid or failed: logged as a SKIPPED row, never measured */
        tune_row *row = tune_result_add(r->res);
        row->var = xstrdup(p.key[0] ? p.key : "(proposal)");
        row->val = xstrdup(p.value[0] ? p.value : "-");
        row->key = xasprintf("proposal-%d", row->seq);
        buf ik = BUF_INIT;
        variant_key(&r->o->space, &r->st.inc, &ik);
        row->ref_key = buf_detach(&ik);
        row->outcome = TO_SKIPPED;
        row->reason = xasprintf("%s: %s", p.kind == PROP_INVALID ? "invalid proposal" : "no proposal", p.reason);
        tune_print_row(r->o, row);
        save_state(r, false);
    }
}

/* the configuration behind the run's rows, so that --resume takes only
 * rows of the same search */
static char *spec_of(const tune_opts *o)
{
    buf b = BUF_INIT;
    buf_printf(&b, "%s|%s|%s|%g%s|%g|%d|c%d|n%ld|p%ld|g%ld", o->service, strat_names[o->strat],
               tune_obj_names[o->obj], o->min_gain, o->min_gain_pct ? "%" : "", o->alpha, o->rounds,
               o->load.concurrency, o->load.requests, o->load.prompt_tokens, o->load.gen_tokens);
    for (size_t i = 0; i < o->space.n; i++) {
        buf_printf(&b, "|%s%s=", o->space.dims[i].env ? "env." : "", o->space.dims[i].key);
        for (size_t j = 0; j < o->space.dims[i].values.n; j++)
            buf_printf(&b, "%s%s", j ? "," : "", o->space.dims[i].values.v[j]);
    }
    return buf_detach(&b);
}

/* --resume: the rows of the last run of the same search, from the
 * daemon (GET /tune).  0, or an exit code after a message. */
static int resume_load(trun *r)
{
    char err[512];
    cJSON *j = tlink_get(&r->link, "/tune", err, sizeof err);
    if (!j) {
        fprintf(stderr, "gpumod tune: --resume: %s\n", err);
        return EXIT_DAEMON;
    }
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(j, "last");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(last, "state");
    const char *spec = jstr(st, "spec");
    int rc = 0;
    if (!spec || strcmp(spec, r->spec)) {
        fprintf(stderr, "gpumod tune: --resume: the daemon keeps no earlier run of this search (%s); give the "
                "same service, menu, strategy, objective and load as the run to resume, or leave --resume out\n",
                spec ? "the last run searched something else" : "no run is recorded");
        rc = EXIT_USAGE;
    } else {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(st, "rows"))
        {
            r->prior = xrealloc(r->prior, (r->nprior + 1) * sizeof *r->prior);
            if (tune_row_from_json(it, &r->prior[r->nprior]) == 0) r->nprior++;
        }
        say(r, "resuming: %zu comparisons of the earlier run are kept", r->nprior);
    }
    cJSON_Delete(j);
    return rc;
}

/* the host in one line for the proposer: each GPU's name, memory, compute
 * capability */
static char *hardware_of(const cJSON *j)
{
    buf b = BUF_INIT;
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "memory"), "gpus"))
    {
        buf_printf(&b, "%sGPU %s, %.0f MiB", b.len ? "; " : "", jstr(g, "name") ? jstr(g, "name") : "?",
                   jnum(g, "total_bytes", 0) / 1048576.0);
        if (jstr(g, "compute_capability")) buf_printf(&b, ", compute capability %s", jstr(g, "compute_capability"));
    }
    if (!b.len) buf_adds(&b, "no GPU reported");
    return buf_detach(&b);
}

typedef struct restore_wait {
    trun *r;
    int64_t deadline;
    char state[32];
} restore_wait;

static bool restored(void *ud, const char *ended)
{
    restore_wait *w = ud;
    buf p = BUF_INIT;
    buf_adds(&p, "/services/");
    url_query_escape(&p, w->r->o->service);
    char err[256];
    cJSON *s = tlink_get(&w->r->link, p.p, err, sizeof err);
    buf_release(&p);
    const char *st = jstr(s, "state");
    snprintf(w->state, sizeof w->state, "%s", st ? st : "?");
    bool settled = st && jnull(s, "overrides") && strcmp(st, "starting") && strcmp(st, "stopping");
    cJSON_Delete(s);
    return !s || settled || ended || clock_mono_ms() >= w->deadline;
}

/* the lease given back: the daemon restores the host; wait until the
 * service runs as configured again (or is down, as it was) */
static void give_back(trun *r)
{
    char err[512];
    if (tlink_release(&r->link, err, sizeof err)) {
        fprintf(stderr, "gpumod tune: releasing the lease: %s (it expires by itself within %lld s)\n", err,
                (long long)r->o->ttl_ms / 1000);
        return;
    }
    say(r, "lease released; the daemon restores '%s' as configured", r->o->service);
    restore_wait w = {.r = r, .deadline = clock_mono_ms() + r->o->start_timeout_ms};
    if (!restored(&w, NULL)) {
        buf q = BUF_INIT;
        buf_adds(&q, "service=");
        url_query_escape(&q, r->o->service);
        ev_wait(&r->link.paths, q.p, 1000, restored, &w);
        buf_release(&q);
    }
    say(r, "'%s' is %s", r->o->service, w.state);
}

/* the baseline's own row: its measurements over the whole run */
static void baseline_row(trun *r)
{
    tune_variant base = variant_base();
    tune_row *row = tune_result_add(r->res);
    row_start(r, row, &base, &base);
    row->outcome = TO_BASELINE;
    pool_fill(pool_of(r, &base), row);
    /* first in the log */
    tune_row t = *row;
    memmove(&r->res->rows[1], &r->res->rows[0], (r->res->n - 1) * sizeof *row);
    r->res->rows[0] = t;
    for (size_t i = 0; i < r->res->n; i++) r->res->rows[i].seq = (int)i;
}

/* the service as it runs when the lease is taken: ready as configured is
 * the baseline, already running (no restart for the first pair) */
static void running_now(trun *r)
{
    buf p = BUF_INIT;
    buf_adds(&p, "/services/");
    url_query_escape(&p, r->o->service);
    char err[256];
    cJSON *s = tlink_get(&r->link, p.p, err, sizeof err);
    buf_release(&p);
    const char *st = jstr(s, "state");
    if (st && !strcmp(st, "ready") && jnull(s, "overrides")) {
        r->cur = variant_base();
        r->cur_known = true;
    }
    cJSON_Delete(s);
}

static int run_init(trun *r, tune_opts *o, tune_result *res)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->res = res;
    r->seed = o->seed * 1000003u + 1;
    r->rule = (tune_rule_in){.higher_better = tune_obj_higher_better(o->obj), .alpha = o->alpha,
                             .min_gain = o->min_gain, .min_gain_pct = o->min_gain_pct};
    r->spec = spec_of(o);
    r->t0 = clock_mono_ms_f();
    res->started_ms = r->t0;
    snprintf(r->tmpdir, sizeof r->tmpdir, "/tmp/gpumod-tune-XXXXXX");
    if (!mkdtemp(r->tmpdir)) {
        fprintf(stderr, "gpumod tune: cannot make a directory under /tmp: %m\n");
        return EXIT_REFUSED;
    }
    if (strat_init(&r->st, o->strat, &o->space, o->max_passes, 4096)) {
        fprintf(stderr, "gpumod tune: the grid has %zu variants, more than 4096: use --strategy coord or fewer "
                "values\n", space_grid_size(&o->space));
        return EXIT_USAGE;
    }
    r->rule.m = strat_planned(&r->st, o->max_props);
    return 0;
}

static void run_free(trun *r)
{
    for (size_t i = 0; i < r->npools; i++) {
        free(r->pools[i].key);
        free(r->pools[i].obj);
        free(r->pools[i].p90);
    }
    for (size_t i = 0; i < r->npools; i++) { /* the references' eval results kept for reuse */
        char *f = xasprintf("%s/eval-%zu.json", r->tmpdir, i);
        unlink(f);
        free(f);
    }
    free(r->pools);
    for (size_t i = 0; i < r->nprior; i++) tune_row_release(&r->prior[i]);
    free(r->prior);
    free(r->spec);
    free(r->hardware);
    strat_release(&r->st);
    vcheck_release(&r->vc);
    tlink_free(&r->link);
    rmdir(r->tmpdir);
}

int tune_run(tune_opts *o, tune_result *res)
{
    trun r;
    int rc = run_init(&r, o, res);
    config_paths paths = {0};
    paths.config_dir = getenv("GPUMOD_CONFIG_DIR");
    paths.state_dir = getenv("GPUMOD_STATE_DIR");
    paths.socket = getenv("GPUMOD_SOCKET");
    tlink_init(&r.link, &paths, o->service);
    if (!rc && o->resume) rc = resume_load(&r);
    char err[1024];
    if (!rc && tlink_lease(&r.link, o->allow_traffic, o->ttl_ms, "null", err, sizeof err)) {
        fprintf(stderr, "gpumod tune: cannot take the lease on '%s': %s\n", o->service, err);
        rc = EXIT_REFUSED;
    }
    if (rc) {
        run_free(&r);
        return rc;
    }
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    char serr[256];
    cJSON *status = tlink_get(&r.link, "/status", serr, sizeof serr); /* the GPU, for the proposer and the rules */
    r.hardware = hardware_of(status);
    vcheck_init(&r.vc, o->service, status);
    cJSON_Delete(status);
    running_now(&r);
    if (o->engine_bench && tune_ebench_stop(&r.link, o->start_timeout_ms, err, sizeof err))
        fprintf(stderr, "gpumod tune: %s\n", err); /* llama-bench's gate counts it then */
    say(&r, "lease taken; %d comparisons planned at most, %d pairs each (alpha %.3g over them)", r.rule.m,
        o->rounds, o->alpha);
    tune_print_header(o);
    search(&r);
    if (!stop_now(&r) && strat_winner(&r.st, &res->winner)) {
        res->has_winner = true;
        tune_variant base = variant_base();
        say(&r, "re-verifying the winner against the baseline");
        step(&r, &res->winner, &base, TO_FINAL);
    }
    baseline_row(&r);
    save_state(&r, !res->stopped);
    give_back(&r);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    res->wall_s = (clock_mono_ms_f() - r.t0) / 1000;
    rc = r.fatal ? r.fatal : interrupted ? 130 : 0;
    run_free(&r);
    return rc;
}
