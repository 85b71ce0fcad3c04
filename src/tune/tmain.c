/* tmain.c (tune) - `gpumod tune`: its options, the run, its outputs
 * (tune.h, docs/tune.md). */
#include "tune/tune.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/ctl.h"
#include "tune/tfile.h"
#include "config/config.h"
#include "config/yaml.h"
#include "oai/docfile.h"
#include "oai/store.h"
#include "util/buf.h"
#include "config/schema.h"
#include "util/exitcode.h"
#include "util/opt.h"

int tune_main(int argc, char **argv);

static const char usage_text[] =
    "usage: gpumod tune SERVICE [--param KEY=V1,V2,...]... [--env NAME=V1,V2,...]... [options]\n"
    "       gpumod tune --abort             (no other argument)\n"
    "\n"
    "The search space (at least one dimension):\n"
    "  --param KEY=V1,V2      a preset key (threads, batch_size, ubatch_size, cache_type_k,\n"
    "                         flash_attn, parallel, n_gpu_layers, context_size, ...)\n"
    "  --env NAME=V1,V2       an environment variable of the engine\n"
    "  --file FILE            a YAML file whose `tune:` section gives params, env and options\n"
    "Search:\n"
    "  --strategy S           grid (every combination, default), coord (one key at a time\n"
    "                         from the best so far) or propose (--proposer picks each change)\n"
    "  --passes N             coord: passes over the keys at most (default 2)\n"
    "  --proposer URL         an OpenAI-compatible endpoint; --proposer-model NAME,\n"
    "                         --proposer-key-env VAR, --max-proposals N (default 10)\n"
    "Judging:\n"
    "  --objective O          throughput (default), engine_tps, tpot, ttft, goodput, score;\n"
    "                         with --engine-bench: engine_tps (default, tg) or prefill (pp)\n"
    "  --weights M=W,...      score: weights of throughput, engine_tps, tpot, ttft, goodput\n"
    "  --slo ttft=MS,tpot=MS  goodput's SLO (gpumod bench --slo)\n"
    "  --min-gain G           the smallest gain that counts: 2% (default) or absolute (5)\n"
    "  --alpha A              family-wise error over the run (default 0.05)\n"
    "  --rounds N             measured pairs per comparison, A B B A ... (default 5, >= 2)\n"
    "  --quality SUITE        an eval suite: a variant worse than its reference is UNSAFE\n"
    "  --max-memory MB        GPU memory budget: a variant over it is SKIPPED or UNSAFE\n"
    "Load (gpumod bench's): --concurrency C (1), --requests N (10 x C), --warmup N (C),\n"
    "  --prompt-tokens N (128), --gen-tokens N (128), --timeout S (600), --model NAME\n"
    "llama-bench (llama.cpp presets with llama-bench beside llama-server):\n"
    "  --engine-bench         measure with llama-bench through the daemon, the service stopped\n"
    "  --n-prompt N (512), --n-gen N (128)   its -p and -n\n"
    "Run:\n"
    "  --budget D             a time budget (90m, 2h, 3600)\n"
    "  --ttl S                the lease's renewal deadline (default 30 s)\n"
    "  --start-timeout S      each start's limit (default 600 s)\n"
    "  --allow-traffic        the router keeps serving the service (results flagged)\n"
    "  --resume               go on from the daemon's record of the same search\n"
    "  --apply [--yes]        write the confirmed winner into the preset (diff shown first)\n"
    "  --tsv FILE, --json FILE, --svg FILE, --no-store, -q, --seed N\n"
    "Exit: 0 done, 1 refused or failed, 2 usage, 3 no daemon, 130 interrupted.\n";

static int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumod tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (gpumod tune --help)\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

static void defaults(tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->strat = STRAT_GRID;
    o->max_passes = 2;
    o->max_props = 10;
    o->obj = OBJ_THROUGHPUT;
    o->min_gain = 2;
    o->min_gain_pct = true;
    o->alpha = 0.05;
    o->rounds = 5;
    o->load.concurrency = 1;
    o->load.requests = -1;
    o->load.warmup = -1;
    o->load.prompt_tokens = 128;
    o->load.gen_tokens = 128;
    o->load.timeout_s = 600;
    o->start_timeout_ms = 600000;
    o->ttl_ms = 30000;
    o->seed = 1;
    o->n_prompt = 512;
    o->n_gen = 128;
}

static int p_enum(const char *opt, const char *v, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], v)) {
            *out = i;
            return 0;
        }
    buf b = BUF_INIT;
    for (int i = 0; names[i]; i++) buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
    int rc = fail_usage("%s '%s': expected one of %s", opt, v, b.p);
    buf_release(&b);
    return rc;
}

static int p_long(const char *opt, const char *v, long lo, long hi, long *out)
{
    if (opt_long(v, lo, hi, out)) return fail_usage("%s '%s': expected an integer from %ld to %ld", opt, v, lo, hi);
    return 0;
}

static int p_secs(const char *opt, const char *v, double lo, double *out)
{
    int64_t ms;
    char *end;
    double s = strtod(v, &end);
    if (*v && !*end && isfinite(s) && s >= lo) {
        *out = s;
        return 0;
    }
    if (parse_duration_ms(v, &ms) == 0 && (double)ms / 1000 >= lo) {
        *out = (double)ms / 1000;
        return 0;
    }
    return fail_usage("%s '%s': expected a duration (seconds, or 90s, 30m, 2h) of at least %g s", opt, v, lo);
}

/* one option with a value; 1 when opt is not one of these */
static int value_opt(tune_opts *o, const char *opt, const char *v)
{
    char err[512];
    long n;
    double d;
    int k, rc = 0;
    if (!strcmp(opt, "--param") || !strcmp(opt, "--env")) {
        if (space_add(&o->space, v, opt[2] == 'e', err, sizeof err)) return fail_usage("%s %s", opt, err);
    } else if (!strcmp(opt, "--strategy")) {
        if (!(rc = p_enum(opt, v, strat_names, &k))) o->strat = (strat_kind)k;
    } else if (!strcmp(opt, "--objective")) {
        if (!(rc = p_enum(opt, v, tune_obj_names, &k))) o->obj = (tune_obj)k;
        o->obj_given = true;
    } else if (!strcmp(opt, "--n-prompt")) {
        rc = p_long(opt, v, 0, 65536, &o->n_prompt);
    } else if (!strcmp(opt, "--n-gen")) {
        rc = p_long(opt, v, 0, 65536, &o->n_gen);
    } else if (!strcmp(opt, "--weights")) {
        if (tune_parse_weights(v, &o->weights, err, sizeof err)) return fail_usage("%s", err);
    } else if (!strcmp(opt, "--min-gain")) {
        if (tune_parse_gain(v, &o->min_gain, &o->min_gain_pct))
            return fail_usage("--min-gain '%s': expected a percentage (2%%) or an absolute gain (5), >= 0", v);
    } else if (!strcmp(opt, "--alpha")) {
        if (opt_double(v, 1e-6, 0.5, &o->alpha)) return fail_usage("--alpha '%s': expected a number in (0, 0.5]", v);
    } else if (!strcmp(opt, "--passes")) {
        if (!(rc = p_long(opt, v, 1, 20, &n))) o->max_passes = (int)n;
    } else if (!strcmp(opt, "--max-proposals")) {
        if (!(rc = p_long(opt, v, 1, 1000, &n))) o->max_props = (int)n;
    } else if (!strcmp(opt, "--rounds")) {
        if (!(rc = p_long(opt, v, 2, 64, &n))) o->rounds = (int)n;
    } else if (!strcmp(opt, "--concurrency")) {
        if (!(rc = p_long(opt, v, 1, 4096, &n))) o->load.concurrency = (int)n;
    } else if (!strcmp(opt, "--requests")) {
        rc = p_long(opt, v, 2, 10000000, &o->load.requests);
    } else if (!strcmp(opt, "--warmup")) {
        rc = p_long(opt, v, 0, 1000000, &o->load.warmup);
    } else if (!strcmp(opt, "--prompt-tokens")) {
        rc = p_long(opt, v, 1, 10000000, &o->load.prompt_tokens);
    } else if (!strcmp(opt, "--gen-tokens")) {
        rc = p_long(opt, v, 2, 10000000, &o->load.gen_tokens);
    } else if (!strcmp(opt, "--timeout")) {
        rc = p_secs(opt, v, 0.001, &o->load.timeout_s);
    } else if (!strcmp(opt, "--start-timeout")) {
        if (!(rc = p_secs(opt, v, 1, &d))) o->start_timeout_ms = (int64_t)(d * 1000);
    } else if (!strcmp(opt, "--ttl")) {
        if (!(rc = p_secs(opt, v, 1, &d))) o->ttl_ms = (int64_t)(d * 1000);
    } else if (!strcmp(opt, "--budget")) {
        rc = p_secs(opt, v, 1, &o->budget_s);
    } else if (!strcmp(opt, "--max-memory")) {
        if (opt_double(v, 1, 1e9, &o->max_mem_mb)) return fail_usage("--max-memory '%s': expected MiB, >= 1", v);
    } else if (!strcmp(opt, "--seed")) {
        if (!(rc = p_long(opt, v, 0, 1000000000L, &n))) o->seed = (uint64_t)n;
    } else {
        const char **slot = !strcmp(opt, "--slo")                ? &o->load.slo
                            : !strcmp(opt, "--model")            ? &o->load.model
                            : !strcmp(opt, "--quality")          ? &o->quality
                            : !strcmp(opt, "--proposer")         ? &o->proposer
                            : !strcmp(opt, "--proposer-model")   ? &o->proposer_model
                            : !strcmp(opt, "--proposer-key-env") ? &o->proposer_key_env
                            : !strcmp(opt, "--tsv")              ? &o->tsv
                            : !strcmp(opt, "--json")             ? &o->json
                            : !strcmp(opt, "--svg")              ? &o->svg
                                                                 : NULL;
        if (!slot) return 1;
        *slot = v;
    }
    return rc;
}

static const char *const value_opts[] = {
    "--param", "--env", "--strategy", "--objective", "--weights", "--min-gain", "--alpha", "--passes",
    "--max-proposals", "--rounds", "--concurrency", "--requests", "--warmup", "--prompt-tokens", "--gen-tokens",
    "--timeout", "--start-timeout", "--ttl", "--budget", "--max-memory", "--seed", "--slo", "--model", "--quality",
    "--proposer", "--proposer-model", "--proposer-key-env", "--tsv", "--json", "--svg", "--file", "--n-prompt", "--n-gen", NULL};

static int flag_opt(tune_opts *o, const char *a)
{
    bool *f = !strcmp(a, "--allow-traffic") ? &o->allow_traffic
              : !strcmp(a, "--resume")      ? &o->resume
              : !strcmp(a, "--apply")       ? &o->apply
              : !strcmp(a, "--yes")         ? &o->yes
              : !strcmp(a, "--no-store")    ? &o->no_store
              : !strcmp(a, "--engine-bench") ? &o->engine_bench
              : !strcmp(a, "-q") || !strcmp(a, "--quiet") ? &o->quiet
                                            : NULL;
    if (!f) return 1;
    *f = true;
    return 0;
}

/* a `tune:` file's option (tfile.c): its value is copied (the file's
 * tree is freed); a flag takes true or false */
int tune_file_option(tune_opts *o, const char *opt, const char *v);
int tune_file_option(tune_opts *o, const char *opt, const char *v)
{
    tune_opts probe = *o;
    if (!flag_opt(&probe, opt)) {
        if (strcmp(v, "true") && strcmp(v, "false")) return fail_usage("%s: expected true or false, found '%s'", opt, v);
        if (!strcmp(v, "true")) flag_opt(o, opt);
        return 0;
    }
    strv_push(&o->owned, v);
    return value_opt(o, opt, o->owned.v[o->owned.n - 1]);
}

static int parse_args(tune_opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (a[0] != '-') {
            if (o->service) return fail_usage("one service at a time ('%s' and '%s')", o->service, a);
            o->service = a;
            continue;
        }
        if (!flag_opt(o, a)) continue;
        if (!strcmp(a, "--abort")) return fail_usage("--abort takes no other argument: gpumod tune --abort");
        int got = 0;
        const char *opt = NULL;
        for (int k = 0; value_opts[k]; k++) {
            int j = i;
            int x = opt_value(argc, argv, &j, value_opts[k], &v);
            if (x) {
                if (x < 0) return fail_usage("%s needs a value", value_opts[k]);
                i = j;
                opt = value_opts[k];
                got = 1;
                break;
            }
        }
        if (!got) return fail_usage("unknown option '%s'", a);
        int rc = !strcmp(opt, "--file") ? tfile_read(o, v) : value_opt(o, opt, v);
        if (rc) return rc;
    }
    return 0;
}

/* ---- gpumod tune --abort ---- */

static int do_abort(void)
{
    config_paths paths = {getenv("GPUMOD_CONFIG_DIR"), getenv("GPUMOD_STATE_DIR"), getenv("GPUMOD_SOCKET")};
    tlink l;
    tlink_init(&l, &paths, "");
    char err[512];
    cJSON *j = tlink_get(&l, "/tune", err, sizeof err);
    int rc = EXIT_OK;
    const cJSON *lease = cJSON_GetObjectItemCaseSensitive(j, "lease");
    if (!j) {
        fprintf(stderr, "gpumod tune --abort: %s\n", err);
        rc = EXIT_DAEMON;
    } else if (!cJSON_IsObject(lease) || !jstr(lease, "id")) {
        printf("no tune run holds a lease\n");
    } else {
        l.lease_id = xstrdup(jstr(lease, "id"));
        l.service = jstr(lease, "service");
        char path[160];
        snprintf(path, sizeof path, "/tune/%s", l.lease_id);
        http_reply r;
        rc = ctl_call(&paths, "DELETE", path, NULL, CTL_QUICK_MS, false, &r);
        if (!rc && r.status != 200) rc = ctl_fail(&r, "tune --abort");
        else if (!rc) printf("lease %s of '%s' released; the daemon restores the host\n", l.lease_id, l.service);
        if (!rc || r.status) http_reply_release(&r);
    }
    cJSON_Delete(j);
    tlink_free(&l);
    return rc;
}

/* ---- the service: its URL and preset ---- */

static int find_service(tune_opts *o, char **url, char **file)
{
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    config_paths paths = {0};
    config_load_preset(&cfg, &paths, o->service);
    const preset *p = config_preset(&cfg, o->service);
    if (!p) {
        fprintf(stderr, "gpumod tune: no preset '%s' in %s\n", o->service,
                cfg.presets_dir ? cfg.presets_dir : "the configuration");
        config_release(&cfg);
        return EXIT_USAGE;
    }
    if (o->engine_bench && p->driver != DRV_LLAMACPP) {
        fprintf(stderr, "gpumod tune: --engine-bench runs llama-bench, for llama.cpp presets only ('%s' is driver %s)\n",
                o->service, driver_names[p->driver]);
        config_release(&cfg);
        return EXIT_USAGE;
    }
    if (p->port <= 0 || p->driver == DRV_REMOTE) {
        fprintf(stderr, "gpumod tune: '%s' runs no engine of its own to tune (driver %s)\n", o->service,
                driver_names[p->driver]);
        config_release(&cfg);
        return EXIT_USAGE;
    }
    const char *h = p->host && *p->host && strcmp(p->host, "0.0.0.0") && strcmp(p->host, "::") ? p->host
                                                                                               : "127.0.0.1";
    *url = strchr(h, ':') ? xasprintf("http://[%s]:%lld", h, (long long)p->port)
                          : xasprintf("http://%s:%lld", h, (long long)p->port);
    *file = p->pos.file ? xstrdup(p->pos.file) : NULL;
    config_release(&cfg);
    return 0;
}

/* --engine-bench's own rules: its objectives, what needs a running server */
static int check_ebench(tune_opts *o)
{
    if (!o->engine_bench) {
        if (o->obj == OBJ_PREFILL) return fail_usage("--objective prefill is llama-bench's pp: it needs --engine-bench");
        return 0;
    }
    if (!o->obj_given) o->obj = OBJ_ENGINE_TPS;
    if (o->obj != OBJ_ENGINE_TPS && o->obj != OBJ_PREFILL)
        return fail_usage("--engine-bench measures engine_tps (tg) or prefill (pp), not --objective %s",
                          tune_obj_names[o->obj]);
    if (o->obj == OBJ_PREFILL ? o->n_prompt <= 0 : o->n_gen <= 0)
        return fail_usage("--objective %s needs %s above 0", tune_obj_names[o->obj],
                          o->obj == OBJ_PREFILL ? "--n-prompt" : "--n-gen");
    if (o->quality || o->max_mem_mb > 0)
        return fail_usage("--engine-bench runs no server: --quality and --max-memory need one");
    return 0;
}

static int check_opts(tune_opts *o)
{
    if (!o->service) return fail_usage("which service? gpumod tune SERVICE --param KEY=V1,V2 ...");
    if (!o->space.n && o->strat != STRAT_PROPOSE)
        return fail_usage("nothing to search: give --param KEY=V1,V2 or --env NAME=V1,V2 (or --file)");
    if (!o->space.n) return fail_usage("the proposer needs a menu: give --param or --env");
    if (o->strat == STRAT_PROPOSE && !o->proposer) return fail_usage("--strategy propose needs --proposer URL");
    if (o->proposer && o->strat != STRAT_PROPOSE) return fail_usage("--proposer needs --strategy propose");
    if (o->obj == OBJ_SCORE) {
        bool any = false;
        for (int k = 0; k < OBJ_SCORE; k++) any |= o->weights.w[k] > 0;
        if (!any) return fail_usage("--objective score needs --weights METRIC=W,...");
    }
    if (o->obj == OBJ_GOODPUT && !o->load.slo) return fail_usage("--objective goodput needs --slo");
    if (o->yes && !o->apply) return fail_usage("--yes goes with --apply");
    if (check_ebench(o)) return EXIT_USAGE;
    if (o->load.requests < 0) o->load.requests = 10L * o->load.concurrency;
    if (o->load.warmup < 0) o->load.warmup = o->load.concurrency;
    char err[512];
    if (docfile_writable("--tsv", o->tsv, err, sizeof err) || docfile_writable("--json", o->json, err, sizeof err) ||
        docfile_writable("--svg", o->svg, err, sizeof err))
        return fail_usage("%s", err);
    return 0;
}

static void write_outputs(const tune_opts *o, const tune_result *res, int64_t started)
{
    char err[512];
    buf b = BUF_INIT;
    if (o->tsv) {
        tune_tsv(o, res, &b);
        if (docfile_write(o->tsv, &b, "TSV", err, sizeof err)) fprintf(stderr, "gpumod tune: %s\n", err);
        buf_clear(&b);
    }
    if (o->svg) {
        tune_svg(o, res, &b);
        if (docfile_write(o->svg, &b, "SVG", err, sizeof err)) fprintf(stderr, "gpumod tune: %s\n", err);
        buf_clear(&b);
    }
    cJSON *doc = tune_doc(o, res, started);
    if (o->json) {
        char *t = cJSON_Print(doc);
        buf_adds(&b, t);
        buf_addc(&b, '\n');
        free(t);
        if (docfile_write(o->json, &b, "result document", err, sizeof err)) fprintf(stderr, "gpumod tune: %s\n", err);
    }
    int64_t id;
    if (!o->no_store && bstore_post(doc, CTL_QUICK_MS, &id, err, sizeof err) < 0)
        fprintf(stderr, "gpumod tune: the daemon did not keep the result: %s\n", err);
    cJSON_Delete(doc);
    buf_release(&b);
}

static void summary(const tune_opts *o, const tune_result *res)
{
    if (o->quiet) return;
    const tune_row *fin = NULL;
    for (size_t i = 0; i < res->n; i++)
        if (res->rows[i].outcome == TO_FINAL) fin = &res->rows[i];
    if (res->stopped) printf("stopped early: %s\n", res->stopped);
    if (!fin) {
        printf("no variant beat the baseline by more than --min-gain %g%s with the interval clear of zero\n",
               o->min_gain, o->min_gain_pct ? "%" : "");
    } else {
        printf("winner: %s=%s, %+.2f %% %s [%+.2f, %+.2f] against the baseline, %s\n", fin->var, fin->val,
               fin->d.delta_pct, tune_obj_names[o->obj], fin->d.lo_pct, fin->d.hi_pct,
               res->confirmed ? "confirmed by the re-verification" : "NOT confirmed by the re-verification");
    }
}

int tune_main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--abort")) return do_abort();
    tune_opts o;
    defaults(&o);
    o.argc = argc;
    o.argv = argv;
    int rc = parse_args(&o, argc, argv);
    if (!rc) rc = check_opts(&o);
    char *url = NULL, *file = NULL;
    if (!rc) rc = find_service(&o, &url, &file);
    if (rc) {
        space_release(&o.space);
        strv_release(&o.owned);
        return rc;
    }
    o.load.url = url;
    o.load.obj = o.obj;
    o.load.weights = &o.weights;
    int64_t started = (int64_t)time(NULL) * 1000;
    tune_result res = {0};
    rc = tune_run(&o, &res);
    if (res.n) {
        summary(&o, &res);
        write_outputs(&o, &res, started);
    }
    if (!rc && o.apply) rc = tune_apply(&o, &res, file);
    if (res.stopped && !rc) rc = EXIT_REFUSED;
    if (res.stopped && !o.quiet)
        fprintf(stderr, "gpumod tune: to go on, run the same command with --resume\n");
    tune_result_release(&res);
    space_release(&o.space);
    strv_release(&o.owned);
    free(url);
    free(file);
    return rc;
}
