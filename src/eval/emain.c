/* emain.c - `gpumod eval ...` (docs/eval.md): the options of a run, parsed
 * strictly, the run, its outputs and the daemon's copy; golden mode; and
 * the subcommands compare, list, show and report.
 *
 * Every figure goes into one result document first; the terminal table,
 * CSV, Markdown, SVG, the daemon's store and `compare` all read that
 * document, so what a user sees is what was saved. */
#include "eval/erun.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/ctl.h"
#include "eval/ecompare.h"
#include "eval/score.h"
#include "model/gguf.h"
#include "oai/docfile.h"
#include "oai/fetch.h"
#include "oai/store.h"
#include "oai/target.h"
#include "util/clock.h"
#include "util/opt.h"
#include "util/sha256.h"

enum { EX_OK = 0, EX_FAILED = 1, EX_USAGE = 2, EX_INTERRUPTED = 130 };

/* what the daemon's copy keeps of prompts and replies (its limit is 16 MiB) */
#define STORE_TEXT_CAP (4u << 20)
#define TABLE_ROWS 100

static volatile int interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static const char usage_text[] =
    "usage: gpumod eval TARGET --suite PATH [options]\n"
    "       gpumod eval compare A.json B.json [--json]\n"
    "       gpumod eval list [-n N] [--json]\n"
    "       gpumod eval show ID [--json] [--md] [--csv FILE] [--svg FILE]\n"
    "       gpumod eval report RESULT.json [B.json ...] [--md] [--csv FILE] [--svg FILE]\n"
    "\n"
    "TARGET: a service id or model name (through the daemon's router), or an\n"
    "http(s):// base URL.\n"
    "\n"
    "Run options:\n"
    "  --suite PATH          a YAML or JSONL suite, or a directory of them (required)\n"
    "  -k N                  repetitions of every item, seeds S..S+N-1 (default 1)\n"
    "  --seed S              the first repetition's seed, sent as \"seed\" (default 1)\n"
    "  --concurrency C       items in flight (default 8)\n"
    "  --timeout S           each request's deadline in seconds (default 600)\n"
    "  --max-tokens N        for items without their own (default 2048)\n"
    "  --temperature T       (default 0)\n"
    "  --judge TARGET        the model that scores judge items (a service, model or URL)\n"
    "  --golden FILE         regression mode: concurrency 1, temperature 0, one seed;\n"
    "                        records FILE when missing, else reports what changed\n"
    "  --model NAME          the model sent (URL targets: default the first listed)\n"
    "  --api-key-env VAR     the API key's variable (default OPENAI_API_KEY;\n"
    "                        router targets: router.api_keys_env)\n"
    "Output options:\n"
    "  --json FILE (- stdout)  the result document   --csv FILE  a row per item x repetition\n"
    "  --md                    Markdown summary      --svg FILE  accuracy with intervals\n"
    "  --no-store              not to the daemon     -q          no progress line\n"
    "Exit: 0 done, 1 failed (unreachable; every item an error; compare: B is worse;\n"
    "golden: an output changed), 2 usage or a suite error, 3 a service name but no\n"
    "daemon, 130 interrupted.\n";

static void vsay(const char *fmt, va_list ap)
{
    fputs("gpumod: eval: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

static int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    fputs("usage: gpumod eval TARGET --suite PATH [options]; see 'gpumod eval --help'\n", stderr);
    return EX_USAGE;
}

/* ---- options ------------------------------------------------------------------ */

typedef struct eopts {
    const char *target, *suite, *judge, *golden, *model, *api_key_env;
    long k, concurrency, max_tokens;
    uint64_t seed;
    double timeout_s, temperature;
    const char *json_path, *csv_path, *svg_path;
    bool md, no_store, quiet, seed_given, k_given, conc_given, temp_given;
    int argc;
    char **argv;
} eopts;

static int p_long(const char *opt, const char *v, long lo, long hi, long *out)
{
    if (opt_long(v, lo, hi, out)) return fail_usage("%s '%s': expected an integer from %ld to %ld", opt, v, lo, hi);
    return 0;
}

static int p_double(const char *opt, const char *v, double lo, double hi, double *out)
{
    if (opt_double(v, lo, hi, out)) return fail_usage("%s '%s': expected a number from %g to %g", opt, v, lo, hi);
    return 0;
}

static int set_value(eopts *o, const char *opt, const char *v)
{
    long x;
    if (!strcmp(opt, "--suite")) o->suite = v;
    else if (!strcmp(opt, "--judge")) o->judge = v;
    else if (!strcmp(opt, "--golden")) o->golden = v;
    else if (!strcmp(opt, "--model")) o->model = v;
    else if (!strcmp(opt, "--api-key-env")) o->api_key_env = v;
    else if (!strcmp(opt, "--json")) o->json_path = v;
    else if (!strcmp(opt, "--csv")) o->csv_path = v;
    else if (!strcmp(opt, "--svg")) o->svg_path = v;
    else if (!strcmp(opt, "-k")) {
        if (p_long("-k", v, 1, 1000, &o->k)) return -1;
        o->k_given = true;
    } else if (!strcmp(opt, "--seed")) {
        if (p_long("--seed", v, 0, 2147483647L, &x)) return -1;
        o->seed = (uint64_t)x;
        o->seed_given = true;
    } else if (!strcmp(opt, "--concurrency")) {
        if (p_long("--concurrency", v, 1, 4096, &o->concurrency)) return -1;
        o->conc_given = true;
    } else if (!strcmp(opt, "--max-tokens")) {
        if (p_long("--max-tokens", v, 1, 1048576, &o->max_tokens)) return -1;
    } else if (!strcmp(opt, "--timeout")) {
        if (p_double("--timeout", v, 0.001, 86400, &o->timeout_s)) return -1;
    } else if (!strcmp(opt, "--temperature")) {
        if (p_double("--temperature", v, 0, 2, &o->temperature)) return -1;
        o->temp_given = true;
    }
    return 0;
}

static const char *const value_opts[] = {"--suite", "--judge", "--golden",    "--model",   "--api-key-env",
                                         "--json",  "--csv",   "--svg",       "-k",        "--seed",
                                         "--concurrency",      "--max-tokens", "--timeout", "--temperature",
                                         NULL};

static int parse_run(int argc, char **argv, eopts *o)
{
    *o = (eopts){.k = 1, .concurrency = 8, .max_tokens = 2048, .seed = 1, .timeout_s = 600, .argc = argc,
                 .argv = argv};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--md")) o->md = true;
        else if (!strcmp(a, "--no-store")) o->no_store = true;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->quiet = true;
        else if (a[0] == '-' && a[1]) {
            int r = 0;
            const char *const *opt;
            for (opt = value_opts; *opt && !(r = opt_value(argc, argv, &i, *opt, &v)); opt++) {}
            if (!*opt) return fail_usage("unknown option '%s'", a);
            if (r < 0) return fail_usage("option '%s' needs a value", *opt);
            if (set_value(o, *opt, v)) return EX_USAGE;
        } else if (o->target) {
            return fail_usage("one target, not '%s' too", a);
        } else {
            o->target = a;
        }
    }
    if (!o->target) return fail_usage("which model? gpumod eval TARGET --suite PATH");
    if (!o->suite) return fail_usage("--suite PATH is required (a YAML or JSONL suite, or a directory of them)");
    if (o->golden) {
        if ((o->k_given && o->k != 1) || (o->conc_given && o->concurrency != 1) ||
            (o->temp_given && o->temperature != 0))
            return fail_usage("--golden runs at concurrency 1, temperature 0 and one seed: leave out -k, "
                              "--concurrency and --temperature (or give 1, 1 and 0)");
        o->k = 1, o->concurrency = 1, o->temperature = 0;
    }
    return 0;
}

/* ---- progress ------------------------------------------------------------------ */

static void progress(void *ud, const erun_progress *p)
{
    size_t judged = p->pass + p->fail;
    double eta = p->done ? p->elapsed_s * (double)(p->total - p->done) / (double)p->done : NAN;
    fprintf(stderr, "\reval: %zu/%zu items, %zu passed", p->done, p->total, p->pass);
    if (judged) fprintf(stderr, " (%.1f %%)", 100.0 * (double)p->pass / (double)(p->done ? p->done : 1));
    if (p->error) fprintf(stderr, ", %zu errors", p->error);
    if (isfinite(eta))
        fprintf(stderr, ", %.0fs elapsed, ETA %.0fs\033[K", p->elapsed_s, eta);
    else
        fprintf(stderr, ", %.0fs elapsed\033[K", p->elapsed_s);
}

/* ---- the document ---------------------------------------------------------------- */

static void warn(cJSON *doc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(cJSON *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *w = xvasprintf(fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(doc, "warnings"), cJSON_CreateString(w));
    free(w);
}

static cJSON *doc_new(const eopts *o, const eval_suite *s, int64_t started)
{
    cJSON *d = docfile_new(EVAL_SCHEMA, "eval", "eval", started, o->argc, o->argv);
    cJSON *su = cJSON_AddObjectToObject(d, "suite");
    cJSON_AddStringToObject(su, "name", s->name);
    cJSON_AddStringToObject(su, "path", s->path);
    if (s->description)
        cJSON_AddStringToObject(su, "description", s->description);
    else
        cJSON_AddNullToObject(su, "description");
    cJSON_AddNumberToObject(su, "items", (double)s->n_items);
    cJSON *st = cJSON_AddObjectToObject(d, "settings");
    cJSON_AddNumberToObject(st, "k", (double)o->k);
    cJSON_AddNumberToObject(st, "seed", (double)o->seed);
    cJSON_AddNumberToObject(st, "concurrency", (double)o->concurrency);
    cJSON_AddNumberToObject(st, "timeout_s", o->timeout_s);
    cJSON_AddNumberToObject(st, "max_tokens", (double)o->max_tokens);
    cJSON_AddNumberToObject(st, "temperature", o->temperature);
    if (o->golden)
        cJSON_AddStringToObject(st, "golden", o->golden);
    else
        cJSON_AddNullToObject(st, "golden");
    cJSON_AddArrayToObject(d, "warnings");
    return d;
}

/* the context the suite needs (its largest prompt as the server counted
 * it plus that item's budget) against the server's; counts the records
 * whose prompt + budget do not fit */
static void context_check(cJSON *doc, const eopts *o, const eval_suite *s, const erun_result *r, long n_ctx,
                          const char *service)
{
    long need = -1, prompt = -1;
    size_t over = 0;
    for (size_t i = 0; i < r->n; i++) {
        const erec *e = &r->recs[i];
        if (!e->settled || e->n_in < 0) continue;
        long mt = s->items[e->item].max_tokens > 0 ? (long)s->items[e->item].max_tokens : o->max_tokens;
        if (e->n_in + mt > need) need = e->n_in + mt, prompt = e->n_in;
        if (n_ctx > 0 && e->n_in + mt > n_ctx) over++;
    }
    cJSON *sum = cJSON_AddObjectToObject(doc, "summary");
    cJSON_AddNumberToObject(sum, "length_hits", (double)r->length_hits);
    cJSON_AddNumberToObject(sum, "context_hits", (double)over);
    cJSON *c = cJSON_AddObjectToObject(sum, "context");
    if (n_ctx > 0) cJSON_AddNumberToObject(c, "server", (double)n_ctx);
    else cJSON_AddNullToObject(c, "server");
    if (need > 0) {
        cJSON_AddNumberToObject(c, "needed", (double)need);
        cJSON_AddNumberToObject(c, "largest_prompt_tokens", (double)prompt);
    } else {
        cJSON_AddNullToObject(c, "needed");
        cJSON_AddNullToObject(c, "largest_prompt_tokens");
    }
    if (r->length_hits)
        warn(doc, "%zu answers stopped at max_tokens (finish_reason \"length\"): raise --max-tokens or the "
                  "items' max_tokens", r->length_hits);
    if (over && service)
        warn(doc, "the suite needs a context of %ld tokens (largest prompt %ld + its max_tokens), the server has "
                  "%ld: %zu records do not fit (gpumod service restart %s --ctx %ld)", need, prompt, n_ctx, over,
             service, need);
    else if (over)
        warn(doc, "the suite needs a context of %ld tokens (largest prompt %ld + its max_tokens), the server has "
                  "%ld: %zu records do not fit (start the server with a larger context)", need, prompt, n_ctx, over);
}

static void client_figures(cJSON *doc, const erun_result *r)
{
    cJSON *c = cJSON_AddObjectToObject(doc, "client");
    cJSON_AddNumberToObject(c, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(c, "cpu_s", r->cpu_s);
    double n = (double)(r->settled ? r->settled : 1);
    cJSON_AddNumberToObject(c, "items_per_s", r->wall_s > 0 ? (double)r->settled / r->wall_s : 0);
    cJSON_AddNumberToObject(c, "cpu_ms_per_item", 1000 * r->cpu_s / n);
    double pct = r->wall_s > 0 ? 100 * r->cpu_s / r->wall_s : 0;
    cJSON_AddNumberToObject(c, "cpu_pct", pct);
    cJSON_AddNumberToObject(c, "max_in_flight", (double)r->max_in_flight);
    /* bench's rule (docs/bench.md "self_check"): over 85 % of a core and
     * the client, not the server, sets the pace; judged on runs of 1 s+ */
    cJSON_AddBoolToObject(c, "client_bound", r->wall_s >= 1 && pct > 85);
}

static cJSON *build_doc(const eopts *o, const eval_suite *s, const btarget *t, const btarget *judge,
                        const erun_result *r, int64_t started)
{
    cJSON *d = doc_new(o, s, started);
    cJSON_AddItemToObject(d, "target", btarget_json(t));
    cJSON_AddItemToObject(d, "judge", judge ? btarget_json(judge) : cJSON_CreateNull());
    cJSON *items = cJSON_AddArrayToObject(d, "items");
    for (size_t i = 0; i < r->n; i++)
        if (r->recs[i].settled) cJSON_AddItemToArray(items, erec_json(&s->items[r->recs[i].item], &r->recs[i]));
    context_check(d, o, s, r, btarget_ctx(t), t->service);
    client_figures(d, r);
    char ts[40];
    clock_rfc3339(clock_unix_ms(), ts, sizeof ts);
    cJSON_ReplaceItemInObjectCaseSensitive(d, "finished", cJSON_CreateString(ts));
    if (r->settled < r->n) warn(d, "interrupted after %zu of %zu records: the figures are over those", r->settled, r->n);
    eresult_summarize(d);
    return d;
}

/* ---- golden ---------------------------------------------------------------------- */

/* The model file's size, mtime and the SHA-256 of its GGUF header (bytes
 * before the tensor data; never the whole file), or why not. */
static cJSON *model_file(const char *path)
{
    cJSON *m = cJSON_CreateObject();
    struct stat st;
    char err[300] = "";
    if (!path || !*path) {
        snprintf(err, sizeof err, "the server names no model file");
    } else if (stat(path, &st) != 0) {
        snprintf(err, sizeof err, "'%s' is not readable here: %s", path, strerror(errno));
    } else {
        cJSON_AddNumberToObject(m, "size", (double)st.st_size);
        cJSON_AddNumberToObject(m, "mtime", (double)st.st_mtime);
        gguf_file g;
        memset(&g, 0, sizeof g);
        FILE *f = NULL;
        if (gguf_open(&g, path, err, sizeof err) == 0 && (f = fopen(path, "rb"))) {
            sha256_ctx c;
            sha256_init(&c);
            char chunk[65536];
            uint64_t left = g.data_offset;
            size_t n;
            while (left && (n = fread(chunk, 1, left < sizeof chunk ? (size_t)left : sizeof chunk, f)) > 0) {
                sha256_update(&c, chunk, n);
                left -= n;
            }
            uint8_t h[32];
            sha256_final(&c, h);
            char hex[65];
            for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
            cJSON_AddNumberToObject(m, "header_bytes", (double)g.data_offset);
            cJSON_AddStringToObject(m, "header_sha256", hex);
        } else if (!err[0]) {
            snprintf(err, sizeof err, "cannot open '%s': %s", path, strerror(errno));
        }
        if (f) fclose(f);
        gguf_release(&g);
    }
    if (err[0]) {
        cJSON_AddBoolToObject(m, "readable", false);
        cJSON_AddStringToObject(m, "reason", err);
    }
    return m;
}

static cJSON *identity(const btarget *t)
{
    cJSON *id = cJSON_CreateObject();
    const char *keys[] = {"build_info", "model_path", "version", "model_id"};
    for (size_t i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->identity, keys[i]);
        if (v) cJSON_AddItemToObject(id, keys[i], cJSON_Duplicate(v, true));
    }
    cJSON_AddStringToObject(id, "flavor", t->flavor ? t->flavor : "unknown");
    cJSON_AddStringToObject(id, "model", t->model);
    const char *mp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t->identity, "model_path"));
    cJSON_AddItemToObject(id, "model_file", model_file(mp));
    return id;
}

/* record the golden file, or compare with it: the exit code */
static int golden_step(const eopts *o, const eval_suite *s, const erun_result *r, const btarget *t)
{
    cJSON *now = golden_doc(s, r->recs, r->n, o->seed, o->max_tokens, identity(t));
    char err[600];
    int rc = EX_OK;
    if (access(o->golden, F_OK) != 0) {
        char *txt = cJSON_Print(now);
        buf b = BUF_INIT;
        buf_printf(&b, "%s\n", txt);
        free(txt);
        if (docfile_write(o->golden, &b, "golden file", err, sizeof err)) {
            say("%s", err);
            rc = EX_FAILED;
        } else {
            say("golden: recorded %d items and the server's identity in '%s'",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(now, "items")), o->golden);
        }
        buf_release(&b);
        cJSON_Delete(now);
        return rc;
    }
    cJSON *was = docfile_read(o->golden, err, sizeof err);
    buf rep = BUF_INIT;
    size_t nd = 0;
    bool ident = false;
    if (!was || golden_diff(was, now, &rep, &nd, &ident, err, sizeof err)) {
        say("golden: %s", err);
        rc = EX_USAGE;
    } else {
        fwrite(rep.p, 1, rep.len, stdout);
        printf("golden: %zu of %d items no longer byte-identical; the server's identity %s\n", nd,
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(now, "items")), ident ? "changed" : "is the same");
        rc = nd ? EX_FAILED : EX_OK;
    }
    fflush(stdout);
    buf_release(&rep);
    cJSON_Delete(was);
    cJSON_Delete(now);
    return rc;
}

/* ---- outputs -------------------------------------------------------------------- */

static int render(const cJSON *doc, const char *json, const char *csv, const char *svg, bool md, bool table)
{
    int rc = 0;
    char err[600];
    buf b = BUF_INIT;
    if (json) {
        char *s = cJSON_Print(doc);
        buf_printf(&b, "%s\n", s);
        free(s);
        if (docfile_write(json, &b, "result", err, sizeof err)) say("%s", err), rc = -1;
        buf_clear(&b);
    }
    if (csv) {
        ereport_csv(&b, doc);
        if (docfile_write(csv, &b, "CSV", err, sizeof err)) say("%s", err), rc = -1;
        buf_clear(&b);
    }
    if (svg) {
        ereport_svg(&b, &doc, 1);
        if (docfile_write(svg, &b, "SVG", err, sizeof err)) say("%s", err), rc = -1;
        buf_clear(&b);
    }
    if (md)
        ereport_md(&b, doc);
    else if (table)
        ereport_table(&b, doc, TABLE_ROWS);
    fwrite(b.p, 1, b.len, stdout);
    fflush(stdout);
    buf_release(&b);
    return rc;
}

/* the full document beside the daemon's copy when that one is cut: the
 * --json file, else one under the state directory */
static char *full_copy(const cJSON *doc, const char *json_path, int64_t started)
{
    char *abs = NULL;
    if (json_path && strcmp(json_path, "-")) return realpath(json_path, NULL);
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    config_load_settings(&cfg, NULL);
    if (cfg.set.state_dir) {
        char *dir = xasprintf("%s/eval", cfg.set.state_dir);
        mkdir(cfg.set.state_dir, 0700);
        mkdir(dir, 0700);
        abs = xasprintf("%s/eval-%lld-%d.json", dir, (long long)started, (int)getpid());
        free(dir);
        char *s = cJSON_Print(doc);
        buf b = BUF_INIT;
        buf_adds(&b, s);
        free(s);
        char err[600];
        if (docfile_write(abs, &b, "full result", err, sizeof err)) {
            say("warning: %s", err);
            free(abs);
            abs = NULL;
        }
        buf_release(&b);
    }
    config_release(&cfg);
    return abs;
}

static void store(const cJSON *doc, const char *json_path, int64_t started)
{
    cJSON *copy = eresult_for_store(doc, STORE_TEXT_CAP, NULL);
    double cut = cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "detail"), "records_cut"));
    if (cut > 0) {
        cJSON_Delete(copy);
        char *full = full_copy(doc, json_path, started);
        copy = eresult_for_store(doc, STORE_TEXT_CAP, full);
        free(full);
    }
    int64_t id = 0;
    char err[400] = "";
    int rc = bstore_post(copy, 5000, &id, err, sizeof err);
    if (rc < 0)
        say("warning: the result was not stored by the daemon: %s", err);
    else if (rc == 0)
        say("stored as result %lld (gpumod eval show %lld)", (long long)id, (long long)id);
    cJSON_Delete(copy);
}

/* ---- the run ---------------------------------------------------------------------- */

static int load_suite(eval_suite *s, const char *path)
{
    int rc = suite_load(s, path);
    if (s->diags.n) {
        buf b = BUF_INIT;
        diags_text(&b, &s->diags, NULL);
        fwrite(b.p, 1, b.len, stderr);
        buf_release(&b);
    }
    if (rc) say("the suite '%s' has errors: nothing was sent", path);
    return rc ? EX_USAGE : 0;
}

static int resolve(btarget *t, const eopts *o, const char *spec, const char *model)
{
    btarget_opts to = {"eval", spec, model, o->api_key_env, false, o->timeout_s};
    char err[1024] = "";
    int rc = btarget_resolve(t, &to, err, sizeof err);
    if (rc) {
        if (interrupted && rc != EX_USAGE) {
            say("interrupted before the run (nothing was sent)");
            return EX_INTERRUPTED;
        }
        fprintf(stderr, "gpumod: %s\n", err);
    }
    return rc;
}

/* the run itself, with its targets resolved: the exit code */
static int run_targets(const eopts *o, const eval_suite *s, btarget *t, btarget *jt, int64_t started)
{
    char *url = xasprintf("%s%s", t->base_url, t->endpoint);
    char *jurl = jt ? xasprintf("%s%s", jt->base_url, jt->endpoint) : NULL;
    erun_opts ro = {.suite = s,
                    .k = (unsigned)o->k,
                    .seed = o->seed,
                    .concurrency = (int)o->concurrency,
                    .timeout_s = o->timeout_s,
                    .max_tokens = o->max_tokens,
                    .temperature = o->temperature,
                    .url = url,
                    .headers = btarget_headers(t),
                    .model = t->model,
                    .judge_url = jurl,
                    .judge_headers = jt ? btarget_headers(jt) : NULL,
                    .judge_model = jt ? jt->model : NULL,
                    .progress = isatty(2) && !o->quiet ? progress : NULL,
                    .interrupted = &interrupted};
    erun_result r;
    char err[600];
    int rc = erun(&ro, &r, err, sizeof err);
    if (ro.progress) fputs("\r\033[K", stderr);
    free(url);
    free(jurl);
    if (rc) {
        say("%s", err);
        return EX_FAILED;
    }
    cJSON *doc = build_doc(o, s, t, jt, &r, started);
    bool stdout_json = o->json_path && !strcmp(o->json_path, "-");
    rc = render(doc, o->json_path, o->csv_path, o->svg_path, o->md && !stdout_json, !stdout_json) ? EX_FAILED : EX_OK;
    const cJSON *w;
    if (stdout_json || o->md)
        cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "warnings")) say("warning: %s", w->valuestring);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(doc, "summary");
    double errors = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "error"));
    double records = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "records"));
    bool all_errors = r.settled > 0 && errors == records;
    if (!o->no_store && r.settled && !all_errors) store(doc, o->json_path, started);
    if (o->golden && !interrupted && rc == EX_OK) rc = golden_step(o, s, &r, t);
    if (interrupted) {
        say("interrupted");
        rc = EX_INTERRUPTED;
    } else if (rc == EX_OK && (all_errors || !r.settled)) {
        say("every item was an error (first: %s)", r.n && r.recs[0].error ? r.recs[0].error : "no reply");
        rc = EX_FAILED;
    }
    cJSON_Delete(doc);
    erun_release(&r);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    eopts o;
    int rc = parse_run(argc, argv, &o);
    if (rc) return rc;
    char err[600];
    const char *opts[] = {"--json", "--csv", "--svg"}, *paths[] = {o.json_path, o.csv_path, o.svg_path};
    for (int i = 0; i < 3; i++)
        if (docfile_writable(opts[i], paths[i], err, sizeof err)) {
            say("%s", err);
            return EX_USAGE;
        }
    eval_suite s;
    if ((rc = load_suite(&s, o.suite))) {
        suite_release(&s);
        return rc;
    }
    size_t judged = 0;
    for (size_t i = 0; i < s.n_items; i++) judged += s.items[i].scorer == SC_JUDGE;
    if (judged && !o.judge) {
        suite_release(&s);
        return fail_usage("the suite has %zu judge items: give --judge TARGET (a service, model or URL)", judged);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    bfetch_limit(&interrupted, (int64_t)(o.timeout_s * 1000));
    int64_t started = clock_unix_ms();
    btarget t, jt;
    memset(&jt, 0, sizeof jt);
    rc = resolve(&t, &o, o.target, o.model);
    if (!rc && o.judge) rc = resolve(&jt, &o, o.judge, NULL);
    if (!rc) rc = run_targets(&o, &s, &t, o.judge ? &jt : NULL, started);
    btarget_release(&t);
    btarget_release(&jt);
    suite_release(&s);
    return rc;
}

/* ---- compare, report, list, show ----------------------------------------------------------- */

static cJSON *read_eval(const char *path)
{
    char err[600];
    cJSON *j = docfile_read(path, err, sizeof err);
    if (!j) {
        say("%s", err);
        return NULL;
    }
    const char *schema = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "schema"));
    if (!schema || strcmp(schema, EVAL_SCHEMA)) {
        say("'%s': not an eval result (expected \"schema\": \"%s\")", path, EVAL_SCHEMA);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL};
    int nf = 0;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return fail_usage("compare: unknown option '%s' (expected --json)", argv[i]);
        else if (nf == 2)
            return fail_usage("compare: two result files, not '%s' too", argv[i]);
        else
            files[nf++] = argv[i];
    }
    if (nf < 2) return fail_usage("compare: gpumod eval compare A.json B.json [--json]");
    cJSON *a = read_eval(files[0]), *b = a ? read_eval(files[1]) : NULL;
    int rc = EX_USAGE;
    ecmp m;
    char err[400];
    if (a && b && ecompare(a, b, &m, err, sizeof err)) {
        say("compare %s %s: %s", files[0], files[1], err);
    } else if (a && b) {
        buf out = BUF_INIT;
        if (json) {
            cJSON *j = ecompare_json(&m);
            char *s = cJSON_Print(j);
            buf_printf(&out, "%s\n", s);
            free(s);
            cJSON_Delete(j);
        } else {
            ecompare_render(&out, &m, files[0], files[1]);
        }
        fwrite(out.p, 1, out.len, stdout);
        buf_release(&out);
        rc = ecompare_worse(&m) ? EX_FAILED : EX_OK;
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    return rc;
}

/* report and show: render documents (several: the SVG draws them all) */
static int render_many(cJSON **docs, int n, const char *csv, const char *svg, bool md, bool json)
{
    int rc = render(docs[0], json ? "-" : NULL, csv, NULL, md, !csv && !svg && !json);
    if (svg) {
        buf b = BUF_INIT;
        char err[600];
        ereport_svg(&b, (const cJSON *const *)docs, (size_t)n);
        if (docfile_write(svg, &b, "SVG", err, sizeof err)) say("%s", err), rc = -1;
        buf_release(&b);
    }
    return rc ? EX_FAILED : EX_OK;
}

static int cmd_report(int argc, char **argv)
{
    const char *csv = NULL, *svg = NULL;
    bool md = false;
    cJSON *docs[16];
    int n = 0, rc = EX_OK;
    for (int i = 1; i < argc && rc == EX_OK; i++) {
        const char *v;
        int r;
        if (!strcmp(argv[i], "--md")) {
            md = true;
        } else if ((r = opt_value(argc, argv, &i, "--csv", &v)) || (r = opt_value(argc, argv, &i, "--svg", &v))) {
            if (r < 0) rc = fail_usage("option '%s' needs a value", argv[i]);
            else if (!strncmp(argv[i - 1], "--csv", 5) || !strncmp(argv[i], "--csv=", 6)) csv = v;
            else svg = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            rc = fail_usage("report: unknown option '%s' (expected --md, --csv FILE, --svg FILE)", argv[i]);
        } else if (n == 16) {
            rc = fail_usage("report: at most 16 result files");
        } else if (!(docs[n] = read_eval(argv[i]))) {
            rc = EX_USAGE;
        } else {
            n++;
        }
    }
    if (rc == EX_OK && !n) rc = fail_usage("report: which result? gpumod eval report RESULT.json [--md] [--csv FILE] [--svg FILE]");
    if (rc == EX_OK) rc = render_many(docs, n, csv, svg, md, false);
    for (int i = 0; i < n; i++) cJSON_Delete(docs[i]);
    return rc;
}

/* GET path from the daemon: the parsed body of a 200, else NULL with *rc */
static cJSON *daemon_get(const char *path, int *rc)
{
    config_paths paths = {0};
    http_reply r = {0};
    *rc = ctl_call(&paths, "GET", path, NULL, CTL_QUICK_MS, false, &r);
    cJSON *j = NULL;
    if (!*rc) {
        j = cJSON_ParseWithLength(r.body.p, r.body.len);
        if (r.status != 200) {
            const char *m = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"), "message"));
            say("%s", m ? m : "the daemon answered an error");
            *rc = r.status == 404 || r.status == 400 ? EX_USAGE : EX_FAILED;
            cJSON_Delete(j);
            j = NULL;
        }
    }
    http_reply_release(&r);
    return j;
}

static void list_row(const cJSON *x)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(x, "summary");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(s, "accuracy");
    printf("%-5g %-25s %-14s %-20s %5g/%-5g %6.1f %% [%.1f, %.1f]\n", cJSON_GetNumberValue(cJSON_GetObjectItem(x, "id")),
           cJSON_GetStringValue(cJSON_GetObjectItem(x, "ts")) ?: "-",
           cJSON_GetStringValue(cJSON_GetObjectItem(s, "suite")) ?: "-",
           cJSON_GetStringValue(cJSON_GetObjectItem(x, "target")) ?: "-",
           cJSON_GetNumberValue(cJSON_GetObjectItem(s, "pass")), cJSON_GetNumberValue(cJSON_GetObjectItem(s, "records")),
           100 * cJSON_GetNumberValue(cJSON_GetObjectItem(a, "est")),
           100 * cJSON_GetNumberValue(cJSON_GetObjectItem(a, "lo")),
           100 * cJSON_GetNumberValue(cJSON_GetObjectItem(a, "hi")));
}

static int cmd_list(int argc, char **argv)
{
    long n = 20;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (!strcmp(argv[i], "--json")) json = true;
        else if ((r = opt_value(argc, argv, &i, "-n", &v))) {
            if (r < 0) return fail_usage("option '-n' needs a value");
            if (p_long("-n", v, 1, 1000, &n)) return EX_USAGE;
        } else
            return fail_usage("list: unexpected '%s' (expected -n N, --json)", argv[i]);
    }
    char path[64];
    snprintf(path, sizeof path, "/results?kind=eval&n=%ld", n);
    int rc;
    cJSON *j = daemon_get(path, &rc);
    if (!j) return rc;
    if (json) {
        char *s = cJSON_Print(j);
        printf("%s\n", s);
        free(s);
    } else {
        printf("%-5s %-25s %-14s %-20s %-11s %s\n", "id", "stored", "suite", "target", "passed", "accuracy (95 % CI)");
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "results")) list_row(x);
    }
    cJSON_Delete(j);
    return EX_OK;
}

static int cmd_show(int argc, char **argv)
{
    const char *id = NULL, *csv = NULL, *svg = NULL;
    bool json = false, md = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--md")) md = true;
        else if ((r = opt_value(argc, argv, &i, "--csv", &v))) {
            if (r < 0) return fail_usage("option '--csv' needs a value");
            csv = v;
        } else if ((r = opt_value(argc, argv, &i, "--svg", &v))) {
            if (r < 0) return fail_usage("option '--svg' needs a value");
            svg = v;
        } else if (argv[i][0] == '-' || id)
            return fail_usage("show: unexpected '%s' (gpumod eval show ID [--json] [--md])", argv[i]);
        else id = argv[i];
    }
    if (!id || strspn(id, "0123456789") != strlen(id) || !*id)
        return fail_usage("show: which result? gpumod eval show ID (a number from gpumod eval list)");
    char path[64];
    snprintf(path, sizeof path, "/results/%.20s", id);
    int rc;
    cJSON *j = daemon_get(path, &rc);
    if (!j) return rc;
    const char *schema = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "schema"));
    if (!schema || strcmp(schema, EVAL_SCHEMA)) {
        say("result %s is not an eval result (it is '%s': see gpumod bench)", id, schema ? schema : "?");
        cJSON_Delete(j);
        return EX_USAGE;
    }
    rc = render_many(&j, 1, csv, svg, md, json);
    cJSON_Delete(j);
    return rc;
}

int eval_main(int argc, char **argv)
{
    static const opt_sub subs[] = {{"compare", cmd_compare}, {"report", cmd_report}, {"list", cmd_list}, {"show", cmd_show}, {NULL, NULL}};
    return opt_dispatch(argc, argv, usage_text, subs, cmd_run);
}
