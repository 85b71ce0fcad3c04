/* driver.c - dispatch by driver kind, the tail every driver shares
 * (extra_args, args, env) and small helpers.
 *
 * The order of argv is a contract: driver flags first, then
 * unit_vars.extra_args, then args, so a user flag given later overrides
 * the driver's (llama-server, vLLM's argparse and uvicorn's click all keep
 * the last value).  Environment names are checked here because of docker:
 * a name there travels in argv as `-e NAME`, and a name holding '=' would
 * put its value into argv, where every `ps` can read it. */
#include "drivers/driver.h"
#include "util/errf.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*build_fn)(const preset *, const settings *, launch *, char *, size_t);

static const build_fn builders[DRV__COUNT] = {
    [DRV_LLAMACPP] = driver_llamacpp_build, [DRV_VLLM] = driver_vllm_build,
    [DRV_FASTAPI] = driver_fastapi_build,   [DRV_DOCKER] = driver_docker_build,
    [DRV_COMMAND] = driver_command_build,   [DRV_REMOTE] = NULL, /* no process */
};

static const char *const help_plain[] = {"--help", NULL};
static const char *const help_vllm[] = {"serve", "--help=all", NULL};

int driver_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *id_of(const preset *p)
{
    return p->id ? p->id : "?";
}

/* Own copy of the names: the drivers link without the config loader. */
static const char *const kind_names[DRV__COUNT] = {
    [DRV_LLAMACPP] = "llamacpp", [DRV_VLLM] = "vllm",       [DRV_FASTAPI] = "fastapi",
    [DRV_DOCKER] = "docker",     [DRV_COMMAND] = "command", [DRV_REMOTE] = "remote",
};

static bool kind_ok(driver_kind k)
{
    return (unsigned)k < DRV__COUNT;
}

static const char *drv_name(driver_kind k)
{
    return kind_ok(k) ? kind_names[k] : "?";
}

int driver_push_binary(const preset *p, const settings *s, strv *argv, char *err, size_t errlen)
{
    const char *bin = s && kind_ok(p->driver) ? s->driver_binary[p->driver] : NULL;
    if (!bin || !*bin)
        return driver_fail(err, errlen, "preset '%s': no binary configured for driver '%s'",
                           id_of(p), drv_name(p->driver));
    strv_push(argv, bin);
    return 0;
}

const char *driver_host(const preset *p)
{
    return p->host && *p->host ? p->host : "127.0.0.1";
}

void driver_join(buf *b, const strv *v, const char *sep)
{
    for (size_t i = 0; i < v->n; i++) {
        if (i) buf_adds(b, sep);
        buf_adds(b, v->v[i]);
    }
}

void driver_env_devices(const preset *p, strv *env)
{
    strv_setenv(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    if (!p->devices.n) return;
    buf b = BUF_INIT;
    driver_join(&b, &p->devices, ",");
    strv_setenv(env, "CUDA_VISIBLE_DEVICES", b.p);
    buf_release(&b);
}

void driver_push_double(strv *argv, double v)
{
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    strv_push(argv, tmp);
}

static bool env_name_ok(const char *k)
{
    if (!k || !(isalpha((unsigned char)k[0]) || k[0] == '_')) return false;
    for (const char *c = k + 1; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_')) return false;
    return true;
}

void launch_release(launch *l)
{
    strv_release(&l->argv);
    strv_release(&l->env);
    free(l->cwd);
    l->cwd = NULL;
}

int driver_launch(const preset *p, const settings *s, launch *out, char *err, size_t errlen)
{
    launch_release(out);
    if (!kind_ok(p->driver))
        return driver_fail(err, errlen, "preset '%s': unknown driver %d", id_of(p), (int)p->driver);
    for (size_t i = 0; i < p->env.n; i++)
        if (!env_name_ok(p->env.v[i].key))
            return driver_fail(err, errlen,
                               "preset '%s': env name '%s' is not a valid variable name", id_of(p),
                               p->env.v[i].key ? p->env.v[i].key : "");
    build_fn build = builders[p->driver];
    if (!build) return 0;
    if (build(p, s, out, err, errlen) < 0) {
        launch_release(out);
        return -1;
    }
    strv_extend(&out->argv, &p->extra_args);
    strv_extend(&out->argv, &p->args);
    for (size_t i = 0; i < p->env.n; i++)
        strv_setenv(&out->env, p->env.v[i].key, p->env.v[i].val ? p->env.v[i].val : "");
    return 0;
}

/* argv[i] is flag, given as "flag value" or "flag=value": its value, or NULL. */
static const char *flag_value(const strv *argv, size_t i, const char *flag)
{
    size_t n = strlen(flag);
    if (strncmp(argv->v[i], flag, n) != 0) return NULL;
    if (argv->v[i][n] == '=') return argv->v[i] + n + 1;
    if (!argv->v[i][n] && i + 1 < argv->n) return argv->v[i + 1];
    return NULL;
}

bool driver_argv_embeds(const strv *argv)
{
    static const char *const pooling[] = {"embed", "embedding", "reward", "classify", "score", "pooling", NULL};
    for (size_t i = 0; i < argv->n; i++) {
        if (!strcmp(argv->v[i], "--embedding") || !strcmp(argv->v[i], "--embeddings")) return true;
        const char *v = flag_value(argv, i, "--runner");
        if (!v) v = flag_value(argv, i, "--task");
        if (!v) v = flag_value(argv, i, "--convert");
        for (size_t k = 0; v && pooling[k]; k++)
            if (!strcmp(v, pooling[k])) return true;
    }
    return false;
}

const char *driver_health_path(const preset *p)
{
    return p->health_endpoint && *p->health_endpoint ? p->health_endpoint : "/health";
}

int driver_stop_argv(const preset *p, const settings *s, int64_t timeout_ms, strv *stop, strv *rm,
                     char *err, size_t errlen)
{
    if (!kind_ok(p->driver))
        return driver_fail(err, errlen, "preset '%s': unknown driver %d", id_of(p), (int)p->driver);
    if (p->driver != DRV_DOCKER) return 0;
    if (driver_push_binary(p, s, stop, err, errlen) < 0) return -1;
    int64_t secs = timeout_ms <= 0 ? 0 : (timeout_ms + 999) / 1000;
    strv_push(stop, "stop");
    strv_push(stop, "-t");
    strv_pushf(stop, "%lld", (long long)secs);
    strv_pushf(stop, "gpumod-%s", id_of(p));
    strv_push(rm, stop->v[0]);
    strv_push(rm, "rm");
    strv_push(rm, "-f");
    strv_pushf(rm, "gpumod-%s", id_of(p));
    return 1;
}

const char *const *driver_help_args(driver_kind k)
{
    switch (k) {
    case DRV_LLAMACPP:
    case DRV_FASTAPI:
        return help_plain;
    case DRV_VLLM:
        return help_vllm;
    default:
        return NULL;
    }
}
