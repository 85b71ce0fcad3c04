/* thub.c - the tools that ask the Hugging Face Hub: search_hf_models,
 * list_gguf_files, fetch_model_config, generate_preset and pull_model
 * (the Python project's tools of the same names).
 *
 * gpumod-mcp links no HTTP client: each tool runs the libcurl helper
 * (gpumod-bench, found beside this executable or in GPUMOD_LIBEXECDIR, as
 * the CLI finds it) under the name gpumod-model or gpumod-preset with
 * --json, never through a shell, under a deadline, cancelled when the
 * caller cancels the call; its stdout (bounded) is the tool's JSON, its
 * stderr the error.  The Hub's address and token come from the
 * environment and settings as for `gpumod model`: HF_ENDPOINT, HF_TOKEN. */
#include "mcp/tools.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl.h"
#include "util/buf.h"
#include "util/run.h"
#include "util/strv.h"

#define HUB_TIMEOUT_MS 120000
#define PULL_TIMEOUT_MS (24LL * 3600 * 1000) /* the helper's own stall limit ends a dead one */
#define HUB_MAX_OUT (16u << 20)

/* ---- argument checks (pure; tests/unit/test_mcp.c) ---- */

int mcp_check_repo_id(const char *s, char *err, size_t errlen)
{
    int parts = 0;
    const char *p = s;
    while (*p) {
        if (!isalnum((unsigned char)*p)) break;
        while (*p && *p != '/') {
            if (!isalnum((unsigned char)*p) && !strchr("._-", *p)) goto bad;
            p++;
        }
        parts++;
        if (*p == '/' && parts < 2 && p[1])
            p++;
        else if (*p)
            goto bad;
    }
    if (parts == 2 && !*p && !strstr(s, "..")) return 0;
bad:
    snprintf(err, errlen,
             "repo_id '%.200s': expected ORG/REPO (letters, digits, '.', '_', '-', each part "
             "starting with a letter or digit; no '..')",
             s);
    return -1;
}

int mcp_check_gguf_path(const char *s, char *err, size_t errlen)
{
    size_t n = strlen(s);
    const char *why = NULL;
    if (n < 6 || strcmp(s + n - 5, ".gguf"))
        why = "must end in .gguf";
    else if (s[0] == '/')
        why = "must be a path inside the repository, not absolute";
    else if (strstr(s, ".."))
        why = "must not contain '..'";
    else
        for (const char *p = s; *p && !why; p++)
            if (!isalnum((unsigned char)*p) && !strchr("._-/+", *p))
                why = "holds a character other than letters, digits, '.', '_', '-', '+', '/'";
    if (!why) return 0;
    snprintf(err, errlen, "'%.200s' %s", s, why);
    return -1;
}

static int check_repo_arg(const cJSON *args, char *err, size_t errlen)
{
    const char *r = jstr(args, "repo_id");
    return r ? mcp_check_repo_id(r, err, errlen) : 0;
}

int mcp_check_search_args(const cJSON *args, char *err, size_t errlen)
{
    const char *q = jstr(args, "search"), *a = jstr(args, "author");
    if (q && q[0] == '-') {
        snprintf(err, errlen, "search '%.100s': must not start with '-'", q);
        return -1;
    }
    for (const char *p = a; p && *p; p++)
        if ((!isalnum((unsigned char)*p) && !strchr("._-", *p)) || (p == a && *p == '-')) {
            snprintf(err, errlen, "author '%.100s': letters, digits, '.', '_', '-' only", a);
            return -1;
        }
    if ((!q || !*q) && (!a || !*a)) {
        snprintf(err, errlen, "give search, author or both");
        return -1;
    }
    return 0;
}

int mcp_check_preset_args(const cJSON *args, char *err, size_t errlen)
{
    if (check_repo_arg(args, err, errlen)) return -1;
    const char *f = jstr(args, "gguf_file");
    if (f && mcp_check_gguf_path(f, err, errlen)) return -1;
    const char *id = jstr(args, "service_id");
    if (!id) return 0;
    size_t n = strlen(id);
    bool ok = n >= 1 && n <= 64;
    for (size_t i = 0; i < n && ok; i++) /* what `preset new --id` takes */
        ok = islower((unsigned char)id[i]) || isdigit((unsigned char)id[i]) ||
             (i > 0 && id[i] == '-');
    if (ok) return 0;
    snprintf(err, errlen,
             "service_id '%.100s': expected 1 to 64 of a-z, 0-9 and '-' (not first), as preset "
             "new --id takes",
             id);
    return -1;
}

int mcp_check_pull_args(const cJSON *args, char *err, size_t errlen)
{
    if (check_repo_arg(args, err, errlen)) return -1;
    const char *f = jstr(args, "file");
    return f ? mcp_check_gguf_path(f, err, errlen) : 0;
}

int mcp_check_repo_args(const cJSON *args, char *err, size_t errlen)
{
    return check_repo_arg(args, err, errlen);
}

/* ---- the helper ---- */

/* gpumod-bench beside this executable, else in GPUMOD_LIBEXECDIR */
static char *helper_path(buf *looked)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
    const char *dirs[2] = {slash ? (*slash = '\0', self) : NULL, GPUMOD_LIBEXECDIR};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i]) continue;
        char *p = xasprintf("%s/gpumod-bench", dirs[i]);
        if (access(p, X_OK) == 0) return p;
        buf_printf(looked, "%s%s", looked->len ? ", " : "", dirs[i]);
        free(p);
    }
    return NULL;
}

/* The helper's error: from the last line that starts with "gpumod: "
 * (without it) to the end, its continuation lines ("  hf:ORG/REPO/FILE"
 * of a list) joined with a space; else the last non-empty line. */
static char *last_error(const char *s)
{
    const char *end = s + strlen(s);
    while (end > s && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    const char *b = NULL;
    for (const char *p = s; p < end; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : end)
        if (!strncmp(p, "gpumod: ", 8)) b = p + 8;
    if (!b) {
        b = end;
        while (b > s && b[-1] != '\n')
            b--;
    }
    buf o = BUF_INIT;
    for (const char *p = b; p < end; p++) {
        if (*p != '\n') {
            buf_addc(&o, *p);
            continue;
        }
        while (p + 1 < end && p[1] == ' ')
            p++;
        buf_addc(&o, ' ');
    }
    return buf_detach(&o);
}

/* Run the helper as name with av (NULL-terminated, av[0] ignored) and
 * --json; its JSON object into o->value, else the error. */
static void run_helper(tool_ctx *c, const char *tool, const char *name, char **av,
                       int64_t timeout_ms, tool_out *o)
{
    buf looked = BUF_INIT;
    char *path = helper_path(&looked);
    if (!path) {
        tout_error(o, "%s: the gpumod-bench helper is not installed (looked in %s)", tool,
                   looked.p);
        buf_release(&looked);
        return;
    }
    buf_release(&looked);
    strv argv = STRV_INIT, env = STRV_INIT;
    strv_push(&argv, name);
    for (char **a = av + 1; *a; a++)
        strv_push(&argv, *a);
    strv_push(&argv, "--json");
    strv_push(&env, "GPUMOD_QUIET=1");
    buf out = BUF_INIT, errb = BUF_INIT;
    run_opts ro = {.timeout_ms = timeout_ms,
                   .max_output = HUB_MAX_OUT,
                   .env = &env,
                   .file = path,
                   .err_out = &errb,
                   .cancel = (const volatile int *)&c->call->cancelled};
    run_result res;
    char err[512];
    int rc = run_capture(argv.v, &ro, &out, &res, err, sizeof err);
    cJSON *j = out.len && !res.truncated ? cJSON_ParseWithLength(out.p, out.len) : NULL;
    if (cJSON_IsObject(j) && res.exited && res.exit_code <= 1) {
        o->value = j;
        j = NULL;
    } else if (res.timed_out) {
        tout_error(o, "%s: no answer within %lld s", tool, (long long)(timeout_ms / 1000));
    } else if (res.exited && res.exit_code != 0 && errb.len) {
        char *l = last_error(errb.p);
        tout_error(o, "%s: %s", tool, l);
        free(l);
    } else if (rc) {
        tout_error(o, "%s: %s", tool, err);
    } else {
        tout_error(o, "%s: the helper's answer is not a JSON object%s", tool,
                   res.truncated ? " (over 16 MiB)" : "");
    }
    cJSON_Delete(j);
    buf_release(&out);
    buf_release(&errb);
    strv_release(&argv);
    strv_release(&env);
    free(path);
}

static long arg_long(const cJSON *args, const char *k, long dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

void tool_search_hf_models(tool_ctx *c, tool_out *o)
{
    char lim[24];
    snprintf(lim, sizeof lim, "%ld", arg_long(c->args, "limit", 20));
    const char *q = jstr(c->args, "search"), *a = jstr(c->args, "author"),
               *t = jstr(c->args, "task");
    char *av[12] = {NULL, "search", "--limit", lim};
    int n = 4;
    if (a && *a) av[n++] = "--author", av[n++] = (char *)a;
    if (t) av[n++] = "--task", av[n++] = (char *)t;
    if (q && *q) av[n++] = (char *)q;
    run_helper(c, "search_hf_models", "gpumod-model", av, HUB_TIMEOUT_MS, o);
}

static char *hf_source(const char *repo, const char *file)
{
    return file ? xasprintf("hf:%s/%s", repo, file) : xasprintf("hf:%s", repo);
}

/* need on the GPUs: the sum of the estimate's devices, or -1 */
static double gpu_need(const cJSON *f)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f, "estimate");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(e, "devices");
    if (!cJSON_IsArray(devs)) return -1;
    double sum = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, devs)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "total_bytes");
        if (cJSON_IsNumber(t)) sum += t->valuedouble;
    }
    return sum;
}

void tool_list_gguf_files(tool_ctx *c, tool_out *o)
{
    char *src = hf_source(jstr(c->args, "repo_id"), NULL);
    char *av[] = {NULL, "fit", src, NULL};
    run_helper(c, "list_gguf_files", "gpumod-model", av, HUB_TIMEOUT_MS, o);
    free(src);
    long budget = arg_long(c->args, "vram_budget_mb", 0);
    if (!o->value) return;
    cJSON_AddStringToObject(o->value, "repo_id", jstr(c->args, "repo_id"));
    cJSON *files = cJSON_GetObjectItemCaseSensitive(o->value, "files");
    cJSON_AddNumberToObject(o->value, "count", cJSON_GetArraySize(files));
    if (budget <= 0) return;
    cJSON_AddNumberToObject(o->value, "vram_budget_mb", (double)budget);
    cJSON *f;
    cJSON_ArrayForEach(f, files)
    {
        double need = gpu_need(f);
        cJSON_AddItemToObject(
            f, "gpu_need_mb",
            need < 0 ? cJSON_CreateNull()
                     : cJSON_CreateNumber((double)(long long)(need / 1048576 + 0.999)));
        cJSON_AddBoolToObject(f, "fits_budget", need >= 0 && need <= (double)budget * 1048576);
    }
}

void tool_fetch_model_config(tool_ctx *c, tool_out *o)
{
    char *src = hf_source(jstr(c->args, "repo_id"), NULL);
    char *av[] = {NULL, "config", src, NULL};
    run_helper(c, "fetch_model_config", "gpumod-model", av, HUB_TIMEOUT_MS, o);
    free(src);
}

void tool_generate_preset(tool_ctx *c, tool_out *o)
{
    char *src = hf_source(jstr(c->args, "repo_id"), jstr(c->args, "gguf_file"));
    char ctx[24];
    long n = arg_long(c->args, "context_size", 0);
    snprintf(ctx, sizeof ctx, "%ld", n);
    const char *id = jstr(c->args, "service_id");
    char *av[12] = {NULL, "new", "--from", src, "--out", "-", "--yes"};
    int k = 7;
    if (n > 0) av[k++] = "--ctx", av[k++] = ctx;
    if (id) av[k++] = "--id", av[k++] = (char *)id;
    run_helper(c, "generate_preset", "gpumod-preset", av, HUB_TIMEOUT_MS, o);
    free(src);
    if (o->value && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o->value, "written"))) {
        /* cannot happen with --out -: said loudly if it ever does */
        cJSON_Delete(o->value);
        o->value = NULL;
        tout_error(o, "generate_preset: the helper says it wrote a file; it must not");
    }
}

void tool_pull_model(tool_ctx *c, tool_out *o)
{
    if (!c->srv->allow_pull) {
        tout_error(o, "pull_model: not allowed: gpumod mcp runs without --allow-pull");
        return;
    }
    char *src = hf_source(jstr(c->args, "repo_id"), jstr(c->args, "file"));
    char *av[] = {NULL, "pull", src, NULL};
    run_helper(c, "pull_model", "gpumod-model", av, PULL_TIMEOUT_MS, o);
    free(src);
}
