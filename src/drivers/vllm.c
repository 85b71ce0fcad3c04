/* vllm.c - the `vllm serve` argv.
 *
 * Sleep mode is a start-up flag plus the VLLM_SERVER_DEV_MODE=1
 * environment: without the latter vLLM has no /sleep and /wake_up
 * endpoints, and the Python project's sleeps were 404s it took for
 * success.  The sleep level is not a flag: vLLM takes it per /sleep
 * request, so --sleep-level (which the Python templates emitted) is never
 * written.  Every name the router may send is served: --served-model-name
 * takes the id, the aliases and the model_id as separate words (vLLM
 * serves only the names given there, so a model_id left out, which the
 * router routes here, would be a 404). */
#include "drivers/driver.h"

#include <inttypes.h>
#include <string.h>

static void push_i64(strv *argv, const char *flag, int64_t v)
{
    strv_push(argv, flag);
    strv_pushf(argv, "%" PRId64, v);
}

static void push_str(strv *argv, const char *flag, const char *v)
{
    if (!v) return;
    strv_push(argv, flag);
    strv_push(argv, v);
}

int driver_vllm_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen)
{
    const vllm_opts *o = &p->vllm;
    strv *a = &out->argv;
    const char *model = p->model_path ? p->model_path : p->model_id;
    if (!model || !*model)
        return driver_fail(err, errlen, "preset '%s': vllm needs model_id or model_path", p->id);
    if (driver_push_binary(p, s, a, err, errlen) < 0) return -1;

    strv_push(a, "serve");
    strv_push(a, model);
    push_str(a, "--host", driver_host(p));
    push_i64(a, "--port", p->port);
    strv_push(a, "--served-model-name");
    strv_push(a, p->id);
    strv_extend(a, &p->aliases);
    if (p->model_id && *p->model_id && strcmp(p->model_id, p->id) && strv_find(&p->aliases, p->model_id) < 0)
        strv_push(a, p->model_id);
    if (o->gpu_memory_utilization >= 0) {
        strv_push(a, "--gpu-memory-utilization");
        driver_push_double(a, o->gpu_memory_utilization);
    }
    if (o->max_model_len >= 0) push_i64(a, "--max-model-len", o->max_model_len);
    if (o->max_num_seqs >= 0) push_i64(a, "--max-num-seqs", o->max_num_seqs);
    push_str(a, "--dtype", o->dtype);
    push_str(a, "--kv-cache-dtype", o->kv_cache_dtype);
    if (o->enforce_eager) strv_push(a, "--enforce-eager");
    if (o->tensor_parallel_size > 0)
        push_i64(a, "--tensor-parallel-size", o->tensor_parallel_size);
    else if (p->devices.n > 1)
        push_i64(a, "--tensor-parallel-size", (int64_t)p->devices.n);
    bool sleep = o->enable_sleep_mode || p->sleep == SLEEP_L1 || p->sleep == SLEEP_L2;
    if (sleep) strv_push(a, "--enable-sleep-mode");
    push_str(a, "--runner", o->runner);
    push_str(a, "--hf-overrides", o->hf_overrides);
    if (o->trust_remote_code) strv_push(a, "--trust-remote-code");

    driver_env_devices(p, &out->env);
    if (sleep) strv_setenv(&out->env, "VLLM_SERVER_DEV_MODE", "1");
    return 0;
}
