/* bswitch.c - `gpumod bench switch MODE_A MODE_B [-n N]` (docs/bench.md
 * "bench switch"): alternate mode switches through the daemon and report
 * each phase's median with a bootstrap interval, per direction.
 *
 * The figures come from the daemon's switch journal (GET /switches/ID),
 * not from the client's clock: a phase's time is what the daemon wrote
 * when it began and ended, so the client's polling adds nothing to it.
 * Where a phase runs once per service (stop: all together; start: one
 * after another), its time in a switch is the span from the first one's
 * start to the last one's end.  Only the first-token figure is the
 * client's: after each committed switch, one streaming request
 * (max_tokens 1) to the target mode's first service through the router,
 * timed from just before it is sent to the first byte of the response
 * body (libcurl's write callback), so it includes the router's relay.
 *
 * The run: a warm-up switch to MODE_A unless the daemon is already in it,
 * then B, A, B, ... until each direction has N committed switches.  A
 * switch that fails or rolls back is kept in the document with its error
 * and the run goes on; two failures in a row end it. */
#include "bench/bench.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/ctl.h"
#include "bench/bstats.h"
#include "util/clock.h"

#define USAGE                                                                                                  \
    "usage: gpumod bench switch MODE_A MODE_B [-n N] [--timeout S] [--json FILE] [--svg FILE]\n"               \
    "                           [--first-token | --no-first-token] [--seed N] [--no-store] [-q]\n"
#define MARGIN_MS 10000
#define FT_TIMEOUT_MS 60000

/* The figures of one switch, each NaN when the switch had no such phase. */
enum { PH_PLAN, PH_DRAIN, PH_STOP, PH_FREED, PH_START, PH_LOAD, PH_WAIT, PH_HEALTHY, PH_COMMIT, PH_TOTAL, PH_FT, NPH };
static const char *const ph_journal[NPH] = {"plan",  "drain",      "stop",           "verify-freed",
                                            "start", NULL,         "wait-ready",     "verify-healthy",
                                            "commit", NULL,        NULL};
static const char *const ph_key[NPH] = {"plan_ms",       "drain_ms",       "stop_ms",   "verify_freed_ms",
                                        "start_ms",      "load_ms",        "wait_ready_ms", "verify_healthy_ms",
                                        "commit_ms",     "total_ms",       "first_token_ms"};

typedef struct swrec {
    int64_t id;
    char *from, *to, *outcome, *error;
    double v[NPH];
    bool measured; /* committed, A -> B or B -> A */
    int dir;       /* 0: A -> B, 1: B -> A */
} swrec;

typedef struct bsw {
    config_paths paths; /* the daemon to ask: the control-API client resolves its socket */
    const char *a, *b;
    long n;
    int64_t timeout_s; /* 0: the daemon's switch.timeout */
    bool ft;           /* time a first token after each switch */
    char *router;      /* http://host:port or NULL */
    char *auth;        /* "Authorization: Bearer ..." or NULL */
    char *svc_a, *svc_b; /* the first service of each mode (NULL: the mode has none) */
    bool quiet;
    swrec *recs;
    size_t nrec;
    swrec warm;
    bool warmed;
    cJSON *warnings;
} bsw;

static void rec_release(swrec *r)
{
    free(r->from);
    free(r->to);
    free(r->outcome);
    free(r->error);
}

static const char *jstr_or(const cJSON *o, const char *k, const char *dflt)
{
    const char *s = jstr(o, k);
    return s ? s : dflt;
}

/* The switch entry of GET /switches/ID (or a blocking answer) into r. */
static void rec_fill(swrec *r, const cJSON *e)
{
    for (int i = 0; i < NPH; i++) r->v[i] = NAN;
    r->id = (int64_t)jnum(e, "id", (double)r->id);
    free(r->from);
    free(r->to);
    free(r->outcome);
    r->from = xstrdup(jstr_or(e, "from", "none"));
    r->to = xstrdup(jstr_or(e, "to", "?"));
    r->outcome = xstrdup(jstr_or(e, "outcome", "?"));
    if (jstr(e, "error") && !r->error) r->error = xstrdup(jstr(e, "error"));
    if (!jnull(e, "duration_ms")) r->v[PH_TOTAL] = jnum(e, "duration_ms", NAN);
    double lo[NPH], hi[NPH], load = 0;
    bool any_load = false;
    for (int i = 0; i < NPH; i++) lo[i] = INFINITY, hi[i] = -INFINITY;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(e, "phases"))
    {
        const char *name = jstr(p, "phase");
        int64_t t0;
        if (!name || !jstr(p, "started") || clock_parse_rfc3339(jstr(p, "started"), &t0) || jnull(p, "duration_ms"))
            continue;
        double d = jnum(p, "duration_ms", 0);
        for (int i = 0; i < NPH; i++)
            if (ph_journal[i] && !strcmp(ph_journal[i], name)) {
                if ((double)t0 < lo[i]) lo[i] = (double)t0;
                if ((double)t0 + d > hi[i]) hi[i] = (double)t0 + d;
            }
        const cJSON *det = cJSON_GetObjectItemCaseSensitive(p, "detail");
        if (!strcmp(name, "start") && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(det, "load_ms"))) {
            load += jnum(det, "load_ms", 0);
            any_load = true;
        }
    }
    for (int i = 0; i < NPH; i++)
        if (ph_journal[i] && hi[i] >= lo[i]) r->v[i] = hi[i] - lo[i];
    if (any_load) r->v[PH_LOAD] = load;
}

/* The daemon's error message of a reply, or a line that says the status. */
static char *reply_error(const http_reply *r)
{
    cJSON *j = cJSON_ParseWithLength(r->body.p, r->body.len);
    const char *m = jstr(cJSON_GetObjectItemCaseSensitive(j, "error"), "message");
    char *s = m ? xstrdup(m) : xasprintf("HTTP %d from the daemon", r->status);
    cJSON_Delete(j);
    return s;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* One switch to `to_mode`, to its end.  0 with r filled (committed or not),
 * EXIT_USAGE (no such mode), EXIT_DAEMON (the daemon went away). */
static int run_switch(bsw *s, const char *to_mode, swrec *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < NPH; i++) r->v[i] = NAN;
    buf body = BUF_INIT;
    buf_adds(&body, "{\"mode\":");
    buf_json_str(&body, to_mode);
    if (s->timeout_s) buf_printf(&body, ",\"timeout\":%lld", (long long)s->timeout_s);
    buf_addc(&body, '}');
    http_reply h;
    int rc = ctl_call(&s->paths, "POST", "/modes/switch?origin=cli&wait=0", body.p, CTL_QUICK_MS * 4, false, &h);
    buf_release(&body);
    if (rc) return rc == EXIT_TIMEOUT ? EXIT_DAEMON : rc;
    cJSON *j = cJSON_ParseWithLength(h.body.p, h.body.len);
    if (h.status == 404) {
        fprintf(stderr, "gpumod bench switch: %s\n", jstr(cJSON_GetObjectItemCaseSensitive(j, "error"), "message"));
        cJSON_Delete(j);
        http_reply_release(&h);
        return EXIT_USAGE;
    }
    if (h.status == 200 && j) { /* ended at once */
        rec_fill(r, j);
        cJSON_Delete(j);
        http_reply_release(&h);
        return 0;
    }
    if (h.status != 202) { /* refused or failed at once: a failed switch */
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"), "detail");
        r->id = (int64_t)jnum(d, "switch_id", 0);
        r->error = reply_error(&h);
        r->to = xstrdup(to_mode);
        r->from = xstrdup("?");
        const char *code = jstr(cJSON_GetObjectItemCaseSensitive(j, "error"), "code");
        r->outcome = xstrdup(code && !strcmp(code, "gate_refused") ? "refused" : "failed");
        cJSON_Delete(j);
        http_reply_release(&h);
        return 0;
    }
    r->id = (int64_t)jnum(j, "switch_id", 0);
    int64_t wait_ms = (int64_t)jnum(j, "wait_ms", 0);
    cJSON_Delete(j);
    http_reply_release(&h);
    if (wait_ms <= 0) wait_ms = 3600000;
    int64_t deadline = clock_mono_ms() + wait_ms + MARGIN_MS;
    char target[64];
    snprintf(target, sizeof target, "/switches/%lld", (long long)r->id);
    static const int64_t steps[] = {2, 3, 5, 10, 20, 50};
    for (size_t i = 0;; i++) {
        sleep_ms(i < sizeof steps / sizeof steps[0] ? steps[i] : 50);
        rc = ctl_call(&s->paths, "GET", target, NULL, CTL_QUICK_MS, false, &h);
        if (rc) return EXIT_DAEMON;
        j = h.status == 200 ? cJSON_ParseWithLength(h.body.p, h.body.len) : NULL;
        if (!j) {
            r->error = reply_error(&h);
            r->to = xstrdup(to_mode);
            r->from = xstrdup("?");
            r->outcome = xstrdup("unknown");
            http_reply_release(&h);
            return 0;
        }
        const char *out = jstr(j, "outcome");
        if (out && strcmp(out, "planned") && strcmp(out, "running")) {
            rec_fill(r, j);
            cJSON_Delete(j);
            http_reply_release(&h);
            return 0;
        }
        cJSON_Delete(j);
        http_reply_release(&h);
        if (clock_mono_ms() > deadline) {
            r->error = xasprintf("switch %lld is still running after %lld ms (the daemon's bound)", (long long)r->id,
                                 (long long)(wait_ms + MARGIN_MS));
            r->to = xstrdup(to_mode);
            r->from = xstrdup("?");
            r->outcome = xstrdup("timeout");
            return 0;
        }
    }
}

/* ---- the first token ------------------------------------------------------ */

typedef struct ft_ctx {
    double t_first; /* NaN until the first body byte */
    size_t bytes;
} ft_ctx;

static size_t ft_write(char *p, size_t sz, size_t nm, void *ud)
{
    ft_ctx *f = ud;
    (void)p;
    if (isnan(f->t_first)) f->t_first = clock_mono_ms_f();
    f->bytes += sz * nm;
    return sz * nm;
}

/* ms from just before sending to the first body byte of a streaming
 * request (max_tokens 1) for service; NaN with err. */
static double first_token(const bsw *s, const char *service, char *err, size_t errlen)
{
    CURL *e = curl_easy_init();
    if (!e) {
        snprintf(err, errlen, "first token: libcurl cannot start");
        return NAN;
    }
    char *url = xasprintf("%s/v1/chat/completions", s->router);
    buf body = BUF_INIT;
    buf_adds(&body, "{\"model\":");
    buf_json_str(&body, service);
    buf_adds(&body, ",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":1,\"stream\":true}");
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    if (s->auth) hd = curl_slist_append(hd, s->auth);
    ft_ctx f = {.t_first = NAN};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.p);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)body.len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ft_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)FT_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    double t0 = clock_mono_ms_f();
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    double ms = NAN;
    if (cc != CURLE_OK)
        snprintf(err, errlen, "first token from '%s' through %s: %s", service, s->router, curl_easy_strerror(cc));
    else if (status != 200)
        snprintf(err, errlen, "first token from '%s' through %s: HTTP %ld", service, s->router, status);
    else if (isnan(f.t_first))
        snprintf(err, errlen, "first token from '%s' through %s: an empty body", service, s->router);
    else
        ms = f.t_first - t0;
    curl_slist_free_all(hd);
    curl_easy_cleanup(e);
    buf_release(&body);
    free(url);
    return ms;
}

/* ---- what the daemon knows ------------------------------------------------ */

static cJSON *get_json(bsw *s, const char *target, int *rc)
{
    http_reply h;
    *rc = ctl_call(&s->paths, "GET", target, NULL, CTL_QUICK_MS, false, &h);
    if (*rc) return NULL;
    cJSON *j = NULL;
    if (h.status != 200)
        *rc = ctl_fail(&h, "bench switch");
    else if (!(j = ctl_json(&h, "bench switch")))
        *rc = EXIT_REFUSED;
    http_reply_release(&h);
    return j;
}

static char *first_service(const cJSON *modes, const char *id, bool *found)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(modes, "modes"))
    {
        if (!jstr(m, "id") || strcmp(jstr(m, "id"), id)) continue;
        *found = true;
        const cJSON *sv = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "services"), 0);
        return cJSON_IsString(sv) ? xstrdup(sv->valuestring) : NULL;
    }
    *found = !strcmp(id, "none");
    return NULL;
}

static void modes_list(buf *b, const cJSON *modes)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(modes, "modes"))
        buf_printf(b, "%s%s", b->len ? ", " : "", jstr_or(m, "id", "?"));
    if (!b->len) buf_adds(b, "none configured");
}

/* The router's base URL (router.listen's host, the port the daemon
 * reports: a --listen given to serve wins) and its API key, when it
 * listens; NULL otherwise. */
static void find_router(bsw *s)
{
    int rc;
    cJSON *t = get_json(s, "/route", &rc);
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(t, "listen");
    if (!cJSON_IsNumber(lp) || lp->valuedouble <= 0) {
        cJSON_Delete(t);
        return;
    }
    config cfg;
    config_load_settings(&cfg, &s->paths); /* an error in it still leaves the defaults */
    const char *l = cfg.set.router.listen ? cfg.set.router.listen : "127.0.0.1:8010";
    const char *colon = strrchr(l, ':');
    char host[256] = "127.0.0.1";
    if (colon && colon > l && (size_t)(colon - l) < sizeof host) {
        memcpy(host, l, (size_t)(colon - l));
        host[colon - l] = 0;
    }
    if (!strcmp(host, "0.0.0.0") || !*host) snprintf(host, sizeof host, "127.0.0.1");
    if (!strcmp(host, "[::]") || !strcmp(host, "::")) snprintf(host, sizeof host, "[::1]");
    s->router = xasprintf("http://%s:%d", host, (int)lp->valuedouble);
    const char *var = cfg.set.router.api_keys_env, *v = var ? getenv(var) : NULL;
    if (v) {
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strcspn(v, ", \t\n");
        if (n) s->auth = xasprintf("Authorization: Bearer %.*s", (int)n, v);
    }
    config_release(&cfg);
    cJSON_Delete(t);
}

/* ---- the document ---------------------------------------------------------- */

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static double r3(double v) { return isfinite(v) ? round(v * 1000.0) / 1000.0 : v; }

/* {"<phase>_ms": {median, lo, hi, n, values}} of the measured switches of
 * direction dir (-1: both); a phase no switch had is left out. */
static cJSON *phases_json(const bsw *s, int dir, uint64_t seed)
{
    cJSON *o = cJSON_CreateObject();
    double *v = xcalloc(s->nrec + 1, sizeof *v);
    for (int p = 0; p < NPH; p++) {
        size_t n = 0;
        for (size_t i = 0; i < s->nrec; i++)
            if (s->recs[i].measured && (dir < 0 || s->recs[i].dir == dir) && !isnan(s->recs[i].v[p]))
                v[n++] = s->recs[i].v[p];
        if (!n) continue;
        bci ci;
        bstat_median_ci(v, n, 0.95, 2000, seed + (uint64_t)p, &ci);
        cJSON *q = cJSON_AddObjectToObject(o, ph_key[p]);
        add_num(q, "median", r3(ci.est));
        add_num(q, "lo", r3(ci.lo));
        add_num(q, "hi", r3(ci.hi));
        cJSON_AddNumberToObject(q, "n", (double)n);
        cJSON *a = cJSON_AddArrayToObject(q, "values");
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(r3(v[i])));
    }
    free(v);
    return o;
}

static cJSON *rec_json(const swrec *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)r->id);
    cJSON_AddStringToObject(o, "from", r->from ? r->from : "?");
    cJSON_AddStringToObject(o, "to", r->to ? r->to : "?");
    cJSON_AddStringToObject(o, "outcome", r->outcome ? r->outcome : "?");
    cJSON_AddBoolToObject(o, "ok", r->outcome && !strcmp(r->outcome, "committed"));
    cJSON_AddBoolToObject(o, "measured", r->measured);
    if (r->error)
        cJSON_AddStringToObject(o, "error", r->error);
    else
        cJSON_AddNullToObject(o, "error");
    cJSON *p = cJSON_AddObjectToObject(o, "phases");
    for (int i = 0; i < NPH; i++)
        if (i != PH_FT && i != PH_TOTAL && !isnan(r->v[i])) cJSON_AddNumberToObject(p, ph_key[i], r3(r->v[i]));
    add_num(o, "total_ms", r3(r->v[PH_TOTAL]));
    add_num(o, "first_token_ms", r3(r->v[PH_FT]));
    return o;
}

static void rfc3339_now(char *out, size_t n) { clock_rfc3339(clock_unix_ms(), out, n); }

static cJSON *build_doc(const bsw *s, int argc, char **argv, const char *started, uint64_t seed, int failed)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "schema", "gpumod.bench/1");
    cJSON_AddStringToObject(d, "kind", "switch");
    cJSON_AddStringToObject(d, "started", started);
    char fin[40];
    rfc3339_now(fin, sizeof fin);
    cJSON_AddStringToObject(d, "finished", fin);
    cJSON_AddStringToObject(d, "gpumod_version", GPUMOD_VERSION);
    cJSON *av = cJSON_AddArrayToObject(d, "argv");
    cJSON_AddItemToArray(av, cJSON_CreateString("gpumod"));
    cJSON_AddItemToArray(av, cJSON_CreateString("bench"));
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
    cJSON *m = cJSON_AddArrayToObject(d, "modes");
    cJSON_AddItemToArray(m, cJSON_CreateString(s->a));
    cJSON_AddItemToArray(m, cJSON_CreateString(s->b));
    cJSON_AddNumberToObject(d, "n", (double)s->n);
    cJSON *st = cJSON_AddObjectToObject(d, "settings");
    cJSON_AddNumberToObject(st, "n", (double)s->n);
    if (s->timeout_s)
        cJSON_AddNumberToObject(st, "timeout_s", (double)s->timeout_s);
    else
        cJSON_AddNullToObject(st, "timeout_s");
    cJSON_AddBoolToObject(st, "first_token", s->ft);
    cJSON_AddStringToObject(st, "first_token_measure", "first response body byte, max_tokens 1, through the router");
    cJSON_AddNumberToObject(st, "seed", (double)seed);
    if (s->router)
        cJSON_AddStringToObject(st, "router", s->router);
    else
        cJSON_AddNullToObject(st, "router");
    cJSON_AddItemToObject(d, "phases", phases_json(s, -1, seed));
    cJSON *dirs = cJSON_AddArrayToObject(d, "directions");
    for (int k = 0; k < 2; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "from", k ? s->b : s->a);
        cJSON_AddStringToObject(o, "to", k ? s->a : s->b);
        cJSON_AddItemToObject(o, "phases", phases_json(s, k, seed));
        cJSON_AddItemToArray(dirs, o);
    }
    cJSON_AddNumberToObject(d, "failed", failed);
    if (s->warmed)
        cJSON_AddItemToObject(d, "warmup", rec_json(&s->warm));
    else
        cJSON_AddNullToObject(d, "warmup");
    cJSON *sw = cJSON_AddArrayToObject(d, "switches");
    for (size_t i = 0; i < s->nrec; i++) cJSON_AddItemToArray(sw, rec_json(&s->recs[i]));
    cJSON_AddItemToObject(d, "warnings", cJSON_Duplicate(s->warnings, true));
    return d;
}

/* The terminal table: a row per phase, "median [lo, hi] n" per direction.
 * (breport_table renders the same document for `gpumod bench report`.) */
static void table(buf *b, const cJSON *doc, const bsw *s, int failed)
{
    size_t measured = 0;
    for (size_t i = 0; i < s->nrec; i++) measured += s->recs[i].measured;
    buf_printf(b, "bench switch '%s' <-> '%s': %zu measured switches, %d failed\n", s->a, s->b, measured, failed);
    char h1[160], h2[160];
    snprintf(h1, sizeof h1, "%s -> %s", s->a, s->b);
    snprintf(h2, sizeof h2, "%s -> %s", s->b, s->a);
    buf_printf(b, "%-16s %-30s %-30s\n", "phase (ms)", h1, h2);
    const cJSON *dirs = cJSON_GetObjectItemCaseSensitive(doc, "directions");
    for (int p = 0; p < NPH; p++) {
        const cJSON *c[2];
        bool any = false;
        for (int k = 0; k < 2; k++) {
            c[k] = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(dirs, k), "phases"), ph_key[p]);
            any |= c[k] != NULL;
        }
        if (!any) continue;
        char name[32];
        snprintf(name, sizeof name, "%s", ph_key[p]);
        name[strlen(name) - 3] = 0; /* "_ms" */
        buf_printf(b, "%-16s", name);
        for (int k = 0; k < 2; k++) {
            char cell[64] = "-";
            if (c[k])
                snprintf(cell, sizeof cell, "%.1f [%.1f, %.1f] n=%.0f", jnum(c[k], "median", NAN),
                         jnum(c[k], "lo", NAN), jnum(c[k], "hi", NAN), jnum(c[k], "n", 0));
            buf_printf(b, " %-30s", cell);
        }
        buf_addc(b, '\n');
    }
    for (size_t i = 0; i < s->nrec; i++)
        if (s->recs[i].error)
            buf_printf(b, "switch %lld %s -> %s %s: %s\n", (long long)s->recs[i].id, s->recs[i].from, s->recs[i].to,
                       s->recs[i].outcome, s->recs[i].error);
    const cJSON *w;
    cJSON_ArrayForEach(w, s->warnings) buf_printf(b, "warning: %s\n", w->valuestring);
}

static int write_file(const char *path, const char *text, size_t len)
{
    if (!strcmp(path, "-")) {
        fwrite(text, 1, len, stdout);
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "gpumod bench switch: cannot write '%s': %s\n", path, strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------ */

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumod bench switch: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fputs(USAGE, stderr);
    return EXIT_USAGE;
}

static bool int_arg(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return false;
    *out = x;
    return true;
}

static void note(bsw *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(bsw *s, const char *fmt, ...)
{
    buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(s->warnings, cJSON_CreateString(b.p));
    buf_release(&b);
}

/* What the command line asks beyond the run itself (bsw holds the rest). */
typedef struct bsw_args {
    const char *json_path, *svg_path;
    int ft_opt; /* -1: on when the router listens */
    long seed, timeout;
    bool no_store;
} bsw_args;

/* The options and the two modes into s and a.  -1 to go on, or the exit
 * code to return (0 after --help). */
static int parse_args(int argc, char **argv, bsw *s, bsw_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(o, "-n") || !strcmp(o, "--timeout") || !strcmp(o, "--json") ||
                   !strcmp(o, "--svg") || !strcmp(o, "--seed")) {
            if (!val) return usage("%s needs a value", o);
            i++;
            if (!strcmp(o, "-n") && !int_arg(val, 1, 1000, &s->n))
                return usage("-n must be an integer from 1 to 1000, not '%s'", val);
            if (!strcmp(o, "--timeout") && !int_arg(val, 1, 86400, &a->timeout))
                return usage("--timeout must be seconds from 1 to 86400, not '%s'", val);
            if (!strcmp(o, "--seed") && !int_arg(val, 0, 2147483647, &a->seed))
                return usage("--seed must be a non-negative integer, not '%s'", val);
            if (!strcmp(o, "--json")) a->json_path = val;
            if (!strcmp(o, "--svg")) a->svg_path = val;
        } else if (!strcmp(o, "--first-token")) {
            a->ft_opt = 1;
        } else if (!strcmp(o, "--no-first-token")) {
            a->ft_opt = 0;
        } else if (!strcmp(o, "--no-store")) {
            a->no_store = true;
        } else if (!strcmp(o, "-q")) {
            s->quiet = true;
        } else if (o[0] == '-' && o[1]) {
            return usage("unknown option '%s'", o);
        } else if (!s->a) {
            s->a = o;
        } else if (!s->b) {
            s->b = o;
        } else {
            return usage("unexpected argument '%s'", o);
        }
    }
    if (!s->b) return usage("%s", "which two modes? (MODE_A MODE_B)");
    if (!strcmp(s->a, s->b)) return usage("the two modes are the same ('%s')", s->a);
    s->timeout_s = a->timeout;
    return -1;
}

/* Ask the daemon for its modes: both must be configured; s gets their
 * first services, *in_a whether the daemon is in MODE_A already.  -1 to go
 * on, or the exit code to return. */
static int resolve_modes(bsw *s, bool *in_a)
{
    int rc;
    cJSON *modes = get_json(s, "/modes", &rc);
    if (!modes) return rc;
    bool fa, fb;
    s->svc_a = first_service(modes, s->a, &fa);
    s->svc_b = first_service(modes, s->b, &fb);
    if (!fa || !fb) {
        buf l = BUF_INIT;
        modes_list(&l, modes);
        fprintf(stderr,
                "gpumod bench switch: no mode '%s' is configured in the daemon (modes: %s)\n",
                !fa ? s->a : s->b, l.p);
        buf_release(&l);
        cJSON_Delete(modes);
        free(s->svc_a);
        free(s->svc_b);
        return EXIT_USAGE;
    }
    const char *cur0 = jstr(modes, "current");
    *in_a = cur0 && !strcmp(cur0, s->a);
    cJSON_Delete(modes);
    return -1;
}

/* Whether to time first tokens: --first-token, --no-first-token, or
 * whether the router listens. */
static void setup_first_token(bsw *s, int ft_opt)
{
    s->warnings = cJSON_CreateArray();
    if (ft_opt != 0) find_router(s);
    s->ft = ft_opt != 0 && s->router;
    if (ft_opt == 1 && !s->router)
        note(s, "--first-token: the router does not listen; no first-token figures");
    if (s->ft) curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The unmeasured switch to MODE_A that starts the run.  0, or the exit code. */
static int warm_up(bsw *s)
{
    if (!s->quiet) fprintf(stderr, "warm-up: switching to '%s'\n", s->a);
    int rc = run_switch(s, s->a, &s->warm);
    s->warmed = true;
    if (!rc && strcmp(s->warm.outcome, "committed")) {
        fprintf(stderr, "gpumod bench switch: the warm-up switch to '%s' ended %s: %s\n", s->a,
                s->warm.outcome, s->warm.error ? s->warm.error : "(no error given)");
        rc = EXIT_REFUSED;
    }
    return rc;
}

/* How the alternation went. */
typedef struct tally {
    int failed, fails_in_row;
    int done[2]; /* measured switches per direction */
} tally;

/* A new record at the end of s->recs (counted in s->nrec by the caller). */
static swrec *next_rec(bsw *s, size_t *cap)
{
    if (s->nrec == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        s->recs = xrealloc(s->recs, *cap * sizeof *s->recs);
    }
    return &s->recs[s->nrec];
}

/* A switch to `to` ended: its direction, whether it is measured, its line.
 * True when it committed. */
static bool judge_switch(const bsw *s, swrec *r, const char *to)
{
    bool ok = !strcmp(r->outcome, "committed");
    r->dir = !strcmp(to, s->a);
    r->measured = ok && r->from && !strcmp(r->from, r->dir ? s->b : s->a);
    if (!s->quiet)
        fprintf(stderr, "switch %lld %s -> %s: %s in %.0f ms%s%s\n", (long long)r->id, r->from,
                r->to, r->outcome, isnan(r->v[PH_TOTAL]) ? 0.0 : r->v[PH_TOTAL],
                r->error ? ": " : "", r->error ? r->error : "");
    return ok;
}

/* After a committed switch: the target mode's first token, if timed. */
static void time_first_token(bsw *s, swrec *r)
{
    const char *svc = r->dir ? s->svc_a : s->svc_b;
    if (s->ft && svc) {
        char err[512];
        r->v[PH_FT] = first_token(s, svc, err, sizeof err);
        if (isnan(r->v[PH_FT])) note(s, "switch %lld: %s", (long long)r->id, err);
    }
}

/* After a failed switch: where it left the host decides the next
 * direction (*cur).  0, or the exit code of asking the daemon. */
static int where_now(bsw *s, const char **cur)
{
    int grc;
    cJSON *m = get_json(s, "/modes/current", &grc);
    const char *now = jstr(m, "mode");
    *cur = now && !strcmp(now, s->b) ? s->b : s->a;
    if (!now || (strcmp(now, s->a) && strcmp(now, s->b)))
        *cur = s->b; /* neither: next goes to A, unmeasured */
    cJSON_Delete(m);
    return grc;
}

/* B, A, B, ... from MODE_A until each direction has n measured switches,
 * two switches failed in a row or the attempts ran out.  0, or the exit
 * code of a switch the daemon could not be asked for. */
static int alternate(bsw *s, tally *t)
{
    const char *cur = s->a;
    size_t cap = 0, attempts = 0, max_attempts = (size_t)s->n * 4 + 4;
    while ((t->done[0] < s->n || t->done[1] < s->n) && attempts++ < max_attempts) {
        const char *to = !strcmp(cur, s->a) ? s->b : s->a;
        swrec *r = next_rec(s, &cap);
        int rc = run_switch(s, to, r);
        if (rc) {
            rec_release(r);
            return rc;
        }
        s->nrec++;
        if (judge_switch(s, r, to)) {
            t->fails_in_row = 0;
            cur = to;
            if (r->measured) t->done[r->dir]++;
            time_first_token(s, r);
            continue;
        }
        t->failed++;
        if (++t->fails_in_row >= 2) {
            fprintf(stderr, "gpumod bench switch: two switches failed in a row; the run stops\n");
            return 0;
        }
        rc = where_now(s, &cur);
        if (rc) return rc;
    }
    return 0;
}

/* The table on stdout (unless the JSON goes there), then --json and --svg.
 * 0, or -1 when a file could not be written (said). */
static int write_outputs(const bsw *s, const bsw_args *a, const cJSON *doc, int failed)
{
    char *text = cJSON_Print(doc);
    buf t = BUF_INIT;
    bool json_stdout = a->json_path && !strcmp(a->json_path, "-");
    if (!json_stdout) {
        table(&t, doc, s, failed);
        fputs(t.p, stdout);
    }
    int wrc = 0;
    if (a->json_path) {
        buf j = BUF_INIT;
        buf_adds(&j, text);
        buf_addc(&j, '\n');
        wrc |= write_file(a->json_path, j.p, j.len);
        buf_release(&j);
    }
    if (a->svg_path) {
        buf svg = BUF_INIT;
        breport_svg(&svg, doc);
        wrc |= write_file(a->svg_path, svg.p, svg.len);
        buf_release(&svg);
    }
    free(text);
    buf_release(&t);
    return wrc;
}

/* Post the document to the daemon's result store (it says where). */
static void store_doc(const bsw *s, cJSON *doc)
{
    int64_t id;
    char err[512];
    int src = bstore_post(doc, CTL_QUICK_MS * 2, &id, err, sizeof err);
    if (src < 0)
        fprintf(stderr, "gpumod bench switch: %s\n", err);
    else if (!src && !s->quiet)
        fprintf(stderr, "stored as result %lld (GET /results/%lld)\n", (long long)id,
                (long long)id);
}

static void bsw_release(bsw *s)
{
    for (size_t i = 0; i < s->nrec; i++)
        rec_release(&s->recs[i]);
    free(s->recs);
    if (s->warmed) rec_release(&s->warm);
    cJSON_Delete(s->warnings);
    free(s->router);
    free(s->auth);
    free(s->svc_a);
    free(s->svc_b);
    if (s->ft) curl_global_cleanup();
}

int bswitch_main(int argc, char **argv)
{
    bsw s = {.n = 5};
    bsw_args a = {.ft_opt = -1, .seed = 1};
    int rc = parse_args(argc, argv, &s, &a);
    if (rc >= 0) return rc;
    bool in_a = false;
    rc = resolve_modes(&s, &in_a);
    if (rc >= 0) return rc;
    setup_first_token(&s, a.ft_opt);

    char started[40];
    rfc3339_now(started, sizeof started);
    tally t = {0};
    rc = in_a ? 0 : warm_up(&s);
    if (!rc) rc = alternate(&s, &t);
    if (!rc && (t.done[0] < s.n || t.done[1] < s.n) && t.fails_in_row < 2)
        note(&s, "the run ended with %d and %d measured switches of the %ld asked each way",
             t.done[0], t.done[1], s.n);

    cJSON *doc = build_doc(&s, argc, argv, started, (uint64_t)a.seed, t.failed);
    int wrc = write_outputs(&s, &a, doc, t.failed);
    if (!a.no_store && s.nrec && rc != EXIT_DAEMON) store_doc(&s, doc);
    cJSON_Delete(doc);
    bsw_release(&s);
    if (rc) return rc;
    if (wrc) return EXIT_REFUSED;
    return t.failed ? EXIT_REFUSED : 0;
}
