/* api_ebench.c - the engine bench route (api_ebench.h).
 *
 * The request is checked at once (a strict body, the preset, llama-bench
 * beside llama-server); then a fresh snapshot is taken off the loop, the
 * preset looked up again (a reload may have come between), the overrides
 * applied with context_size n_prompt + n_gen, and the gate asked exactly
 * as for a start of that need, counting everything that runs (the tuned
 * service too: its caller stops it first).  Admitted, llama-bench runs in
 * libuv's thread pool through run_capture: argv built here, never taken
 * from the client; its own process group, killed at the deadline; stdout
 * and stderr apart, each capped at 1 MiB.  An `engine_bench` event marks
 * each run's start (data.argv) and end, and each refusal. */
#include "daemon/api_ebench.h"
#include "daemon/reply.h"
#include "config/overrides.h"
#include "core/policy.h"
#include "daemon/hostmon.h"
#include "daemon/need.h"
#include "daemon/verdict.h"
#include "drivers/llamabench.h"
#include "util/clock.h"
#include "util/jstrict.h"
#include "util/log.h"
#include "util/run.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define EB_KEYS "overrides, n_prompt, n_gen, repetitions, timeout_ms"
#define EB_OUT_MAX ((size_t)1 << 20)
#define EB_TAIL 2048

typedef struct eb_job {
    uv_work_t work;
    gpumodd *d;
    srv_conn *c;
    char *id;
    overrides ov;
    lbench_args a;
    int64_t timeout_ms;
    strv argv, env;
    buf out, errout;
    run_result res;
    char err[512];
} eb_job;

/* the one run in flight (NULL: none) */
static eb_job *running;

static void job_free(eb_job *j)
{
    if (running == j) running = NULL;
    free(j->id);
    overrides_release(&j->ov);
    strv_release(&j->argv);
    strv_release(&j->env);
    buf_release(&j->out);
    buf_release(&j->errout);
    free(j);
}

static void argv_json(buf *b, const strv *argv)
{
    buf_addc(b, '[');
    for (size_t i = 0; i < argv->n; i++) {
        if (i) buf_addc(b, ',');
        buf_json_str(b, argv->v[i]);
    }
    buf_addc(b, ']');
}

/* An engine_bench event: data {"what", more...}. */
static void eb_event(eb_job *j, const char *what, const char *reason, const char *more)
{
    buf data = BUF_INIT;
    buf_adds(&data, "{\"what\":");
    buf_json_str(&data, what);
    buf_adds(&data, ",\"overrides\":");
    overrides_json(&data, &j->ov);
    if (more) buf_printf(&data, ",%s", more);
    buf_addc(&data, '}');
    store_event e = {.ts_ms = clock_unix_ms(), .service = j->id, .kind = "engine_bench", .reason = reason,
                     .data = data.p};
    char err[256];
    if (j->d->st && store_event_add(j->d->st, &e, NULL, err, sizeof err)) log_warn("engine bench: %s", err);
    log_info("engine bench %s: %s", j->id, reason);
    buf_release(&data);
}

/* ---- the body ---------------------------------------------------------- */

static int int_key(const cJSON *it, int64_t lo, int64_t hi, int64_t *out, char *err, size_t errlen)
{
    double v = it->valuedouble;
    if (!cJSON_IsNumber(it) || v != (double)(int64_t)v || v < (double)lo || v > (double)hi) {
        snprintf(err, errlen, "engine-bench: \"%s\" must be an integer from %lld to %lld", it->string, (long long)lo,
                 (long long)hi);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static int body_key(const cJSON *it, int driver, eb_job *j, char *err, size_t errlen)
{
    const char *k = it->string;
    if (!strcmp(k, "n_prompt")) return int_key(it, 0, 65536, &j->a.n_prompt, err, errlen);
    if (!strcmp(k, "n_gen")) return int_key(it, 0, 65536, &j->a.n_gen, err, errlen);
    if (!strcmp(k, "repetitions")) return int_key(it, 1, 100, &j->a.repetitions, err, errlen);
    if (!strcmp(k, "timeout_ms")) return int_key(it, 1000, 3600000, &j->timeout_ms, err, errlen);
    if (!strcmp(k, "overrides")) {
        char e[768];
        if (overrides_parse(it, driver, &j->ov, e, sizeof e) == 0) return 0;
        snprintf(err, errlen, "engine-bench: %s", e);
        return -1;
    }
    snprintf(err, errlen, "engine-bench: unknown key '%s' in the body (allowed: " EB_KEYS ")", k);
    return -1;
}

/* The body into j (defaults for what it leaves out); -1 with err. */
static int body_parse(const view *body, int driver, eb_job *j, char *err, size_t errlen)
{
    j->a = (lbench_args){.n_prompt = 512, .n_gen = 128, .repetitions = 3};
    j->timeout_ms = 600000;
    size_t i = 0;
    while (i < body->len && strchr(" \t\r\n", body->p[i])) i++;
    if (i == body->len) return 0;
    char jerr[256];
    cJSON *o = jstrict_parse(body->p, body->len, jerr, sizeof jerr);
    if (!o || !cJSON_IsObject(o)) {
        snprintf(err, errlen, "engine-bench: the body must be a JSON object {" EB_KEYS "}: %s",
                 o ? "found another JSON value" : jerr);
        cJSON_Delete(o);
        return -1;
    }
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, o) if ((rc = body_key(it, driver, j, err, errlen)) != 0) break;
    cJSON_Delete(o);
    if (!rc && j->a.n_prompt == 0 && j->a.n_gen == 0) {
        snprintf(err, errlen, "engine-bench: \"n_prompt\" and \"n_gen\" are both 0: nothing to measure");
        rc = -1;
    }
    return rc;
}

/* ---- the run ----------------------------------------------------------- */

/* set once, when the daemon shuts down (api_ebench_shutdown) */
static volatile int shutting_down;

void api_ebench_shutdown(void)
{
    shutting_down = 1;
}

static void eb_work(uv_work_t *w)
{
    eb_job *j = w->data;
    run_opts o = {.timeout_ms = j->timeout_ms, .max_output = EB_OUT_MAX, .env = &j->env, .err_out = &j->errout,
                  .cancel = &shutting_down};
    run_capture(j->argv.v, &o, &j->out, &j->res, j->err, sizeof j->err);
}

/* the last EB_TAIL bytes of stderr, from a line's start where there is one */
static const char *tail_of(const buf *b)
{
    if (!b->len) return "";
    if (b->len <= EB_TAIL) return b->p;
    const char *t = b->p + b->len - EB_TAIL, *nl = strchr(t, '\n');
    return nl && nl[1] ? nl + 1 : t;
}

static void eb_answer(eb_job *j)
{
    buf b = BUF_INIT, det = BUF_INIT, res = BUF_INIT;
    char perr[512] = "";
    size_t n = 0;
    bool ok = j->res.exited && j->res.exit_code == 0 &&
              lbench_reduce(j->out.p ? j->out.p : "", j->out.len, &res, &n, perr, sizeof perr) == 0;
    buf_adds(&det, "{\"argv\":");
    argv_json(&det, &j->argv);
    if (j->res.exited)
        buf_printf(&det, ",\"exit\":%d,\"signal\":null", j->res.exit_code);
    else
        buf_printf(&det, ",\"exit\":null,\"signal\":%d", j->res.term_signal);
    buf_printf(&det, ",\"timed_out\":%s,\"ms\":%lld", j->res.timed_out ? "true" : "false",
               (long long)j->res.elapsed_ms);
    if (ok) {
        buf_adds(&b, det.p);
        buf_adds(&b, ",\"results\":");
        buf_add(&b, res.p, res.len);
    }
    buf_adds(ok ? &b : &det, ",\"stderr_tail\":");
    buf_json_str(ok ? &b : &det, tail_of(&j->errout));
    buf_addc(ok ? &b : &det, '}');
    if (ok) {
        eb_event(j, "done", "llama-bench done", NULL);
        api_reply(j->c, 200, &b);
    } else {
        const char *why = !j->res.exited || j->res.exit_code ? j->err : perr;
        eb_event(j, "failed", why, NULL);
        api_error(j->c, 422, "engine_bench_failed", det.p, "llama-bench for '%s': %s", j->id, why);
    }
    buf_release(&b);
    buf_release(&det);
    buf_release(&res);
}

static void eb_after(uv_work_t *w, int status)
{
    eb_job *j = w->data;
    (void)status;
    eb_answer(j);
    job_free(j);
}

/* ---- admission --------------------------------------------------------- */

/* The gate on the snapshot for p with j's overrides at n_prompt + n_gen:
 * 0 admitted (argv and env built), else answered (-1). */
static int eb_admit(eb_job *j, const preset *p, const snapshot *s)
{
    gpumodd *d = j->d;
    preset q;
    char err[1024];
    need_detail *nd = xcalloc(1, sizeof *nd);
    int rc = -1;
    if (overrides_apply(p, &j->ov, &q, err, sizeof err) != 0) {
        api_error(j->c, 400, "bad_request", NULL, "engine-bench: %s", err);
        goto out;
    }
    q.context_size = j->a.n_prompt + j->a.n_gen;
    char *bin = lbench_binary(&d->cfg->set, err, sizeof err);
    if (!bin || lbench_launch(&q, &d->cfg->set, bin, &j->a, &j->argv, &j->env, err, sizeof err) != 0) {
        api_error(j->c, 422, bin ? "engine_bench_unsupported" : "no_llama_bench", NULL, "%s", err);
    } else if (service_need(&q, &d->cfg->set, s, d->st, nd, err, sizeof err) != 0) {
        api_error(j->c, 422, "need_unknown", NULL, "%s", err);
    } else {
        reservation res[128];
        size_t nres = sup_reservations(d->sup, res, 128);
        gate_policy pol;
        policy_from_settings(&d->cfg->set, &pol);
        verdict v;
        char *who = xasprintf("%s (engine-bench)", p->id); /* the service's own holding counts */
        gate_check(s, &nd->n, res, nres, who, &pol, &v);
        free(who);
        if (v.ok) {
            rc = 0;
        } else {
            buf det = BUF_INIT;
            verdict_json(&det, "daemon", p->id, &v, nd, s);
            eb_event(j, "refused", v.reason, NULL);
            api_error(j->c, 409, "gate_refused", det.p, "engine-bench for '%s': the gate refused: %s", p->id,
                       v.reason);
            buf_release(&det);
        }
    }
    free(bin);
    overrides_applied_release(&q);
out:
    free(nd);
    return rc;
}

static void eb_snapshot(const snapshot *s, void *ud)
{
    eb_job *j = ud;
    const preset *p = config_preset(j->d->cfg, j->id);
    if (!p) {
        api_error(j->c, 404, "not_found", NULL, "no preset '%s' in %s", j->id, j->d->cfg->config_dir);
    } else if (eb_admit(j, p, s) == 0) {
        buf more = BUF_INIT;
        buf_adds(&more, "\"argv\":");
        argv_json(&more, &j->argv);
        eb_event(j, "run", "llama-bench started", more.p);
        buf_release(&more);
        j->work.data = j;
        if (uv_queue_work(j->d->loop, &j->work, eb_work, eb_after) == 0) return;
        api_error(j->c, 500, "internal", NULL, "engine-bench: cannot queue the run");
    }
    job_free(j);
}

void api_ebench_post(gpumodd *d, srv_conn *c, const char *id, const view *body)
{
    if (running) {
        api_error(c, 409, "engine_bench_busy", NULL, "engine-bench: one runs already (for '%s'); one at a time",
                   running->id);
        return;
    }
    const preset *p = config_preset(d->cfg, id);
    if (!p) {
        api_error(c, 404, "not_found", NULL, "no preset '%s' in %s", id, d->cfg->config_dir);
        return;
    }
    eb_job *j = xcalloc(1, sizeof *j);
    j->d = d;
    j->c = c;
    j->id = xstrdup(id);
    char err[1024];
    if (body_parse(body, p->driver, j, err, sizeof err) != 0) {
        api_error(c, 400, "bad_request", NULL, "%s", err);
        job_free(j);
        return;
    }
    if (p->driver != DRV_LLAMACPP) {
        api_error(c, 422, "engine_bench_unsupported", NULL,
                   "engine-bench: preset '%s' is not a llama.cpp preset (llama-bench runs llamacpp only)", id);
        job_free(j);
        return;
    }
    char *bin = lbench_binary(&d->cfg->set, err, sizeof err);
    if (!bin) {
        api_error(c, 422, "no_llama_bench", NULL, "engine-bench for '%s': %s", id, err);
        job_free(j);
        return;
    }
    free(bin);
    running = j;
    hostmon_take(d->hm, eb_snapshot, j); /* a fresh snapshot, taken off the loop */
}
