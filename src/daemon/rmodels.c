/* rmodels.c - see rmodels.h.  One poll per ready router-mode service at a
 * time (health_request, 5 s deadline), one load or unload at a time
 * daemon-wide (a FIFO of ops); an op's steps: GET /models, (load: a fresh
 * snapshot and the gate), POST /models/load|unload, then GET /models every
 * 250 ms until the engine says so or the deadline passes. */
#include "daemon/rmodels.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/policy.h"
#include "daemon/health.h"
#include "daemon/need.h"
#include "util/clock.h"
#include "util/log.h"

#define RM_POLL_MS 2000
#define RM_STEP_MS 250
#define RM_HTTP_MS 5000

const char *const rm_state_names[] = {"unloaded", "loading", "loaded", NULL};

typedef struct rm_model {
    char *id;
    rm_state state;
    int64_t since_ms; /* wall clock: when it entered state (first seen: when polled) */
} rm_model;

typedef struct rm_svc {
    char *id;
    rm_model *m;
    size_t n;
    health_probe *poll;
    struct rm_svc *next;
} rm_svc;

typedef struct rm_op {
    rmodels *rm;
    uint64_t ticket;
    bool load;
    char *svc, *model, *origin;
    sup_cb cb;
    void *ud;
    int64_t deadline; /* mono */
    int step;         /* 0 listing, 1 gate, 2 asked, 3 waiting */
    sup_svc *sv;      /* marked (sup_model_op_mark) from its start; NULL: not yet */
    uint64_t res;     /* a load admitted: its reservation (sup_reserve_extra); 0 none */
    sup_outcome d_oc; /* deferred: the answer the answer timer gives */
    char *d_msg;
    struct rm_op *next;
} rm_op;

struct rmodels {
    uv_loop_t *loop;
    sup *s;
    hostmon *hm;
    const config *const *cfg;
    rm_svc *svcs;
    rm_op *ops, *ops_tail;
    rm_op *deferred; /* answered on the next loop turn (t_ans), never inside rmodels_op */
    health_probe *op_probe;
    uv_timer_t t_poll, t_op, t_ans;
    uint64_t seq;
    int takes, open;
    bool closing;
    void (*close_cb)(void *ud);
    void *close_ud;
};

bool rmodels_is_router(const preset *p)
{
    return p && p->driver == DRV_LLAMACPP && p->llama.models_dir && !p->model_path;
}

static const preset *router_preset(rmodels *rm, const char *id)
{
    const preset *p = config_preset(*rm->cfg, id);
    return rmodels_is_router(p) ? p : NULL;
}

static rm_svc *svc_of(rmodels *rm, const char *id, bool add)
{
    for (rm_svc *v = rm->svcs; v; v = v->next)
        if (!strcmp(v->id, id)) return v;
    if (!add) return NULL;
    rm_svc *v = xcalloc(1, sizeof *v);
    v->id = xstrdup(id);
    v->next = rm->svcs;
    rm->svcs = v;
    return v;
}

static void models_clear(rm_svc *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->m[i].id);
    free(v->m);
    v->m = NULL;
    v->n = 0;
}

static rm_model *model_of(rm_svc *v, const char *id)
{
    for (size_t i = 0; v && i < v->n; i++)
        if (!strcmp(v->m[i].id, id)) return &v->m[i];
    return NULL;
}

static int state_of_json(const cJSON *e)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, "status");
    const cJSON *val = cJSON_IsObject(st) ? cJSON_GetObjectItemCaseSensitive(st, "value") : st;
    if (!cJSON_IsString(val)) return RM_LOADED; /* no status: a single-model list */
    for (int i = 0; i < RM__STATES; i++)
        if (!strcmp(val->valuestring, rm_state_names[i])) return i;
    return !strcmp(val->valuestring, "sleeping") ? RM_UNLOADED : RM_LOADING;
}

/* GET /models's answer into v's models (each keeps its since while its
 * state stays).  -1 when it is not {"data":[...]}. */
static int models_parse(rm_svc *v, const char *body, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *data = j ? cJSON_GetObjectItemCaseSensitive(j, "data") : NULL, *e;
    if (!cJSON_IsArray(data)) {
        cJSON_Delete(j);
        return -1;
    }
    rm_model *nm = xcalloc((size_t)cJSON_GetArraySize(data) + 1, sizeof *nm);
    size_t n = 0;
    int64_t now = clock_unix_ms();
    cJSON_ArrayForEach(e, data)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (!cJSON_IsString(id) || !*id->valuestring) continue;
        rm_model *old = model_of(v, id->valuestring);
        nm[n].id = xstrdup(id->valuestring);
        nm[n].state = (rm_state)state_of_json(e);
        nm[n].since_ms = old && old->state == nm[n].state ? old->since_ms : now;
        n++;
    }
    cJSON_Delete(j);
    models_clear(v);
    v->m = nm;
    v->n = n;
    return 0;
}

/* ---- the poll ---- */

static void poll_done(int status, const char *body, size_t len, const char *err, void *ud)
{
    rm_svc *v = ud;
    v->poll = NULL;
    if (status / 100 != 2) {
        log_warn("rmodels: router-mode service '%s': GET /models: %s", v->id,
                 err ? err : "not 2xx");
        return;
    }
    if (models_parse(v, body, len) != 0)
        log_warn("rmodels: router-mode service '%s': GET /models did not answer {\"data\":[...]}",
                 v->id);
}

static void poll_svc(rmodels *rm, const char *id)
{
    const preset *p = router_preset(rm, id);
    sup_svc *sv = sup_lookup(rm->s, id);
    sup_state_info si;
    rm_svc *v = svc_of(rm, id, p != NULL);
    if (!v) return;
    if (!p || !sv || !sup_svc_state(sv, &si) || si.state != SVC_READY) {
        models_clear(v);
        return;
    }
    if (v->poll) return;
    char err[256];
    v->poll = health_request(rm->loop, p->host, (int)p->port, "GET", "/models", NULL, RM_HTTP_MS,
                             poll_done, v, err, sizeof err);
}

static void on_poll(uv_timer_t *t)
{
    rmodels *rm = t->data;
    const config *cfg = *rm->cfg;
    for (size_t i = 0; i < cfg->n_presets; i++)
        if (rmodels_is_router(&cfg->presets[i])) poll_svc(rm, cfg->presets[i].id);
}

void rmodels_on_event(rmodels *rm, const store_event *e)
{
    if (!rm || rm->closing || !e->kind || strcmp(e->kind, "state") || !e->service) return;
    if (router_preset(rm, e->service)) poll_svc(rm, e->service);
}

int rmodels_state(rmodels *rm, const char *service, const char *model)
{
    rm_model *m = rm ? model_of(svc_of(rm, service, false), model) : NULL;
    return m ? (int)m->state : -1;
}

void rmodels_json(const char *service, buf *out, void *ud)
{
    rmodels *rm = ud;
    if (!rm || !router_preset(rm, service)) return;
    rm_svc *v = svc_of(rm, service, false);
    buf_adds(out, ",\"models\":[");
    for (size_t i = 0; v && i < v->n; i++) {
        buf_adds(out, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(out, v->m[i].id);
        buf_printf(out, ",\"state\":\"%s\",\"since\":", rm_state_names[v->m[i].state]);
        buf_json_time(out, v->m[i].since_ms);
        buf_addc(out, '}');
    }
    buf_addc(out, ']');
}

/* ---- ops ---- */

static void op_next(rmodels *rm);

static void op_end(rm_op *o, const sup_result *r)
{
    rmodels *rm = o->rm;
    if (rm->ops == o) {
        rm->ops = o->next;
        if (!rm->ops) rm->ops_tail = NULL;
        uv_timer_stop(&rm->t_op);
    }
    if (o->sv) sup_model_op_mark(o->sv, false);
    o->sv = NULL;
    sup_unreserve(rm->s, o->res);
    o->res = 0;
    if (o->cb) o->cb(r, o->ud);
    free(o->d_msg);
    free(o->svc);
    free(o->model);
    free(o->origin);
    free(o);
    if (!rm->closing) op_next(rm);
}

static void op_fail(rm_op *o, sup_outcome oc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void op_fail(rm_op *o, sup_outcome oc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char m[1024];
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    op_end(o, &(sup_result){.outcome = oc, .message = m});
}

static void op_ok(rm_op *o)
{
    op_end(o, &(sup_result){.outcome = SUP_OK});
}

/* The model's GGUF: <dir>/<model>.gguf, else the first shard in <dir>/<model>/. */
static char *model_file(const char *dir, const char *model)
{
    char *f = xasprintf("%s/%s.gguf", dir, model);
    struct stat st;
    if (stat(f, &st) == 0 && S_ISREG(st.st_mode)) return f;
    free(f);
    char *sub = xasprintf("%s/%s", dir, model);
    DIR *d = opendir(sub);
    char *best = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".gguf") || !strncmp(e->d_name, "mmproj", 6))
            continue;
        if (strstr(e->d_name, "-of-") && !strstr(e->d_name, "-00001-of-")) continue;
        if (!best || strcmp(e->d_name, best) < 0) {
            free(best);
            best = xstrdup(e->d_name);
        }
    }
    if (d) closedir(d);
    char *r = best ? xasprintf("%s/%s", sub, best) : NULL;
    free(best);
    free(sub);
    return r;
}

static int64_t op_timeout_ms(rmodels *rm, const preset *p)
{
    /* p NULL: the preset went (a reload) while the op ran */
    int64_t t = p && p->startup_timeout_ms > 0 ? p->startup_timeout_ms
                                               : (*rm->cfg)->set.supervisor.startup_timeout_ms;
    return t > 0 ? t : 600000;
}

static void op_step(rm_op *o);
static void maybe_freed(rmodels *rm);
static void on_op_timer(uv_timer_t *t);

static void op_listed(int status, const char *body, size_t len, const char *err, void *ud)
{
    rm_op *o = ud;
    rmodels *rm = o->rm;
    rm->op_probe = NULL;
    rm_svc *v = svc_of(rm, o->svc, true);
    if (status / 100 != 2 || models_parse(v, body, len) != 0) {
        op_fail(o, SUP_START_FAILED, "router-mode service '%s': GET /models: %s", o->svc,
                err                 ? err
                : status / 100 != 2 ? "not 2xx"
                                    : "not {\"data\":[...]}");
        return;
    }
    rm_model *m = model_of(v, o->model);
    if (o->step == 3) { /* waiting for the engine */
        rm_state want = o->load ? RM_LOADED : RM_UNLOADED;
        if ((m && m->state == want) ||
            (!m && !o->load)) { /* an unload: no longer listed is unloaded */
            log_info("rmodels: '%s': model '%s' %s", o->svc, o->model, rm_state_names[want]);
            op_ok(o);
        } else if (clock_mono_ms() >= o->deadline) {
            op_fail(o, SUP_START_FAILED,
                    "model '%s' of '%s' is not %s after %lld s (the engine says %s)", o->model,
                    o->svc, rm_state_names[want],
                    (long long)(op_timeout_ms(rm, router_preset(rm, o->svc)) / 1000),
                    m ? rm_state_names[m->state] : "nothing of it");
        } else {
            uv_timer_start(&rm->t_op, on_op_timer, RM_STEP_MS, 0);
        }
        return;
    }
    if (m && m->state == (o->load ? RM_LOADED : RM_UNLOADED)) {
        op_ok(o);
        return;
    }
    if (!m &&
        !o->load) { /* the engine lists no such model: nothing to unload, nothing to wait for */
        op_fail(o, SUP_NOT_FOUND, "router-mode service '%s' lists no model '%s' (its GET /models)",
                o->svc, o->model);
        return;
    }
    o->step = o->load ? 1 : 2;
    op_step(o);
}

/* The op's preset now, or NULL with the op failed (a reload removed it,
 * or made it something else than router mode). */
static const preset *op_preset(rm_op *o)
{
    const preset *p = router_preset(o->rm, o->svc);
    if (!p)
        op_fail(o, SUP_NOT_FOUND, "service '%s' is no longer a configured router-mode service",
                o->svc);
    return p;
}

static void op_list(rm_op *o)
{
    rmodels *rm = o->rm;
    const preset *p = op_preset(o);
    if (!p) return;
    char err[256];
    rm->op_probe = health_request(rm->loop, p->host, (int)p->port, "GET", "/models", NULL,
                                  RM_HTTP_MS, op_listed, o, err, sizeof err);
    if (!rm->op_probe) op_fail(o, SUP_START_FAILED, "router-mode service '%s': %s", o->svc, err);
}

static void on_op_timer(uv_timer_t *t)
{
    rmodels *rm = t->data;
    if (rm->ops && !rm->op_probe) op_list(rm->ops);
}

static void op_asked(int status, const char *body, size_t len, const char *err, void *ud)
{
    rm_op *o = ud;
    rmodels *rm = o->rm;
    rm->op_probe = NULL;
    /* an unload of a model that is not running (unloaded since the GET):
     * llama-server answers 400; GET /models decides */
    if (status / 100 != 2 && !(status == 400 && !o->load)) {
        op_fail(o, SUP_START_FAILED,
                "router-mode service '%s': POST /models/%s {\"model\":\"%s\"}: %s%.*s", o->svc,
                o->load ? "load" : "unload", o->model,
                err ? err : "the engine answered: ", err ? 0 : (int)(len > 300 ? 300 : len),
                body ? body : "");
        return;
    }
    o->step = 3;
    o->deadline = clock_mono_ms() + op_timeout_ms(rm, router_preset(rm, o->svc));
    op_list(o);
}

static void op_ask(rm_op *o)
{
    rmodels *rm = o->rm;
    const preset *p = op_preset(o);
    if (!p) return;
    buf b = BUF_INIT;
    buf_adds(&b, "{\"model\":");
    buf_json_str(&b, o->model);
    buf_addc(&b, '}');
    char err[256];
    o->step = 2;
    rm->op_probe = health_request(rm->loop, p->host, (int)p->port, "POST",
                                  o->load ? "/models/load" : "/models/unload", b.p, RM_HTTP_MS,
                                  op_asked, o, err, sizeof err);
    buf_release(&b);
    if (!rm->op_probe) op_fail(o, SUP_START_FAILED, "router-mode service '%s': %s", o->svc, err);
}

/* The need of model m of p on snap into nd.  0, or -1 with err. */
static int model_need(const preset *p, const char *m, const snapshot *snap, need_detail *nd,
                      char *err, size_t errlen)
{
    char *f = strchr(m, '/') || m[0] == '.' ? NULL : model_file(p->llama.models_dir, m);
    if (!f) {
        snprintf(err, errlen, "no %s.gguf or %s/*.gguf in '%s'", m, m, p->llama.models_dir);
        return -1;
    }
    est_params ep;
    int dev_index[HOST_MAX_GPUS];
    need_est_params(p, snap, &ep, dev_index);
    preset q = *p;
    q.model_path = f;
    memset(nd, 0, sizeof *nd);
    int rc = need_from_estimate(&q, &ep, dev_index, nd, err, errlen);
    free(f);
    return rc;
}

/* models_max reached: the engine unloads its least recently used model (the
 * one loaded longest ago, as far as gpumod can tell); its need is freed. */
static void subtract_evicted(rmodels *rm, const preset *p, rm_op *o, const snapshot *snap, need *n,
                             char *what, size_t wl)
{
    rm_svc *v = svc_of(rm, o->svc, false);
    int64_t max = p->llama.models_max < 0 ? 4 : p->llama.models_max;
    size_t busy = 0;
    rm_model *lru = NULL;
    for (size_t i = 0; v && i < v->n; i++) {
        if (v->m[i].state == RM_UNLOADED) continue;
        busy++;
        if (v->m[i].state == RM_LOADED && (!lru || v->m[i].since_ms < lru->since_ms))
            lru = &v->m[i];
    }
    what[0] = 0;
    if (max <= 0 || (int64_t)busy < max || !lru) return;
    need_detail fr;
    char err[256];
    if (model_need(p, lru->id, snap, &fr, err, sizeof err) != 0) return;
    if (n->host_bytes > fr.n.host_bytes)
        n->host_bytes -= fr.n.host_bytes;
    else
        n->host_bytes = 0;
    for (size_t i = 0; i < n->ngpu && i < fr.n.ngpu; i++)
        n->gpu[i].bytes =
            n->gpu[i].bytes > fr.n.gpu[i].bytes ? n->gpu[i].bytes - fr.n.gpu[i].bytes : 0;
    snprintf(what, wl, "; models_max %lld reached: '%s' is unloaded first (counted as freed)",
             (long long)max, lru->id);
}

static void op_snap(const snapshot *snap, void *ud)
{
    rm_op *o = ud;
    rmodels *rm = o->rm;
    rm->takes--;
    if (rm->closing) {
        while (rm->ops)
            op_fail(rm->ops, SUP_SHUTTING_DOWN, "the daemon is shutting down");
        maybe_freed(rm);
        return;
    }
    const preset *p = op_preset(o);
    if (!p) return;
    need_detail nd;
    char err[512], freed[256];
    if (model_need(p, o->model, snap, &nd, err, sizeof err) != 0) {
        op_fail(o, SUP_NEED_UNKNOWN, "cannot tell what model '%s' of '%s' needs: %s", o->model,
                o->svc, err);
        return;
    }
    subtract_evicted(rm, p, o, snap, &nd.n, freed, sizeof freed);
    reservation res[64];
    size_t nres = sup_reservations(rm->s, res, 64);
    gate_policy pol;
    policy_from_settings(&(*rm->cfg)->set, &pol);
    verdict vd;
    gate_check(snap, &nd.n, res, nres, o->svc, &pol, &vd);
    if (!vd.ok) {
        char m[768];
        snprintf(m, sizeof m, "refused: model '%s' of '%s': %s%s", o->model, o->svc, vd.reason,
                 freed);
        sup_gate_refusal g = {.service = o->svc, .vd = &vd, .nd = &nd, .snap = snap};
        log_info("rmodels: %s", m);
        op_end(o, &(sup_result){.outcome = SUP_GATE_REFUSED, .message = m, .gate = &g});
        return;
    }
    log_info("rmodels: '%s': model '%s' admitted%s", o->svc, o->model, freed);
    /* what it will take is reserved until GET /models says it is loaded */
    o->res = sup_reserve_extra(rm->s, o->svc, &nd.n);
    op_ask(o);
}

static void op_step(rm_op *o)
{
    if (o->step == 1) {
        o->rm->takes++;
        hostmon_take(o->rm->hm, op_snap, o);
    } else {
        op_ask(o);
    }
}

static sup_outcome op_svc_ready(rmodels *rm, rm_op *o, sup_svc *sv, char *m, size_t ml);

static void op_next(rmodels *rm)
{
    rm_op *o = rm->ops;
    if (!o || o->step || rm->op_probe || o->sv) return;
    /* queued behind another: the service may have changed meanwhile */
    sup_svc *sv = sup_lookup(rm->s, o->svc);
    char m[512];
    sup_outcome oc = sv ? op_svc_ready(rm, o, sv, m, sizeof m) : SUP_NOT_FOUND;
    if (oc != SUP_OK) {
        op_fail(o, oc, "%s", sv ? m : "no such service any more");
        return;
    }
    o->sv = sv; /* a sleep of it is refused from here to the op's end */
    sup_model_op_mark(sv, true);
    op_list(o);
}

/* The service is ready and no sleep of it runs: SUP_OK, else the outcome
 * with m (the op is not begun). */
static sup_outcome op_svc_ready(rmodels *rm, rm_op *o, sup_svc *sv, char *m, size_t ml)
{
    sup_state_info si;
    if (!sup_svc_state(sv, &si) || si.state != SVC_READY) {
        snprintf(m, ml,
                 "service '%s' is %s: a model loads or unloads only in a ready router-mode service",
                 o->svc, sup_svc_state(sv, &si) ? svc_state_names[si.state] : "down");
        return SUP_CONFLICT;
    }
    if (sup_sleep_in_flight(sv)) {
        snprintf(m, ml,
                 "service '%s' is going to sleep: a model loads or unloads once it is awake and "
                 "ready (gpumod service start %s wakes it)",
                 o->svc, o->svc);
        return SUP_CONFLICT;
    }
    return SUP_OK;
}

/* Checks that need no engine: SUP_OK, or the outcome with m. */
static sup_outcome op_check(rmodels *rm, rm_op *o, char *m, size_t ml)
{
    const preset *p = config_preset(*rm->cfg, o->svc);
    sup_svc *sv = sup_lookup(rm->s, o->svc);
    if (!p || !sv) {
        snprintf(m, ml, "no service '%s' is configured", o->svc);
        return SUP_NOT_FOUND;
    }
    if (!rmodels_is_router(p)) {
        snprintf(m, ml,
                 "service '%s' is not a llama.cpp router-mode service (driver llamacpp with "
                 "unit_vars.models_dir and no model_path): it has no models to %s",
                 o->svc, o->load ? "load" : "unload");
        return SUP_BAD_REQUEST;
    }
    if (o->load && strchr(o->model, '/') && o->model[0] != '/' && !strstr(o->model, "..") &&
        strlen(o->model) <= 256) {
        /* llama-server lists models from its cache and presets too (org/name:Q4) */
        snprintf(m, ml,
                 "model '%s' of '%s' is not a file in its models_dir ('%s'): an id with '/' names "
                 "a model from llama-server's cache or presets, and gpumod has no GGUF in "
                 "models_dir to estimate its need from, so the gate cannot admit it; put its GGUF "
                 "in models_dir (NAME.gguf or NAME/*.gguf) and load it by that name",
                 o->model, o->svc, p->llama.models_dir);
        return SUP_BAD_REQUEST;
    }
    if (!*o->model || (o->load && strchr(o->model, '/')) || o->model[0] == '.' ||
        strstr(o->model, "..") || strlen(o->model) > 256) {
        snprintf(
            m, ml,
            "'%.256s' is not a model name of '%s' (a file name in its models_dir without .gguf)",
            o->model, o->svc);
        return SUP_BAD_REQUEST;
    }
    char *f = o->load ? model_file(p->llama.models_dir, o->model) : NULL;
    free(f);
    if (!f && o->load) {
        snprintf(m, ml,
                 "router-mode service '%s' has no model '%s' (no %s.gguf or %s/*.gguf in '%s')",
                 o->svc, o->model, o->model, o->model, p->llama.models_dir);
        return SUP_NOT_FOUND;
    }
    return op_svc_ready(rm, o, sv, m, ml);
}

static void on_ans(uv_timer_t *t);

/* Answer o with oc and msg on a later loop turn: a caller of rmodels_op
 * never hears its callback before rmodels_op returns. */
static void op_defer(rmodels *rm, rm_op *o, sup_outcome oc, const char *msg)
{
    o->d_oc = oc;
    o->d_msg = xstrdup(msg);
    o->next = NULL;
    rm_op **pp = &rm->deferred;
    while (*pp)
        pp = &(*pp)->next;
    *pp = o;
    if (!rm->closing) uv_timer_start(&rm->t_ans, on_ans, 0, 0);
}

static void answer_deferred(rmodels *rm)
{
    rm_op *l = rm->deferred;
    rm->deferred = NULL;
    while (l) {
        rm_op *o = l;
        l = o->next;
        o->next = NULL;
        op_end(o, &(sup_result){.outcome = o->d_oc, .message = o->d_msg});
    }
}

static void on_ans(uv_timer_t *t)
{
    rmodels *rm = t->data;
    answer_deferred(rm);
    if (!rm->closing) op_next(rm);
}

uint64_t rmodels_op(rmodels *rm, const char *service, const char *model, bool load,
                    const char *origin, sup_cb cb, void *ud)
{
    rm_op *o = xcalloc(1, sizeof *o);
    o->rm = rm;
    o->ticket = ++rm->seq;
    o->load = load;
    o->svc = xstrdup(service);
    o->model = xstrdup(model);
    o->origin = xstrdup(origin ? origin : "api");
    o->cb = cb;
    o->ud = ud;
    char m[1024];
    sup_outcome oc = SUP_SHUTTING_DOWN;
    snprintf(m, sizeof m, "the daemon is shutting down");
    if (rm->closing || (oc = op_check(rm, o, m, sizeof m)) != SUP_OK) {
        op_defer(rm, o, oc, m);
        return o->ticket;
    }
    if (rm->ops_tail)
        rm->ops_tail->next = o;
    else
        rm->ops = o;
    rm->ops_tail = o;
    uv_timer_start(&rm->t_ans, on_ans, 0, 0); /* op_next on the next turn */
    return o->ticket;
}

void *rmodels_cancel(rmodels *rm, uint64_t ticket)
{
    for (int l = 0; rm && l < 2; l++)
        for (rm_op *o = l ? rm->deferred : rm->ops; o; o = o->next)
            if (o->ticket == ticket && o->cb) {
                o->cb = NULL;
                return o->ud;
            }
    return NULL;
}

/* ---- life ---- */

rmodels *rmodels_new(uv_loop_t *loop, sup *s, hostmon *hm, const config *const *cfg)
{
    rmodels *rm = xcalloc(1, sizeof *rm);
    rm->loop = loop;
    rm->s = s;
    rm->hm = hm;
    rm->cfg = cfg;
    uv_timer_init(loop, &rm->t_poll);
    uv_timer_init(loop, &rm->t_op);
    uv_timer_init(loop, &rm->t_ans);
    rm->t_poll.data = rm->t_op.data = rm->t_ans.data = rm;
    uv_timer_start(&rm->t_poll, on_poll, RM_POLL_MS, RM_POLL_MS);
    return rm;
}

static void maybe_freed(rmodels *rm)
{
    if (rm->open > 0 || rm->takes > 0) return;
    answer_deferred(rm); /* asked while it closed */
    while (rm->svcs) {
        rm_svc *v = rm->svcs;
        rm->svcs = v->next;
        models_clear(v);
        free(v->id);
        free(v);
    }
    void (*cb)(void *) = rm->close_cb;
    void *ud = rm->close_ud;
    free(rm);
    if (cb) cb(ud);
}

static void t_closed(uv_handle_t *h)
{
    rmodels *rm = h->data;
    rm->open--;
    maybe_freed(rm);
}

void rmodels_close(rmodels *rm, void (*cb)(void *ud), void *ud)
{
    rm->closing = true;
    rm->close_cb = cb;
    rm->close_ud = ud;
    if (rm->op_probe) health_cancel(rm->op_probe);
    rm->op_probe = NULL;
    for (rm_svc *v = rm->svcs; v; v = v->next) {
        if (v->poll) health_cancel(v->poll);
        v->poll = NULL;
    }
    answer_deferred(rm);
    while (rm->ops && !(rm->takes && rm->ops->step == 1))
        op_fail(rm->ops, SUP_SHUTTING_DOWN, "the daemon is shutting down");
    rm->open = 3;
    uv_close((uv_handle_t *)&rm->t_poll, t_closed);
    uv_close((uv_handle_t *)&rm->t_op, t_closed);
    uv_close((uv_handle_t *)&rm->t_ans, t_closed);
}
