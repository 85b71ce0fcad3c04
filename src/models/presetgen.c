/* presetgen.c (models) - `gpumod preset new --from FILE|SOURCE [--id ID]
 * [--mode MODE] [--ctx N] [--port N] [--out FILE|-] [--yes] [--endpoint
 * URL] [--json]`: a llama.cpp preset for one model, with the figures the
 * estimator and the gate chose (the largest context that fits alone or
 * beside a mode, the GPU layers or MoE experts on the CPU when the whole
 * model does not fit) and a comment above each saying how.  Shown, then
 * written (after a yes) to <config>/presets/<id>.yaml, never over a file. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/fit.h"
#include "models/presetgen.h"
#include "util/utf8.h"
#include "util/buf.h"
#include "util/errf.h"
#include "util/exitcode.h"

#define EXIT_INTERRUPTED 130 /* 128 + SIGINT, as the shell says it */

typedef struct pn_args {
    const char *source, *id, *mode, *out, *endpoint;
    int64_t ctx, port; /* 0: choose */
    bool yes;
} pn_args;

typedef struct pn_plan {
    int64_t ctx, ngl, n_cpu_moe; /* ngl -1: all */
    char ctx_why[512], ngl_why[512], moe_why[512];
} pn_plan;

static int pn_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int pn_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpumod: preset new: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: gpumod preset new --from FILE|SOURCE [--id ID] [--mode MODE] "
                    "[--ctx N] [--port N] [--out FILE|-] [--yes] [--endpoint URL] [--json]\n");
    return EXIT_USAGE;
}

static int pn_int(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long n = v ? strtoll(v, &end, 10) : 0;
    if (!v || !*v || *end || n < lo || n > hi)
        return pn_usage("%s: expected an integer in %lld..%lld, found '%s'", opt, (long long)lo,
                        (long long)hi, v ? v : "");
    *out = n;
    return 0;
}

static int pn_parse(int argc, char **argv, pn_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--yes") || !strcmp(s, "-y")) {
            a->yes = true;
            continue;
        }
        static const char *const valued[] = {"--from",     "--id",  "--mode", "--out",
                                             "--endpoint", "--ctx", "--port"};
        size_t k = 0;
        while (k < 7 && strcmp(s, valued[k]))
            k++;
        if (k == 7) {
            if (s[0] == '-' || a->source) return pn_usage("unexpected argument '%s'", s);
            a->source = s;
            continue;
        }
        if (i + 1 >= argc) return pn_usage("%s: expected a value", s);
        const char *v = argv[++i];
        const char **dst[] = {&a->source, &a->id, &a->mode, &a->out, &a->endpoint};
        if (k < 5)
            *dst[k] = v;
        else if (k == 5 ? pn_int("--ctx", v, 256, FIT_CTX_MAX, &a->ctx)
                        : pn_int("--port", v, 1, 65535, &a->port))
            return EXIT_USAGE;
    }
    if (!a->source) return pn_usage("missing --from FILE|SOURCE");
    return 0;
}

/* "Qwen3-8B-Q4_K_M-00001-of-00002.gguf" -> "qwen3-8b-q4-k-m" */
static void id_from_name(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
    const char *of = strstr(base, "-of-");
    if (of && (size_t)(of - base) >= 6 && of[-6] == '-' && (size_t)(of - base) < n)
        n -= n - (size_t)(of - base - 6);
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < len && o < 64; i++) {
        char ch = (char)tolower((unsigned char)base[i]);
        if (!isalnum((unsigned char)ch) || (unsigned char)ch > 127) ch = '-';
        if (ch == '-' && (o == 0 || out[o - 1] == '-')) continue;
        out[o++] = ch;
    }
    while (o && out[o - 1] == '-')
        o--;
    out[o] = 0;
    if (!o) snprintf(out, len, "model");
}

static bool port_free(int64_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

static int64_t choose_port(const config *cfg)
{
    for (int64_t p = 8081; p < 65536; p++) {
        bool used = false;
        for (size_t i = 0; i < cfg->n_presets && !used; i++)
            used = cfg->presets[i].port == p;
        if (!used && port_free(p)) return p;
    }
    return 0;
}

/* "beside mode 'chat' on gpu 0 (24.0 GiB, 1.0 GiB margin)" */
static void where_text(const fit_host *h, char *out, size_t len)
{
    buf b = BUF_INIT;
    if (h->mode)
        buf_printf(&b, "beside mode '%s'", h->mode);
    else
        buf_adds(&b, "alone (no other GPU process)");
    if (!h->ndev) {
        buf_adds(&b, " on the host (");
        buf_bytes(&b, h->now.host.mem_available);
        buf_adds(&b, " available, ");
        buf_bytes(&b, h->pol.host_margin_bytes);
    } else {
        buf_printf(&b, " on gpu %d (", h->dev_index[0]);
        buf_bytes(&b, h->alone.gpus[0].total_bytes);
        buf_adds(&b, ", ");
        buf_bytes(&b, h->pol.gpu_margin_bytes);
    }
    buf_adds(&b, " margin)");
    snprintf(out, len, "%s", b.p);
    buf_release(&b);
}

/* The fewest MoE layers on the CPU (ngl all), or the most GPU layers, that
 * fit at p->ctx; 0, or -1 with err. */
static int plan_partial(const fit_host *h, const fit_model *fm, est_params ep, int against,
                        const char *where, pn_plan *p, char *err, size_t errlen)
{
    verdict v;
    char e2[256];
    ep.ctx = p->ctx;
    int64_t nl = fm->m.n_layer > 0 ? fm->m.n_layer : 1;
    if (h->ndev && fm->m.n_expert > 0) {
        int64_t lo = 1, hi = nl + 1; /* the smallest that fits; nl + 1: none */
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            ep.n_cpu_moe = mid;
            if (fit_try(h, against, &fm->g, &ep, &v, e2, sizeof e2) == 1)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (lo <= nl) {
            p->ngl = -1;
            p->n_cpu_moe = lo;
            snprintf(p->ngl_why, sizeof p->ngl_why,
                     "all, with the experts of the first %lld "
                     "layers on the CPU (n_cpu_moe below)",
                     (long long)lo);
            snprintf(p->moe_why, sizeof p->moe_why,
                     "the fewest of %lld MoE layers whose experts "
                     "stay on the CPU so that the rest fits %s at context %lld: %lld",
                     (long long)nl, where, (long long)p->ctx, (long long)lo);
            return 0;
        }
        ep.n_cpu_moe = 0;
    }
    int64_t lo = -1, hi = h->ndev ? nl : 0; /* the largest that fits; -1: none */
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        ep.ngl = mid;
        if (fit_try(h, against, &fm->g, &ep, &v, e2, sizeof e2) == 1)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo < 0) {
        ep.ngl = 0;
        fit_try(h, against, &fm->g, &ep, &v, e2, sizeof e2);
        return errf_ret(-1, err, errlen,
                        "'%s' does not fit %s at context %lld even with no layer "
                        "on the GPU: %s",
                        fm->grp->label, where, (long long)p->ctx, v.reason);
    }
    p->ngl = lo;
    snprintf(p->ngl_why, sizeof p->ngl_why,
             "the most of %lld layers that fit %s at context %lld: "
             "%lld",
             (long long)nl, where, (long long)p->ctx, (long long)lo);
    return 0;
}

static int plan(const fit_host *h, const fit_model *fm, const pn_args *a, pn_plan *p, char *err,
                size_t errlen)
{
    memset(p, 0, sizeof *p);
    int against = h->mode ? FIT_MODE : FIT_ALONE;
    char where[256];
    where_text(h, where, sizeof where);
    est_params ep;
    est_params_default(&ep);
    ep.ndev = h->ndev;
    ep.ngl = h->ndev ? -1 : 0;
    p->ngl = ep.ngl;
    int64_t train = fm->m.n_ctx_train;
    if (a->ctx && train > 0 && a->ctx > train)
        return errf_ret(-1, err, errlen, "--ctx %lld: over the model's trained context (%lld)",
                        (long long)a->ctx, (long long)train);
    int64_t cap = fit_ctx_train(&fm->m);
    bool capped = !a->ctx && cap > 32768;
    if (capped) cap = 32768;
    int64_t max_all = fit_max_ctx(h, against, &fm->g, &ep, cap);
    bool fits_asked = false;
    int64_t floor_ctx = cap < 4096 ? cap : 4096; /* below it, rather part of the model on the CPU */
    bool whole = max_all > 0 && (max_all >= floor_ctx || !h->ndev);
    if (a->ctx) {
        verdict v;
        char e2[256];
        ep.ctx = a->ctx;
        int r = fit_try(h, against, &fm->g, &ep, &v, e2, sizeof e2);
        if (r < 0) return errf_ret(-1, err, errlen, "%s", e2);
        if (r == 0 && max_all > 0)
            return errf_ret(-1, err, errlen,
                            "--ctx %lld does not fit %s with every layer on the GPU (%s); the "
                            "largest context that fits is %lld",
                            (long long)a->ctx, where, v.reason, (long long)max_all);
        p->ctx = a->ctx;
        fits_asked = r == 1;
        snprintf(p->ctx_why, sizeof p->ctx_why, "as asked (--ctx %lld)%s", (long long)a->ctx,
                 r ? "; it fits " : "");
        if (r)
            snprintf(p->ctx_why + strlen(p->ctx_why), sizeof p->ctx_why - strlen(p->ctx_why), "%s",
                     where);
    } else if (whole) {
        p->ctx = max_all;
        snprintf(p->ctx_why, sizeof p->ctx_why, "the largest that fits %s%s: %lld", where,
                 capped      ? ", capped at 32768 (--ctx for more)"
                 : train > 0 ? ", up to the trained context"
                             : "",
                 (long long)max_all);
    } else {
        p->ctx = floor_ctx;
        char upto[64] = "at no context";
        if (max_all) snprintf(upto, sizeof upto, "only up to context %lld", (long long)max_all);
        snprintf(p->ctx_why, sizeof p->ctx_why,
                 "the whole model fits %s %s: %lld, with part of "
                 "it on the CPU",
                 where, upto, (long long)p->ctx);
    }
    if (a->ctx ? !fits_asked : !whole) {
        if (!h->ndev) {
            verdict v;
            char e2[256];
            ep.ctx = p->ctx;
            fit_try(h, against, &fm->g, &ep, &v, e2, sizeof e2);
            return errf_ret(-1, err, errlen, "'%s' does not fit %s at context %lld: %s",
                            fm->grp->label, where, (long long)p->ctx, v.reason[0] ? v.reason : e2);
        }
        return plan_partial(h, fm, ep, against, where, p, err, errlen);
    }
    if (p->ngl < 0)
        snprintf(p->ngl_why, sizeof p->ngl_why, "all: the whole model fits at this context");
    else
        snprintf(p->ngl_why, sizeof p->ngl_why, "0: no GPU is used");
    return 0;
}

/* ---- text: comments, the terminal, YAML scalars ---- */

int pn_yaml_quote(buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (uint32_t c; *p; p += utf8_next(p, &c))
        if (!utf8_next(p, &c)) return -1;
    buf_addc(b, '"');
    for (p = (const unsigned char *)s; *p;) {
        uint32_t c;
        size_t n = utf8_next(p, &c);
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", (char)c);
        else if (c == '\n')
            buf_adds(b, "\\n");
        else if (c == '\t')
            buf_adds(b, "\\t");
        else if (utf8_unsafe(c))
            buf_printf(b, c <= 0xff ? "\\x%02x" : c <= 0xffff ? "\\u%04x" : "\\U%08x", (unsigned)c);
        else
            buf_add(b, p, n);
        p += n;
    }
    buf_addc(b, '"');
    return 0;
}

/* One comment line: indent, "# ", the formatted text cleaned, "\n". */
static void comment(buf *b, const char *indent, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void comment(buf *b, const char *indent, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *raw = xvasprintf(fmt, ap);
    va_end(ap);
    char *t = utf8_clean(raw);
    buf_printf(b, "%s# %s\n", indent, t);
    free(t);
    free(raw);
}

/* "key: <quoted value>\n"; -1 with err when value is not UTF-8. */
static int yaml_kv(buf *b, const char *key, const char *value, char *err, size_t errlen)
{
    buf_printf(b, "%s: ", key);
    if (pn_yaml_quote(b, value)) {
        char *t = utf8_clean(value);
        errf(err, errlen, "%s '%s' is not valid UTF-8: a preset cannot hold it", key, t);
        free(t);
        return -1;
    }
    buf_addc(b, '\n');
    return 0;
}

static int build_yaml(buf *b, const char *id, const char *source, const char *pull,
                      const fit_model *fm, const char *model_path, int64_t port, const pn_plan *p,
                      bool port_given, char *err, size_t errlen)
{
    comment(b, "", "Written by gpumod preset new from %s", source);
    double np = (double)fm->m.n_params;
    char size[32];
    buf sb = BUF_INIT;
    buf_bytes(&sb, fm->g.file_bytes);
    snprintf(size, sizeof size, "%s", sb.p);
    buf_release(&sb);
    comment(b, "", "%s, %.2f %s parameters, %s, %s, trained context %lld",
            fm->m.arch[0] ? fm->m.arch : "?", np >= 1e9 ? np / 1e9 : np / 1e6,
            np >= 1e9 ? "B" : "M",
            fm->m.file_type_name ? fm->m.file_type_name : "unknown file type", size,
            (long long)fm->m.n_ctx_train);
    char *name = utf8_clean(fm->grp->label); /* config check refuses control characters */
    int bad = yaml_kv(b, "id", id, err, errlen) || yaml_kv(b, "name", name, err, errlen);
    free(name);
    if (bad) return -1;
    buf_adds(b, "driver: llamacpp\n");
    comment(b, "", "port: %s",
            port_given ? "as asked (--port)"
                       : "the first from 8081 that no preset uses and nothing listens on now");
    buf_printf(b, "port: %lld\n", (long long)port);
    if (pull)
        comment(b, "", "model_path: where `gpumod model pull %s` puts it: pull it first", pull);
    if (yaml_kv(b, "model_path", model_path, err, errlen)) return -1;
    comment(b, "", "context_size: %s", p->ctx_why);
    buf_printf(b, "context_size: %lld\nunit_vars:\n", (long long)p->ctx);
    comment(b, "  ", "n_gpu_layers: %s", p->ngl_why);
    if (p->ngl < 0)
        buf_adds(b, "  n_gpu_layers: all\n");
    else
        buf_printf(b, "  n_gpu_layers: %lld\n", (long long)p->ngl);
    if (p->n_cpu_moe) {
        comment(b, "  ", "n_cpu_moe: %s", p->moe_why);
        buf_printf(b, "  n_cpu_moe: %lld\n", (long long)p->n_cpu_moe);
    }
    buf_adds(b, "  # parallel: one slot, as the estimate assumed\n  parallel: 1\n");
    return 0;
}

/* Where the model is (local) or will be once pulled (remote): then *pull
 * is the SOURCE to pull (malloc). */
static char *model_path_of(const mctx *c, const msource *s, const mgroup *grp, char **pull)
{
    *pull = NULL;
    if (!grp->parts[0].url) {
        char *r = realpath(grp->first, NULL);
        return r ? r : xstrdup(grp->first);
    }
    const char *dir = c->cfg.set.models_dir ? c->cfg.set.models_dir : ".";
    if (s->kind == MSRC_HF) {
        bool rev = s->revision && strcmp(s->revision, "main");
        *pull = xasprintf("hf:%s%s%s/%s", s->repo, rev ? "@" : "", rev ? s->revision : "",
                          grp->parts[0].path);
        return xasprintf("%s/%s/%s", dir, s->repo, grp->parts[0].path);
    }
    const char *base = strrchr(grp->parts[0].path, '/');
    *pull = xstrdup(grp->first);
    return xasprintf("%s/%s", dir, base ? base + 1 : grp->parts[0].path);
}

/* y/N on the terminal (stdin must be one), 5 minutes to answer: 1 yes,
 * 0 no, -1 not a terminal, -2 interrupted (SIGINT, SIGTERM). */
static int confirm(const char *path, volatile int *interrupted)
{
    char *shown = utf8_clean(path);
    if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "gpumod: preset new: not a terminal: pass --yes to write %s\n", shown);
        free(shown);
        return -1;
    }
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    int in = fd >= 0 ? fd : STDIN_FILENO, outfd = fd >= 0 ? fd : STDERR_FILENO;
    char *q = xasprintf("write %s? [y/N] ", shown);
    free(shown);
    ssize_t w = write(outfd, q, strlen(q)); /* unseen, the answer still counts */
    (void)w;
    free(q);
    struct pollfd pf = {in, POLLIN, 0};
    char ans[16] = "";
    int rc = 0;
    /* short slices: a SIGINT that lands between the prompt and poll()
     * would otherwise wait out the 5 minutes */
    int pr = 0;
    for (int slice = 0; slice < 1500 && pr == 0 && !(interrupted && *interrupted); slice++)
        pr = poll(&pf, 1, 200);
    if (pr == 1) {
        ssize_t k = read(in, ans, sizeof ans - 1);
        ans[k > 0 ? k : 0] = 0;
    }
    if ((pr < 0 || ans[0] == 0) && interrupted && *interrupted) {
        fputc('\n', stderr); /* off the prompt's line */
        rc = -2;
    } else if (pr < 0) {
        fprintf(stderr, "\ngpumod: preset new: cannot read the answer: %s\n", strerror(errno));
    } else if (pr == 0) {
        fprintf(stderr, "\ngpumod: preset new: no answer in 5 minutes\n");
    } else {
        rc = ans[0] == 'y' || ans[0] == 'Y' ? 1 : 0;
    }
    if (fd >= 0) close(fd);
    return rc;
}

/* tmp + link: atomic, and never over an existing file. */
static int write_new(const char *path, const buf *text, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return errf_ret(-1, err, errlen, "%s exists: not overwritten (--out FILE elsewhere)", path);
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (mkdir(dir, 0755) && errno != EEXIST) {
            errf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
            free(dir);
            return -1;
        }
    }
    free(dir);
    char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -1 : 0;
    if (fd >= 0) {
        rc = write(fd, text->p, text->len) == (ssize_t)text->len && fsync(fd) == 0 ? 0 : -1;
        if (close(fd)) rc = -1;
    }
    if (rc == 0 && link(tmp, path)) rc = -1;
    if (rc) errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (fd >= 0) unlink(tmp);
    free(tmp);
    return rc;
}

typedef struct pn_ctx {
    mctx *c;
    pn_args a;
    config cfg;
    fit_host h;
    mhub hub;
    bool has_hub, resolved;
    msource s;
    fit_model fm;
    char id[72];
    char *model_path, *pull, *path;
    int64_t port;
    pn_plan p;
    buf yaml;
} pn_ctx;

/* "'S' names no model (skipped: ...)", or the models to name one of */
static int pn_not_one(pn_ctx *x, char *err, size_t errlen)
{
    buf b = BUF_INIT;
    int rc = EXIT_USAGE;
    if (!x->s.ngroups) {
        for (size_t i = 0; i < x->s.skipped.n; i++)
            buf_printf(&b, "%s%s", i ? "; " : " (skipped: ", x->s.skipped.v[i]);
        if (x->s.skipped.n) buf_addc(&b, ')');
        buf_printf(&b, "%s", x->s.skipped.n ? "" : ": no .gguf file");
        rc = EXIT_REFUSED;
    }
    for (size_t i = 0; i < x->s.ngroups; i++)
        buf_printf(&b, "\n  %s%s/%s", x->s.kind == MSRC_HF ? "hf:" : "",
                   x->s.kind == MSRC_HF ? x->s.repo : x->a.source, x->s.groups[i].parts[0].path);
    if (!x->s.ngroups)
        errf(err, errlen, "'%s' names no model%s", x->a.source, b.p);
    else
        errf(err, errlen, "'%s' names %zu models; name one:%s", x->a.source, x->s.ngroups, b.p);
    buf_release(&b);
    return rc;
}

static int pn_source(pn_ctx *x, char *err, size_t errlen)
{
    x->has_hub = mhub_init(&x->hub, &x->c->cfg.set, x->a.endpoint, err, errlen) == 0;
    if (x->has_hub) x->hub.interrupted = x->c->interrupted;
    if (!x->has_hub && (!strncmp(x->a.source, "hf:", 3) || x->a.endpoint)) return EXIT_USAGE;
    if (msource_resolve(x->has_hub ? &x->hub : NULL, x->a.source, &x->s, err, errlen))
        return EXIT_REFUSED;
    x->resolved = true;
    if (x->s.ngroups != 1) return pn_not_one(x, err, errlen);
    fit_open_groups(x->c, x->has_hub ? &x->hub : NULL, &x->s, &x->fm);
    if (!x->fm.described) {
        errf(err, errlen, "%s", x->fm.err);
        return EXIT_REFUSED;
    }
    return 0;
}

static int pn_choose(pn_ctx *x, char *err, size_t errlen)
{
    if (x->a.id) {
        size_t n = strlen(x->a.id);
        bool ok = n > 0 && n <= 64;
        for (size_t i = 0; i < n && ok; i++)
            ok = islower((unsigned char)x->a.id[i]) || isdigit((unsigned char)x->a.id[i]) ||
                 (i > 0 && x->a.id[i] == '-');
        if (!ok)
            return errf_ret(EXIT_USAGE, err, errlen,
                            "--id '%s': expected 1 to 64 of a-z, 0-9 and '-' (not first)", x->a.id);
        snprintf(x->id, sizeof x->id, "%s", x->a.id);
    } else {
        id_from_name(x->fm.grp->parts[0].path, x->id, sizeof x->id);
    }
    const preset *dup = config_preset(&x->cfg, x->id);
    if (dup)
        return errf_ret(EXIT_USAGE, err, errlen, "a preset '%s' exists already (%s): --id ANOTHER",
                        x->id, dup->pos.file ? dup->pos.file : x->cfg.presets_dir);
    x->port = x->a.port ? x->a.port : choose_port(&x->cfg);
    if (!x->port) return errf_ret(EXIT_REFUSED, err, errlen, "no free port from 8081 up");
    if (plan(&x->h, &x->fm, &x->a, &x->p, err, errlen)) return EXIT_REFUSED;
    x->model_path = model_path_of(x->c, &x->s, x->fm.grp, &x->pull);
    char *clean = utf8_clean(x->model_path);
    bool odd = strcmp(clean, x->model_path) != 0;
    if (odd)
        errf(err, errlen,
             "model_path '%s' holds a control character or bytes that are not UTF-8 (shown as "
             "'?'): config check refuses such a path; rename the file",
             clean);
    free(clean);
    if (odd) return EXIT_REFUSED;
    if (build_yaml(&x->yaml, x->id, x->a.source, x->pull, &x->fm, x->model_path, x->port, &x->p,
                   x->a.port != 0, err, errlen))
        return EXIT_REFUSED;
    if (!x->a.out)
        x->path = xasprintf("%s/%s.yaml", x->cfg.presets_dir, x->id);
    else if (strcmp(x->a.out, "-"))
        x->path = xstrdup(x->a.out);
    return 0;
}

static void pn_json(pn_ctx *x, bool written)
{
    buf b = BUF_INIT;
    buf_adds(&b, "{\"id\":");
    buf_json_str(&b, x->id);
    buf_adds(&b, ",\"path\":");
    buf_json_str_or_null(&b, x->path);
    buf_adds(&b, ",\"model_path\":");
    buf_json_str(&b, x->model_path);
    buf_adds(&b, ",\"pull\":");
    buf_json_str_or_null(&b, x->pull);
    buf_adds(&b, ",\"preset\":");
    buf_json_str(&b, x->yaml.p);
    buf_printf(&b,
               ",\"context_size\":%lld,\"n_gpu_layers\":%lld,\"n_cpu_moe\":%lld,\"port\":%lld,"
               "\"written\":%s}\n",
               (long long)x->p.ctx, (long long)x->p.ngl, (long long)x->p.n_cpu_moe,
               (long long)x->port, written ? "true" : "false");
    fputs(b.p, stdout);
    buf_release(&b);
}

static int pn_output(pn_ctx *x, char *err, size_t errlen)
{
    if (!x->c->json) {
        fputs(x->yaml.p, stdout);
        fflush(stdout);
    }
    int rc = EXIT_OK;
    bool written = false;
    if (x->path) {
        int yes = x->a.yes ? 1 : confirm(x->path, x->c->interrupted);
        if (yes == -2)
            rc = errf_ret(EXIT_INTERRUPTED, err, errlen, "interrupted: not written");
        else if (yes < 0)
            rc = EXIT_USAGE;
        else if (!yes)
            rc = errf_ret(EXIT_REFUSED, err, errlen, "not written");
        else if (write_new(x->path, &x->yaml, err, errlen))
            rc = EXIT_REFUSED;
        else
            written = true;
    }
    if (x->c->json) pn_json(x, written);
    if (written && !x->c->json) {
        char *path = utf8_clean(x->path), *pull = utf8_clean(x->pull);
        printf("wrote %s\n", path);
        if (x->pull) printf("next: gpumod model pull %s\n", pull);
        free(path);
        free(pull);
    }
    return rc;
}

/* err on stderr, each of its lines cleaned (a path or a label may hold
 * an escape) */
static void print_err(const char *err)
{
    fputs("gpumod: preset new: ", stderr);
    for (const char *p = err; p;) {
        const char *nl = strchr(p, '\n');
        char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
        char *t = utf8_clean(line);
        fprintf(stderr, "%s\n", t);
        free(t);
        free(line);
        p = nl ? nl + 1 : NULL;
    }
}

int preset_new_cmd(mctx *c, int argc, char **argv)
{
    pn_ctx *x = xcalloc(1, sizeof *x);
    x->c = c;
    buf_init(&x->yaml);
    if (pn_parse(argc, argv, &x->a)) {
        free(x);
        return EXIT_USAGE;
    }
    config_paths paths = {getenv("GPUMOD_CONFIG_DIR"), getenv("GPUMOD_STATE_DIR"),
                          getenv("GPUMOD_SOCKET")};
    config_load(&x->cfg, &paths);
    char err[2048] = "";
    int rc = 0;
    if (fit_host_init(&x->h, c, x->a.mode, -1, err, sizeof err)) rc = EXIT_USAGE;
    if (!rc) rc = pn_source(x, err, sizeof err);
    if (!rc) rc = pn_choose(x, err, sizeof err);
    if (!rc) rc = pn_output(x, err, sizeof err);
    if (rc && err[0]) print_err(err);
    fit_model_release(&x->fm);
    if (x->resolved) msource_release(&x->s);
    if (x->has_hub) mhub_release(&x->hub);
    fit_host_release(&x->h);
    config_release(&x->cfg);
    buf_release(&x->yaml);
    free(x->model_path);
    free(x->pull);
    free(x->path);
    free(x);
    return rc;
}
