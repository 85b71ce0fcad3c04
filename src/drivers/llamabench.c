/* llamabench.c - llama-bench's place, argv and output (llamabench.h).
 *
 * It is looked for beside llama-server only: a llama-bench elsewhere on
 * PATH may come from another build, whose figures would not be the
 * server's.  -ngl all is 999 (llama-bench takes a number); the split
 * over several GPUs is left to llama-bench's default, the devices being
 * chosen by CUDA_VISIBLE_DEVICES as for the service. */
#include "drivers/llamabench.h"
#include "drivers/driver.h"
#include "util/jstrict.h"
#include "util/run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *lbench_binary(const settings *s, char *err, size_t errlen)
{
    const char *bin = s->driver_binary[DRV_LLAMACPP];
    if (!bin || !*bin) {
        snprintf(err, errlen, "no binary configured for driver 'llamacpp' (drivers.llamacpp.binary)");
        return NULL;
    }
    int e = 0;
    char *server = strchr(bin, '/') ? xstrdup(bin) : run_which(bin, &e);
    if (!server) {
        snprintf(err, errlen, "drivers.llamacpp.binary '%s': not found in PATH (%s), so no llama-bench beside it", bin,
                 strerror(e ? e : ENOENT));
        return NULL;
    }
    char *slash = strrchr(server, '/');
    char *path = xasprintf("%.*s/llama-bench", (int)(slash - server), server);
    if (access(path, X_OK) != 0) {
        snprintf(err, errlen, "no llama-bench beside the llamacpp binary: looked for '%s' (%s)", path,
                 strerror(errno));
        free(path);
        path = NULL;
    }
    free(server);
    return path;
}

static void push_i64(strv *a, const char *flag, int64_t v)
{
    strv_push(a, flag);
    strv_pushf(a, "%" PRId64, v);
}

/* the preset's flags that llama-bench takes, in its spelling */
static void push_flags(const llama_opts *o, strv *a)
{
    if (o->threads >= 0) push_i64(a, "-t", o->threads);
    if (o->batch_size > 0) push_i64(a, "-b", o->batch_size);
    if (o->ubatch_size > 0) push_i64(a, "-ub", o->ubatch_size);
    if (o->cache_type_k) {
        strv_push(a, "-ctk");
        strv_push(a, o->cache_type_k);
    }
    if (o->cache_type_v) {
        strv_push(a, "-ctv");
        strv_push(a, o->cache_type_v);
    }
    if (o->flash_attn != TRI_UNSET) {
        strv_push(a, "-fa");
        strv_push(a, o->flash_attn == TRI_ON ? "1" : "0");
    }
    if (o->n_gpu_layers == -1)
        push_i64(a, "-ngl", 999);
    else if (o->n_gpu_layers >= 0)
        push_i64(a, "-ngl", o->n_gpu_layers);
    if (o->n_cpu_moe >= 0) push_i64(a, "--n-cpu-moe", o->n_cpu_moe);
}

int lbench_launch(const preset *p, const settings *s, const char *bin, const lbench_args *a, strv *argv, strv *env,
                  char *err, size_t errlen)
{
    if (p->driver != DRV_LLAMACPP || !p->model_path) {
        snprintf(err, errlen, "preset '%s': llama-bench runs a single-model llama.cpp preset (driver llamacpp with "
                 "model_path)", p->id);
        return -1;
    }
    launch l = LAUNCH_INIT;
    if (driver_launch(p, s, &l, err, errlen) != 0) return -1;
    strv_push(argv, bin);
    strv_push(argv, "-m");
    strv_push(argv, p->model_path);
    push_i64(argv, "-p", a->n_prompt);
    push_i64(argv, "-n", a->n_gen);
    push_i64(argv, "-r", a->repetitions);
    strv_push(argv, "-o");
    strv_push(argv, "json");
    push_flags(&p->llama, argv);
    strv_extend(env, &l.env);
    launch_release(&l);
    return 0;
}

static void num(buf *out, double v)
{
    buf_printf(out, "%.10g", v);
}

static int entry_fail(char *err, size_t errlen, size_t i, const char *what)
{
    snprintf(err, errlen, "llama-bench's output: entry %zu: %s", i, what);
    return -1;
}

/* one entry reduced; -1 with err */
static int reduce_one(const cJSON *e, size_t i, buf *out, char *err, size_t errlen)
{
    if (!cJSON_IsObject(e)) return entry_fail(err, errlen, i, "not an object");
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(e, "n_prompt");
    const cJSON *ng = cJSON_GetObjectItemCaseSensitive(e, "n_gen");
    const cJSON *avg = cJSON_GetObjectItemCaseSensitive(e, "avg_ts");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(e, "stddev_ts");
    const cJSON *sm = cJSON_GetObjectItemCaseSensitive(e, "samples_ts");
    if (!cJSON_IsNumber(np) || !cJSON_IsNumber(ng) || !cJSON_IsNumber(avg))
        return entry_fail(err, errlen, i, "expected numbers n_prompt, n_gen and avg_ts");
    if (sm && !cJSON_IsArray(sm)) return entry_fail(err, errlen, i, "samples_ts is not an array");
    buf_printf(out, "{\"n_prompt\":%lld,\"n_gen\":%lld,\"avg_ts\":", (long long)np->valuedouble,
               (long long)ng->valuedouble);
    num(out, avg->valuedouble);
    buf_adds(out, ",\"stddev_ts\":");
    if (cJSON_IsNumber(sd))
        num(out, sd->valuedouble);
    else
        buf_adds(out, "null");
    buf_adds(out, ",\"samples_ts\":[");
    size_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, sm)
    {
        if (!cJSON_IsNumber(it)) return entry_fail(err, errlen, i, "samples_ts holds a value not a number");
        if (k++) buf_addc(out, ',');
        num(out, it->valuedouble);
    }
    buf_adds(out, "]}");
    return 0;
}

int lbench_reduce(const char *text, size_t len, buf *out, size_t *n, char *err, size_t errlen)
{
    char jerr[256];
    *n = 0;
    cJSON *j = jstrict_parse(text, len, jerr, sizeof jerr);
    if (!j || !cJSON_IsArray(j)) {
        snprintf(err, errlen, "llama-bench's output is not a JSON array: %s", j ? "found another JSON value" : jerr);
        cJSON_Delete(j);
        return -1;
    }
    buf tmp = BUF_INIT;
    buf_addc(&tmp, '[');
    const cJSON *e;
    int rc = 0;
    cJSON_ArrayForEach(e, j)
    {
        if (*n) buf_addc(&tmp, ',');
        if ((rc = reduce_one(e, *n, &tmp, err, errlen)) != 0) break;
        (*n)++;
    }
    buf_addc(&tmp, ']');
    if (!rc) buf_add(out, tmp.p, tmp.len);
    else *n = 0;
    buf_release(&tmp);
    cJSON_Delete(j);
    return rc;
}
