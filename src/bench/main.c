/* main.c - gpumod-bench, the helper `gpumod bench` execs (docs/bench.md):
 * the options of a run, parsed strictly, the run loop (points x
 * iterations: scrape, sample, load, scrape, aggregate, judge), and the
 * outputs; and the subcommands compare, report and switch.
 *
 * Every figure goes into one result document first; the terminal table,
 * CSV, Markdown, SVG, the daemon's store and `compare` all read that
 * document, so what a user sees is what was saved. */
#include "bench/cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bcompare.h"
#include "oai/docfile.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/opt.h"

enum { BX_OK = 0, BX_FAILED = 1, BX_USAGE = 2, BX_INTERRUPTED = 130 };

static volatile int interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static const char usage_text[] =
    "usage: gpumod bench TARGET [load options] [output options]\n"
    "       gpumod bench compare A.json B.json [--json] [--conf 0.95]\n"
    "       gpumod bench switch MODE_A MODE_B [-n N] [--json FILE] [--svg FILE]\n"
    "       gpumod bench report RESULT.json [--md] [--csv FILE] [--svg FILE]\n"
    "\n"
    "TARGET: a service id or model name (through the daemon's router), or an\n"
    "http(s):// base URL.\n"
    "\n"
    "Load options:\n"
    "  --concurrency 1,8,64     closed loop: streams kept in flight (default 1)\n"
    "  --rate R[,R2...]         open loop: requests per second\n"
    "  --burstiness B           gamma shape of the gaps (1 Poisson; inf constant)\n"
    "  --max-concurrency N      open loop: cap on requests in flight\n"
    "  --requests N             measured requests per iteration (default: closed loop\n"
    "                           10 x concurrency, open loop 10 s of arrivals (10 x rate);\n"
    "                           at least 20)\n"
    "  --duration S             instead of --requests: send for S seconds\n"
    "  --warmup N               discarded requests before each iteration (default: the concurrency)\n"
    "  --iterations R           repetitions of each point (default 3)\n"
    "  --prompt-tokens N        synthetic prompts of N tokens (default 128)\n"
    "  --prompts FILE           JSONL prompts ({\"prompt\"} or {\"messages\"} per line)\n"
    "  --gen-tokens N           tokens generated per request (default 128)\n"
    "  --endpoint chat|completions\n"
    "  --ctx-sweep START:MAX:STEP  the context-depth sweep (MAX <= 10000000 tokens,\n"
    "                           at most 1000 depths)\n"
    "  --slo ttft=MS,tpot=MS,e2el=MS  goodput SLOs\n"
    "  --timeout S              each request's deadline, and the most any probe of\n"
    "                           the server (/v1/models, /tokenize, /metrics) waits (default 600)\n"
    "  --seed N                 schedules, prompts and bootstrap (default 1)\n"
    "  --model NAME             the model sent (URL targets: default the first listed)\n"
    "  --api-key-env VAR        the API key's variable (default OPENAI_API_KEY;\n"
    "                           router targets: router.api_keys_env)\n"
    "Output options:\n"
    "  --json FILE (- stdout)   the result document   --raw  with every request\n"
    "  --csv FILE               one row per iteration  --md   a Markdown table\n"
    "  --svg FILE               charts                 --no-store  not to the daemon\n"
    "  -q                       no progress bar\n"
    "Exit: 0 done, 1 failed (unreachable, every request failed), 2 usage,\n"
    "3 a service name but no daemon, 130 interrupted (Ctrl-C; what was measured\n"
    "is written; a second Ctrl-C ends it at once).\n";

static int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpumod: bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fputs("usage: gpumod bench TARGET [options]; see 'gpumod bench --help'\n", stderr);
    return BX_USAGE;
}

/* ---- strict option values ------------------------------------------------ */

static int p_long(const char *opt, const char *v, long lo, long hi, long *out)
{
    if (opt_long(v, lo, hi, out))
        return fail_usage("%s '%s': expected an integer from %ld to %ld", opt, v, lo, hi);
    return 0;
}

static int p_double(const char *opt, const char *v, double lo, double hi, bool allow_inf, double *out)
{
    if (allow_inf && (!strcmp(v, "inf") || !strcmp(v, "infinity"))) {
        *out = INFINITY;
        return 0;
    }
    if (opt_double(v, lo, hi, out))
        return fail_usage("%s '%s': expected a number from %g to %g%s", opt, v, lo, hi, allow_inf ? " or inf" : "");
    return 0;
}

/* "1,8,64" */
static int p_list(const char *opt, const char *v, bool integers, double lo, double hi, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *copy = xstrdup(v), *save = NULL;
    size_t cap = 0;
    int rc = 0;
    if (!*v || v[strlen(v) - 1] == ',' || *v == ',') rc = -1;
    for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        errno = 0;
        double x = integers ? (double)strtol(tok, &end, 10) : strtod(tok, &end);
        if (!*tok || *end || errno || !isfinite(x) || x < lo || x > hi) {
            rc = -1;
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = x;
    }
    free(copy);
    if (rc || !*n) {
        free(*out);
        *out = NULL;
        return fail_usage("%s '%s': expected %s from %g to %g, separated by commas", opt, v,
                          integers ? "integers" : "numbers", lo, hi);
    }
    return 0;
}

static int p_slo(const char *v, bslo *s)
{
    char *copy = xstrdup(v), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        double x = NAN;
        char *end = NULL;
        if (eq) x = strtod(eq + 1, &end);
        if (!eq || !eq[1] || *end || !isfinite(x) || x <= 0) {
            rc = -1;
            break;
        }
        *eq = 0;
        if (!strcmp(tok, "ttft"))
            s->ttft_ms = x;
        else if (!strcmp(tok, "tpot"))
            s->tpot_ms = x;
        else if (!strcmp(tok, "e2el"))
            s->e2el_ms = x;
        else {
            rc = -1;
            break;
        }
    }
    free(copy);
    if (rc) return fail_usage("--slo '%s': expected ttft=MS,tpot=MS,e2el=MS (any of them, positive milliseconds)", v);
    return 0;
}

#define CTX_MAX_TOKENS 10000000L
#define CTX_MAX_DEPTHS 1000

static int p_ctx(const char *v, bopts *o)
{
    long a, b, c;
    char tail;
    if (sscanf(v, "%ld:%ld:%ld%c", &a, &b, &c, &tail) != 3 || a < 1 || c < 1 || b < a)
        return fail_usage("--ctx-sweep '%s': expected START:MAX:STEP (tokens, 1 <= START <= MAX, STEP >= 1)", v);
    if (b > CTX_MAX_TOKENS)
        return fail_usage("--ctx-sweep '%s': MAX %ld is above %ld tokens", v, b, (long)CTX_MAX_TOKENS);
    if ((b - a) / c + 1 > CTX_MAX_DEPTHS)
        return fail_usage("--ctx-sweep '%s': %ld depths, at most %d (use a larger STEP)", v, (b - a) / c + 1,
                          CTX_MAX_DEPTHS);
    o->ctx_sweep = true;
    o->ctx_start = a;
    o->ctx_max = b;
    o->ctx_step = c;
    return 0;
}

static const char *const value_opts[] = {
    "--concurrency", "--rate", "--burstiness", "--max-concurrency", "--requests", "--duration", "--warmup",
    "--iterations", "--prompt-tokens", "--prompts", "--gen-tokens", "--endpoint", "--ctx-sweep", "--slo",
    "--timeout", "--seed", "--model", "--api-key-env", "--json", "--csv", "--svg", NULL,
};

/* "--concurrency 1,8,64": the list replaces one given before. */
static int p_conc(const char *opt, const char *v, bopts *o)
{
    double *d = NULL;
    size_t n = 0;
    int rc = p_list(opt, v, true, 1, 100000, &d, &n);
    if (!rc) {
        free(o->conc);
        o->conc = xcalloc(n, sizeof *o->conc);
        for (size_t k = 0; k < n; k++)
            o->conc[k] = (long)d[k];
        o->n_conc = n;
    }
    free(d);
    return rc;
}

static int p_endpoint(const char *v, bool *completions)
{
    if (!strcmp(v, "chat"))
        *completions = false;
    else if (!strcmp(v, "completions"))
        *completions = true;
    else
        return fail_usage("--endpoint '%s': expected chat or completions", v);
    return 0;
}

static int p_seed(const char *v, uint64_t *seed)
{
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    int rc = 0;
    if (!*v || *end || errno || *v == '-')
        rc = fail_usage("--seed '%s': expected a non-negative integer", v);
    *seed = s;
    return rc;
}

/* The defaults a run starts from; check_run settles those that depend on
 * what was given. */
static void run_defaults(bopts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->burstiness = 1;
    o->requests = -1;
    o->warmup = -1;
    o->iterations = 3;
    o->prompt_tokens = -1;
    o->gen_tokens = 128;
    o->slo = (bslo){NAN, NAN, NAN};
    o->timeout_s = 600;
    o->seed = 1;
    o->argc = argc;
    o->argv = argv;
    const char *e = getenv("GPUMOD_QUIET");
    o->quiet = e && *e && strcmp(e, "0");
}

/* A flag that takes no value: true when a is one, and o has it. */
static bool set_flag(bopts *o, const char *a)
{
    if (!strcmp(a, "--raw"))
        o->raw = true;
    else if (!strcmp(a, "--md"))
        o->md = true;
    else if (!strcmp(a, "--no-store"))
        o->no_store = true;
    else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
        o->quiet = true;
    else
        return false;
    return true;
}

/* Which of value_opts argv[*i] is (*opt, NULL when none) and its value,
 * which may be the next word.  0, or BX_USAGE (said) when it is missing. */
static int match_value_opt(int argc, char **argv, int *i, const char **opt, const char **v)
{
    *opt = *v = NULL;
    for (int k = 0; value_opts[k]; k++) {
        int r = opt_value(argc, argv, i, value_opts[k], v);
        if (r < 0) return fail_usage("option '%s' needs a value", value_opts[k]);
        if (r) {
            *opt = value_opts[k];
            break;
        }
    }
    return 0;
}

/* One option's value into o.  0, or BX_USAGE (said). */
static int set_value(bopts *o, const char *opt, const char *v)
{
    if (!strcmp(opt, "--concurrency")) return p_conc(opt, v, o);
    if (!strcmp(opt, "--rate")) return p_list(opt, v, false, 1e-6, 1e6, &o->rate, &o->n_rate);
    if (!strcmp(opt, "--burstiness")) return p_double(opt, v, 1e-3, 1e6, true, &o->burstiness);
    if (!strcmp(opt, "--max-concurrency")) return p_long(opt, v, 1, 100000, &o->max_concurrency);
    if (!strcmp(opt, "--requests")) return p_long(opt, v, 1, 100000000, &o->requests);
    if (!strcmp(opt, "--duration")) return p_double(opt, v, 0.1, 86400, false, &o->duration_s);
    if (!strcmp(opt, "--warmup")) return p_long(opt, v, 0, 1000000, &o->warmup);
    if (!strcmp(opt, "--iterations")) return p_long(opt, v, 1, 1000, &o->iterations);
    if (!strcmp(opt, "--prompt-tokens")) return p_long(opt, v, 1, 10000000, &o->prompt_tokens);
    if (!strcmp(opt, "--gen-tokens")) return p_long(opt, v, 1, 10000000, &o->gen_tokens);
    if (!strcmp(opt, "--endpoint")) return p_endpoint(v, &o->completions);
    if (!strcmp(opt, "--ctx-sweep")) return p_ctx(v, o);
    if (!strcmp(opt, "--slo")) return p_slo(v, &o->slo);
    if (!strcmp(opt, "--timeout")) return p_double(opt, v, 0.001, 86400, false, &o->timeout_s);
    if (!strcmp(opt, "--seed")) return p_seed(v, &o->seed);
    /* the rest are taken as given: files and names, checked when used */
    if (!strcmp(opt, "--prompts"))
        o->prompts_file = v;
    else if (!strcmp(opt, "--model"))
        o->model = v;
    else if (!strcmp(opt, "--api-key-env"))
        o->api_key_env = v;
    else if (!strcmp(opt, "--json"))
        o->json_path = v;
    else if (!strcmp(opt, "--csv"))
        o->csv_path = v;
    else if (!strcmp(opt, "--svg"))
        o->svg_path = v;
    return 0;
}

/* The options that exclude or need each other, then the defaults that
 * depend on what was given.  0, or BX_USAGE (said). */
static int check_run(bopts *o)
{
    bool conc_given = o->n_conc > 0; /* a given list is never empty */
    if (!o->target)
        return fail_usage("no target: give a service id, a model name or an http(s):// URL");
    if (o->n_rate && conc_given)
        return fail_usage(
            "--rate and --concurrency: give one (an open loop is capped with --max-concurrency)");
    if (o->max_concurrency && !o->n_rate)
        return fail_usage("--max-concurrency needs --rate (an open loop)");
    if (o->requests > 0 && o->duration_s > 0)
        return fail_usage("--requests and --duration: give one");
    if (o->prompts_file && o->prompt_tokens > 0)
        return fail_usage("--prompts and --prompt-tokens: give one");
    if (o->raw && !o->json_path) return fail_usage("--raw needs --json FILE");
    if (o->ctx_sweep &&
        (o->n_rate || conc_given || o->prompts_file || o->duration_s > 0 || o->requests > 0))
        return fail_usage(
            "--ctx-sweep measures one request per depth: it takes no --rate, --concurrency, "
            "--requests, --duration or --prompts");
    if (!o->n_conc) {
        o->conc = xcalloc(1, sizeof *o->conc);
        o->conc[0] = 1;
        o->n_conc = 1;
    }
    if (!o->prompts_file && o->prompt_tokens < 0) o->prompt_tokens = 128;
    return 0;
}

/* The options of a run into o.  0, or BX_USAGE (said). */
static int parse_run(int argc, char **argv, bopts *o)
{
    run_defaults(o, argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            if (o->target)
                return fail_usage("unexpected argument '%s' (the target is '%s')", a, o->target);
            o->target = a;
            continue;
        }
        if (set_flag(o, a)) continue;
        const char *opt, *v;
        if (match_value_opt(argc, argv, &i, &opt, &v)) return BX_USAGE;
        if (!opt) return fail_usage("unknown option '%s'", a);
        if (set_value(o, opt, v)) return BX_USAGE;
    }
    return check_run(o);
}

/* ---- files ----------------------------------------------------------------- */

static int write_out(const char *path, const buf *b, const char *what)
{
    char err[600];
    if (docfile_write(path, b, what, err, sizeof err) == 0) return 0;
    fprintf(stderr, "gpumod: bench: %s\n", err);
    return -1;
}

/* Before a run: can path be written?  -1 after "gpumod: bench: ..." */
static int check_writable(const char *opt, const char *path)
{
    char err[600];
    if (docfile_writable(opt, path, err, sizeof err) == 0) return 0;
    fprintf(stderr, "gpumod: bench: %s\n", err);
    return -1;
}

/* The file parsed; NULL after "gpumod: bench: ..." naming the file and
 * the position of a JSON error, or saying it is not a bench result. */
static cJSON *read_doc(const char *path)
{
    char err[600];
    cJSON *j = docfile_read(path, err, sizeof err);
    if (!j) {
        fprintf(stderr, "gpumod: bench: %s\n", err);
        return NULL;
    }
    const char *schema = cJSON_GetStringValue(cJSON_GetObjectItem(j, "schema"));
    if (!schema || strncmp(schema, "gpumod.bench/", 13)) {
        fprintf(stderr, "gpumod: bench: '%s': not a bench result (expected \"schema\": \"gpumod.bench/1\")\n", path);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int render_outputs(const cJSON *doc, const char *json_path, const char *csv_path, const char *svg_path, bool md,
                          bool table)
{
    int rc = 0;
    buf b = BUF_INIT;
    if (json_path) {
        char *s = cJSON_Print(doc);
        buf_adds(&b, s);
        buf_addc(&b, '\n');
        free(s);
        if (write_out(json_path, &b, "result")) rc = -1;
        buf_clear(&b);
    }
    if (csv_path) {
        breport_csv(&b, doc);
        if (write_out(csv_path, &b, "CSV")) rc = -1;
        buf_clear(&b);
    }
    if (svg_path) {
        breport_svg(&b, doc);
        if (write_out(svg_path, &b, "SVG")) rc = -1;
        buf_clear(&b);
    }
    if (md) {
        breport_md(&b, doc);
        fwrite(b.p, 1, b.len, stdout);
        buf_clear(&b);
    } else if (table) {
        breport_table(&b, doc, isatty(1));
        fwrite(b.p, 1, b.len, stdout);
        buf_clear(&b);
    }
    fflush(stdout);
    buf_release(&b);
    return rc;
}

/* ---- report, compare ----------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
    const char *file = NULL, *csv = NULL, *svg = NULL;
    bool md = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (!strcmp(argv[i], "--md")) {
            md = true;
        } else if ((r = opt_value(argc, argv, &i, "--csv", &v))) {
            if (r < 0) return fail_usage("option '--csv' needs a value");
            csv = v;
        } else if ((r = opt_value(argc, argv, &i, "--svg", &v))) {
            if (r < 0) return fail_usage("option '--svg' needs a value");
            svg = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return fail_usage("report: unknown option '%s' (expected --md, --csv FILE, --svg FILE)", argv[i]);
        } else if (file) {
            return fail_usage("report: one result file, not '%s' too", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (!file) return fail_usage("report: which result? gpumod bench report RESULT.json [--md] [--csv FILE] [--svg FILE]");
    cJSON *doc = read_doc(file);
    if (!doc) return BX_USAGE;
    int rc = render_outputs(doc, NULL, csv, svg, md, !csv && !svg);
    cJSON_Delete(doc);
    return rc ? BX_FAILED : BX_OK;
}

static int cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL};
    int nf = 0;
    bool json = false;
    double conf = 0.95;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if ((r = opt_value(argc, argv, &i, "--conf", &v))) {
            if (r < 0) return fail_usage("option '--conf' needs a value");
            if (p_double("--conf", v, 0.5, 0.9999, false, &conf)) return BX_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return fail_usage("compare: unknown option '%s' (expected --json, --conf C)", argv[i]);
        } else if (nf == 2) {
            return fail_usage("compare: two result files, not '%s' too", argv[i]);
        } else {
            files[nf++] = argv[i];
        }
    }
    if (nf < 2) return fail_usage("compare: gpumod bench compare A.json B.json [--json] [--conf 0.95]");
    cJSON *a = read_doc(files[0]);
    if (!a) return BX_USAGE;
    cJSON *b = read_doc(files[1]);
    if (!b) {
        cJSON_Delete(a);
        return BX_USAGE;
    }
    bcmp_row *rows = NULL;
    size_t n = 0;
    char err[300];
    int rc = BX_OK;
    if (bcompare(a, b, conf, 1, &rows, &n, err, sizeof err) != 0) {
        fprintf(stderr, "gpumod: bench: compare %s %s: %s\n", files[0], files[1], err);
        rc = BX_USAGE;
    } else {
        buf out = BUF_INIT;
        if (json) {
            cJSON *j = bcompare_json(rows, n);
            char *s = cJSON_Print(j);
            buf_printf(&out, "%s\n", s);
            free(s);
            cJSON_Delete(j);
        } else {
            bcompare_render(&out, rows, n);
        }
        fwrite(out.p, 1, out.len, stdout);
        buf_release(&out);
    }
    free(rows);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return rc;
}

/* ---- the load run ------------------------------------------------------------- */

typedef struct prog {
    bool on;
    char label[96];
} prog;

static void progress(void *ud, long done, long total, double elapsed_s)
{
    prog *p = ud;
    if (!p->on) return;
    char bar[31];
    int fill = total > 0 ? (int)(30.0 * (double)done / (double)total) : (int)elapsed_s % 30;
    if (fill > 30) fill = 30;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '-';
    bar[30] = 0;
    if (total > 0)
        fprintf(stderr, "\r%s [%s] %ld/%ld %.1fs\033[K", p->label, bar, done, total, elapsed_s);
    else
        fprintf(stderr, "\r%s [%s] %ld %.1fs\033[K", p->label, bar, done, elapsed_s);
}

/* The server's /metrics, or NULL. */
static bscrape *scrape(const btarget *t)
{
    if (!t->metrics_url) return NULL;
    bfetch f;
    if (bfetch_do(t->metrics_url, btarget_headers(t), NULL, 10000, &f) != 0 || f.status != 200) {
        bfetch_release(&f);
        return NULL;
    }
    bscrape *s = xcalloc(1, sizeof *s);
    char err[200];
    bscrape_parse(s, f.body.p, f.body.len, err, sizeof err); /* what parsed is kept */
    bfetch_release(&f);
    return s;
}

static void scrape_free(bscrape *s)
{
    if (!s) return;
    bscrape_release(s);
    free(s);
}

/* Request bodies are made as each request is sent, each with its own
 * number in front (counter: unique over the whole run, warmup included),
 * so that no prompt repeats and a prompt cache cannot serve any of them. */
typedef struct bodyctx {
    const bbody_opts *bo;
    const bprompt *pv;
    size_t np;
    uint64_t counter;
} bodyctx;

static char *make_body(void *ud, uint64_t k, size_t *len)
{
    bodyctx *b = ud;
    char pre[32];
    bprompt_prefix(pre, sizeof pre, b->counter++);
    char *j = bbody_json(b->bo, pre, &b->pv[k % b->np]);
    *len = strlen(j);
    return j;
}

/* what an interrupted run says: measured requests that ended / planned */
static long n_ended_total, n_planned_total;

/* One load run across its points and iterations: what it sends, and what
 * it learns on the way. */
typedef struct loadrun {
    cJSON *doc;
    const bopts *o;
    btarget *t;
    bool open;     /* an open loop: the points are rates */
    bprompts file; /* --prompts */
    bprompt synth; /* else the one synthetic prompt */
    bool exact;    /* the synthetic prompt has exactly --prompt-tokens */
    long measured; /* the prompt tokens the server counted, -1 before any */
    bbody_opts bo;
    bodyctx bc;
    char *url;
    bool metrics_ok; /* /metrics could be read so far */
    prog pg;
    bool *any_ok;    /* a request succeeded */
    char *first_err; /* the first failed request's error */
    size_t first_err_len;
} loadrun;

/* One point of the sweep: its concurrency (the cap, for a rate) or rate,
 * and what each iteration sends. */
typedef struct point {
    size_t pi;
    long conc;
    double rate;
    long requests; /* 0: for --duration */
    long warmup;
} point;

enum { IT_NEXT, IT_STOP, IT_FAILED }; /* what run_iteration says comes next */

/* --prompts' file; with --endpoint completions none may hold "messages".
 * 0, or BX_USAGE (said). */
static int load_prompt_file(loadrun *L)
{
    char err[4096] = "";
    if (bprompts_load_jsonl(&L->file, L->o->prompts_file, err, sizeof err)) {
        fprintf(stderr, "gpumod: bench: %s\n", err);
        return BX_USAGE;
    }
    if (L->o->completions)
        for (size_t i = 0; i < L->file.n; i++)
            if (L->file.v[i].messages) {
                fprintf(stderr,
                        "gpumod: bench: %s: prompt %zu has \"messages\": use --endpoint chat\n",
                        L->o->prompts_file, i + 1);
                bprompts_release(&L->file);
                return BX_USAGE;
            }
    return 0;
}

/* The synthetic prompt of --prompt-tokens, counted by the server's
 * /tokenize where it has one (else about 4 characters a token, warned). */
static void synth_prompt(loadrun *L)
{
    const bopts *o = L->o;
    char err[4096] = "";
    char pre[32];
    bprompt_prefix(pre, sizeof pre, 0);
    long got = 0;
    btok_fn tok = L->t->tokenize_url ? bprompt_tokenize_http : NULL;
    /* the prefix is measured with the text, then cut: each request
     * puts its own number of the same width in front */
    char *s =
        bprompt_synth(pre, o->prompt_tokens, o->seed, tok, L->t, &got, &L->exact, err, sizeof err);
    if (!s) {
        bresult_warn(L->doc,
                     "/tokenize failed (%s): prompts are approximate (about 4 characters a token)",
                     err);
        s = bprompt_synth(pre, o->prompt_tokens, o->seed, NULL, NULL, &got, &L->exact, err,
                          sizeof err);
        tok = NULL;
    }
    L->synth.text = xstrdup(s + strlen(pre));
    free(s);
    if (!tok)
        bresult_warn(
            L->doc,
            "the server has no /tokenize: prompts are about %ld tokens (4 characters a token), "
            "not exact; prompt_tokens_measured is what the server counted",
            o->prompt_tokens);
    else if (!L->exact)
        bresult_warn(L->doc,
                     "no word count gives exactly %ld prompt tokens: prompts are %ld tokens",
                     o->prompt_tokens, got);
}

/* Point pi: its load, its requests and warmup (the defaults: 10 x the
 * concurrency or 10 s of arrivals, at least 20; a warmup of the
 * concurrency). */
static point plan_point(const loadrun *L, size_t pi)
{
    const bopts *o = L->o;
    point p = {pi, L->open ? o->max_concurrency : o->conc[pi], L->open ? o->rate[pi] : 0, 0, 0};
    p.requests = o->requests > 0 ? o->requests : 0;
    if (!p.requests && o->duration_s <= 0) {
        p.requests = L->open ? (long)ceil(p.rate * 10) : p.conc * 10;
        if (p.requests < 20) p.requests = 20;
    }
    p.warmup = o->warmup >= 0 ? o->warmup : L->open ? (p.conc > 0 ? p.conc : 1) : p.conc;
    return p;
}

/* The load of iteration it of point p (idp holds its request ids' prefix),
 * and the progress bar's label for it. */
static void iteration_spec(loadrun *L, const point *p, long it, bload_spec *sp, char *idp,
                           size_t idlen)
{
    const bopts *o = L->o;
    memset(sp, 0, sizeof *sp);
    sp->url = L->url;
    sp->headers = btarget_headers(L->t);
    sp->shape = L->open ? BLOAD_OPEN : BLOAD_CLOSED;
    sp->concurrency = (int)p->conc;
    sp->rate = p->rate;
    sp->burstiness = o->burstiness;
    sp->seed = o->seed + (uint64_t)p->pi * 1000003u + (uint64_t)it * 7919u;
    sp->requests = p->requests;
    sp->duration_s = o->duration_s;
    sp->warmup = p->warmup;
    sp->body = make_body;
    sp->request_timeout_ms = (int64_t)(o->timeout_s * 1000);
    /* unique in the run: a server's log joins by it (t80) */
    snprintf(idp, idlen, "gpumod-bench-%ld-%zu-%ld", (long)getpid(), p->pi, it);
    sp->id_prefix = idp;
    sp->progress = progress;
    sp->ud = &L->pg;
    sp->body_ud = &L->bc;
    if (L->open)
        snprintf(L->pg.label, sizeof L->pg.label, "rate %g  iteration %ld/%ld", p->rate, it + 1,
                 o->iterations);
    else
        snprintf(L->pg.label, sizeof L->pg.label, "concurrency %ld  iteration %ld/%ld", p->conc,
                 it + 1, o->iterations);
}

/* The warmup, a run of its own, so that the server's counters scraped
 * before the measured run do not include it (the deltas then match the
 * client's token counts).  How many warmup requests ended. */
static size_t run_warmup(loadrun *L, const bload_spec *sp)
{
    bload_spec ws = *sp;
    ws.requests = sp->warmup;
    ws.duration_s = 0;
    ws.warmup = 0;
    ws.warmup_ids = true;
    bload_result wr;
    memset(&wr, 0, sizeof wr);
    char werr[256] = "";
    char lab[96];
    size_t wdone = 0;
    snprintf(lab, sizeof lab, "%s", L->pg.label);
    snprintf(L->pg.label, sizeof L->pg.label, "%.70s warmup", lab);
    if (bload_run(&ws, &wr, &interrupted, werr, sizeof werr) == 0) wdone = wr.n;
    bload_result_release(&wr);
    snprintf(L->pg.label, sizeof L->pg.label, "%s", lab);
    return wdone;
}

/* Whether any request succeeded, the prompt tokens the server counted and
 * the first error, over the run. */
static void note_requests(loadrun *L, const bload_result *res)
{
    for (size_t i = 0; i < res->n; i++) {
        if (breq_ok(&res->reqs[i])) {
            *L->any_ok = true;
            if (L->measured < 0 && res->reqs[i].n_in >= 0) L->measured = res->reqs[i].n_in;
        } else if (!L->first_err[0] && res->reqs[i].error) {
            snprintf(L->first_err, L->first_err_len, "%s", res->reqs[i].error);
        }
    }
}

/* The iteration into its point's list, with the warnings it calls for. */
static void record_iteration(loadrun *L, const point *p, long it, cJSON *its,
                             const bload_result *res, const bagg *a, const bserver_delta *sd,
                             cJSON *mem)
{
    cJSON *ij = bresult_iteration(res, a, sd, mem, L->o->raw);
    if (p->requests)
        cJSON_AddNumberToObject(ij, "requests_planned", (double)p->requests);
    else
        cJSON_AddNullToObject(ij, "requests_planned");
    cJSON_AddItemToArray(its, ij);
    char where[96];
    snprintf(where, sizeof where, "%s=%g iteration %ld", L->open ? "rate" : "concurrency",
             L->open ? p->rate : (double)p->conc, it + 1);
    cJSON *doc = L->doc;
    if (a->failed)
        bresult_warn(doc, "%s: %zu of %zu requests failed (see errors)", where, a->failed, a->sent);
    if (res->self.client_bound)
        bresult_warn(doc, "%s: the client may be the bottleneck: %s", where,
                     res->self.n_warnings ? res->self.warnings[0] : "see self_check");
    if (a->out_estimated)
        bresult_warn(doc, "output token counts are estimated from the stream's events (the server "
                          "sent no usage)");
    if (a->k_estimated)
        bresult_warn(
            doc, "tokens per event were assumed 1 where the server sent no running usage count");
    if (sd && sd->reset)
        bresult_warn(doc, "%s: a server counter went down (restart?): server deltas are invalid",
                     where);
}

/* A load that ran: its figures, judged, into its, unless the SIGINT came
 * before anything was sent.  IT_NEXT or IT_STOP; takes mem, releases res. */
static int take_iteration(loadrun *L, const point *p, long it, cJSON *its, bload_result *res,
                          const bserver_delta *sd, cJSON *mem)
{
    note_requests(L, res);
    bagg a;
    char aerr[200] = "";
    memset(&a, 0, sizeof a);
    if (bagg_compute(&a, res->reqs, res->n, res->w_start, res->w_end, &L->o->slo, aerr,
                     sizeof aerr) != 0) {
        /* nothing completed: an empty window; keep the counts */
        bagg_compute(&a, res->reqs, res->n, res->w_start, res->w_start + 1, &L->o->slo, aerr,
                     sizeof aerr);
    }
    bself_judge(&res->self, a.itl_token.median, L->open);
    n_ended_total += (long)res->n;
    int next = IT_NEXT;
    if (interrupted && !res->n && !res->n_cut) { /* nothing was sent: no iteration */
        cJSON_Delete(mem);
        next = IT_STOP;
    } else {
        record_iteration(L, p, it, its, res, &a, sd, mem);
    }
    bload_result_release(res);
    return next;
}

/* Iteration it of point p: warmup, /metrics, the measured load, /metrics,
 * then its figures into its.  IT_NEXT, IT_STOP (interrupted before it
 * measured anything) or IT_FAILED (the load could not run; said). */
static int run_iteration(loadrun *L, const point *p, long it, cJSON *its)
{
    bload_spec sp;
    char idp[96];
    iteration_spec(L, p, it, &sp, idp, sizeof idp);
    size_t wdone = 0;
    if (p->warmup > 0) {
        wdone = run_warmup(L, &sp);
        sp.warmup = 0;
        if (interrupted) { /* Ctrl-C in the warmup: no measured run */
            if (L->pg.on) fputs("\r\033[K", stderr);
            return IT_STOP;
        }
    }
    bscrape *before = L->metrics_ok ? scrape(L->t) : NULL;
    if (L->metrics_ok && !before) L->metrics_ok = false;
    bload_result res;
    memset(&res, 0, sizeof res);
    btele *tl = btele_start(200);
    char lerr[256] = "";
    int lrc = bload_run(&sp, &res, &interrupted, lerr, sizeof lerr);
    cJSON *mem = btele_stop(tl);
    bscrape *after = before ? scrape(L->t) : NULL;
    if (L->pg.on) fputs("\r\033[K", stderr);
    int next = IT_FAILED;
    if (lrc) {
        fprintf(stderr, "gpumod: bench: %s\n", lerr);
        cJSON_Delete(mem);
    } else {
        bserver_delta sd;
        if (before && after) bserver_delta_compute(before, after, &sd);
        res.n_warmup += wdone;
        next = take_iteration(L, p, it, its, &res, before && after ? &sd : NULL, mem);
    }
    scrape_free(before);
    scrape_free(after);
    return next;
}

/* Point pi, each of its iterations, and its summary into doc's points.
 * BX_OK or BX_FAILED; *ran false when interrupted before an iteration. */
static int run_point(loadrun *L, size_t pi, bool *ran)
{
    const bopts *o = L->o;
    point p = plan_point(L, pi);
    n_planned_total += p.requests * o->iterations;
    cJSON *pt = cJSON_CreateObject();
    cJSON_AddStringToObject(pt, "x_name", L->open ? "rate" : "concurrency");
    cJSON_AddNumberToObject(pt, "x", L->open ? p.rate : (double)p.conc);
    cJSON *its = cJSON_AddArrayToObject(pt, "iterations");
    int rc = BX_OK;
    for (long it = 0; it < o->iterations && !interrupted; it++) {
        int next = run_iteration(L, &p, it, its);
        if (next == IT_FAILED) rc = BX_FAILED;
        if (next != IT_NEXT) break;
    }
    *ran = cJSON_GetArraySize(its) > 0;
    if (!*ran) { /* interrupted before it ran */
        cJSON_Delete(pt);
        return rc;
    }
    cJSON_AddItemToObject(pt, "summary", bresult_summary(its, o->seed));
    cJSON_AddItemToArray(cJSON_GetObjectItem(L->doc, "points"), pt);
    return rc;
}

/* The settings as they turned out, and the warnings of the whole run. */
static void finish_run(loadrun *L)
{
    const bopts *o = L->o;
    cJSON_ReplaceItemInObject(L->doc, "settings",
                              bresult_settings(o, o->prompts_file ? false : L->exact, L->measured));
    if (L->measured >= 0 && !o->prompts_file && L->measured != o->prompt_tokens)
        bresult_warn(L->doc,
                     "the server counted %ld prompt tokens for a %ld-token prompt (the %s adds the "
                     "difference)",
                     L->measured, o->prompt_tokens,
                     L->bo.chat ? "chat template" : "special tokens");
    if (!L->t->metrics_url || !L->metrics_ok)
        bresult_warn(L->doc, "the server's /metrics could not be read: no server-side deltas");
}

/* The prompts, then each point of the sweep in turn, into doc.  BX_OK,
 * BX_FAILED (a load could not run) or BX_USAGE (the prompts file). */
static int run_load(cJSON *doc, bopts *o, btarget *t, bool *any_ok, char *first_err,
                    size_t first_err_len)
{
    loadrun L = {
        .doc = doc,
        .o = o,
        .t = t,
        .open = o->n_rate > 0,
        .synth = {NULL, NULL, -1},
        .measured = -1,
        .any_ok = any_ok,
        .first_err = first_err,
        .first_err_len = first_err_len,
    };
    if (o->prompts_file) {
        if (load_prompt_file(&L)) return BX_USAGE;
    } else {
        synth_prompt(&L);
    }
    L.bo =
        (bbody_opts){t->model, !o->completions, o->gen_tokens, !strcmp(t->flavor, "llamacpp"), -1};
    L.bc =
        (bodyctx){&L.bo, o->prompts_file ? L.file.v : &L.synth, o->prompts_file ? L.file.n : 1, 1};
    L.url = xasprintf("%s%s", t->base_url, t->endpoint);
    L.metrics_ok = t->metrics_url != NULL;
    L.pg = (prog){isatty(2) && !o->quiet, ""};
    size_t npts = L.open ? o->n_rate : o->n_conc;
    int rc = BX_OK;
    for (size_t pi = 0; pi < npts && !interrupted; pi++) {
        bool ran;
        rc = run_point(&L, pi, &ran);
        if (!ran || rc) break;
    }
    free(L.url);
    free(L.synth.text);
    bprompts_release(&L.file);
    finish_run(&L);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    bopts o;
    int rc = parse_run(argc, argv, &o);
    if (rc) {
        /* a usage error may come after some lists were parsed */
        free(o.conc);
        free(o.rate);
        return rc;
    }
    if (check_writable("--json", o.json_path) || check_writable("--csv", o.csv_path) ||
        check_writable("--svg", o.svg_path)) {
        free(o.conc);
        free(o.rate);
        return BX_USAGE;
    }
    /* the first Ctrl-C stops the run and keeps what was measured; the
     * handler then resets itself, so a second one ends the process */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    bfetch_limit(&interrupted, (int64_t)(o.timeout_s * 1000));

    int64_t started = clock_unix_ms();
    cJSON *doc = bresult_new(o.ctx_sweep ? "ctx_sweep" : "load", &o, started);
    btarget t;
    char err[1024] = "";
    btarget_opts to = {"bench", o.target, o.model, o.api_key_env, o.completions, o.timeout_s};
    rc = btarget_resolve(&t, &to, err, sizeof err);
    if (!rc && interrupted) rc = BX_INTERRUPTED;
    if (rc) {
        if (interrupted && rc != BX_USAGE) {
            rc = BX_INTERRUPTED;
            fprintf(stderr, "gpumod: bench: interrupted before the run (nothing was measured)\n");
        } else {
            fprintf(stderr, "gpumod: %s\n", err);
        }
        btarget_release(&t);
        cJSON_Delete(doc);
        free(o.conc);
        free(o.rate);
        return rc;
    }
    /* /tokenize matters only for synthetic prompts (run_load and the
     * sweep warn when it is missing) */
    if (!o.prompts_file) bprompt_has_tokenizer(&t);
    cJSON_AddItemToObject(doc, "target", btarget_json(&t));
    cJSON_AddItemToObject(doc, "host", btele_host_identity());
    cJSON_AddItemToObject(doc, "settings", bresult_settings(&o, false, -1));
    cJSON_AddArrayToObject(doc, "points");
    cJSON_AddArrayToObject(doc, "warnings");

    bool any_ok = false;
    char first_err[512] = "";
    if (o.ctx_sweep) {
        if (bctx_run(doc, &o, &t, &interrupted, err, sizeof err) != 0) {
            fprintf(stderr, "gpumod: bench: %s\n", err);
            rc = BX_USAGE;
        }
        const cJSON *pt;
        cJSON_ArrayForEach(pt, cJSON_GetObjectItem(doc, "points")) {
            const cJSON *it;
            cJSON_ArrayForEach(it, cJSON_GetObjectItem(pt, "iterations")) {
                const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(it, "status"));
                if (st && strcmp(st, "failed")) any_ok = true;
                else if (!first_err[0])
                    snprintf(first_err, sizeof first_err, "%s",
                             cJSON_GetStringValue(cJSON_GetObjectItem(it, "reason")) ?: "failed");
            }
        }
    } else {
        rc = run_load(doc, &o, &t, &any_ok, first_err, sizeof first_err);
    }
    char ts[40];
    clock_rfc3339(clock_unix_ms(), ts, sizeof ts);
    cJSON_ReplaceItemInObject(doc, "finished", cJSON_CreateString(ts));
    if (interrupted) {
        if (o.ctx_sweep)
            bresult_warn(doc, "interrupted: the result holds what was measured until then");
        else if (o.duration_s > 0)
            bresult_warn(doc, "interrupted after %ld requests: the figures are over what completed",
                         n_ended_total);
        else
            bresult_warn(doc, "interrupted after %ld of %ld requests: the figures are over what completed",
                         n_ended_total, n_planned_total);
    }

    if (!rc || any_ok || interrupted) {
        bool stdout_json = o.json_path && !strcmp(o.json_path, "-");
        if (render_outputs(doc, o.json_path, o.csv_path, o.svg_path, o.md && !stdout_json, !stdout_json)) rc = BX_FAILED;
        const cJSON *w;
        if (stdout_json || o.md) /* the terminal table lists them itself */
            cJSON_ArrayForEach(w, cJSON_GetObjectItem(doc, "warnings"))
                fprintf(stderr, "gpumod: bench: warning: %s\n", w->valuestring);
        if (!o.no_store && any_ok) {
            int64_t id = 0;
            char serr[300] = "";
            if (bstore_post(doc, 5000, &id, serr, sizeof serr) < 0)
                fprintf(stderr, "gpumod: bench: warning: the result was not stored by the daemon: %s\n", serr);
        }
    }
    if (interrupted) {
        fprintf(stderr, "gpumod: bench: interrupted\n");
        rc = BX_INTERRUPTED;
    } else if (!rc && !any_ok) {
        fprintf(stderr, "gpumod: bench: every request failed: %s\n", first_err[0] ? first_err : "no request completed");
        rc = BX_FAILED;
    }
    btarget_release(&t);
    cJSON_Delete(doc);
    free(o.conc);
    free(o.rate);
    return rc;
}

int bench_main(int argc, char **argv)
{
    static const opt_sub subs[] = {{"compare", cmd_compare}, {"report", cmd_report}, {"switch", bswitch_main}, {NULL, NULL}};
    return opt_dispatch(argc, argv, usage_text, subs, cmd_run);
}
