/* llamacpp.c - the llama-server argv (build b10587's flags).
 *
 * Everything that decides where memory goes is explicit, never left to
 * llama-server's automatic choices: -c, --parallel and -ngl are always
 * given and -fit defaults to off, so the footprint measured once stays
 * true for the next start and the gate's estimate matches what loads.
 * Router mode is the exception: the router's own command line overrides
 * every model's settings in --models-preset, so the loader leaves unset
 * what the preset does not set (config.h) and nothing unset is passed.
 *
 * Two shapes: single-model (-m PATH, --alias id,aliases...,model_id) and router
 * mode (--models-dir, no -m).  In router mode there is no --alias: the
 * router passes its own flags on to every child it spawns, each with its
 * model's own --alias, and one alias shared by all of them would make the
 * names ambiguous.  GGML_CUDA_NO_PINNED=1 keeps the host copy of the
 * weights in pageable memory, which the kernel can reclaim; a preset's
 * env may say otherwise. */
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

/* Proportions from the per-device memory when there is one entry per
 * device (20000,4000), else an even split. */
static void push_tensor_split(const preset *p, strv *argv)
{
    buf b = BUF_INIT;
    bool per_dev = p->mem_gpu_mb && p->n_mem_gpu == p->devices.n;
    for (size_t i = 0; i < p->devices.n; i++) {
        if (i) buf_addc(&b, ',');
        buf_printf(&b, "%" PRId64, per_dev ? p->mem_gpu_mb[i] : 1);
    }
    strv_push(argv, "--tensor-split");
    strv_push_own(argv, buf_detach(&b));
}

/* --alias id,aliases...,model_id: single-model llama-server answers any
 * model it is sent, but every name the router routes here is listed, so
 * that stays true whatever a later build checks.  A model_id with a comma
 * cannot be one alias; it is left out (the server still answers it). */
static void push_names(const preset *p, strv *a)
{
    buf names = BUF_INIT;
    buf_adds(&names, p->id);
    for (size_t i = 0; i < p->aliases.n; i++)
        buf_printf(&names, ",%s", p->aliases.v[i]);
    const char *m = p->model_id;
    if (m && *m && !strchr(m, ',') && strcmp(m, p->id) && strv_find(&p->aliases, m) < 0) buf_printf(&names, ",%s", m);
    strv_push(a, "--alias");
    strv_push_own(a, buf_detach(&names));
}

int driver_llamacpp_build(const preset *p, const settings *s, launch *out, char *err, size_t errlen)
{
    const llama_opts *o = &p->llama;
    strv *a = &out->argv;
    if (p->model_path && o->models_dir)
        return driver_fail(err, errlen,
                           "preset '%s': llamacpp takes model_path or unit_vars.models_dir "
                           "(router mode), not both",
                           p->id);
    if (!p->model_path && !o->models_dir)
        return driver_fail(err, errlen,
                           "preset '%s': llamacpp needs model_path or unit_vars.models_dir", p->id);
    if (driver_push_binary(p, s, a, err, errlen) < 0) return -1;

    if (p->model_path) {
        push_str(a, "-m", p->model_path);
    } else {
        push_str(a, "--models-dir", o->models_dir);
        if (o->models_max >= 0) push_i64(a, "--models-max", o->models_max);
        if (o->no_models_autoload) strv_push(a, "--no-models-autoload");
        push_str(a, "--models-preset", o->models_preset);
    }
    push_str(a, "--host", driver_host(p));
    push_i64(a, "--port", p->port);
    if (p->model_path) push_names(p, a);
    if (p->context_size > 0) push_i64(a, "-c", p->context_size);
    if (o->parallel > 0) push_i64(a, "--parallel", o->parallel);
    if (o->n_gpu_layers == -1)
        push_str(a, "-ngl", "all");
    else if (o->n_gpu_layers >= 0)
        push_i64(a, "-ngl", o->n_gpu_layers);
    if (p->devices.n > 1) push_tensor_split(p, a);
    if (o->threads >= 0) push_i64(a, "-t", o->threads);
    if (o->batch_size > 0) push_i64(a, "-b", o->batch_size);
    if (o->ubatch_size > 0) push_i64(a, "-ub", o->ubatch_size);
    if (o->n_cpu_moe >= 0) push_i64(a, "--n-cpu-moe", o->n_cpu_moe);
    if (o->flash_attn != TRI_UNSET) push_str(a, "-fa", o->flash_attn == TRI_ON ? "on" : "off");
    push_str(a, "--cache-type-k", o->cache_type_k);
    push_str(a, "--cache-type-v", o->cache_type_v);
    if (o->fit != TRI_UNSET) push_str(a, "-fit", o->fit == TRI_ON ? "on" : "off");
    if (o->jinja != TRI_UNSET) strv_push(a, o->jinja == TRI_ON ? "--jinja" : "--no-jinja");
    push_str(a, "--chat-template-kwargs", o->chat_template_kwargs);
    push_str(a, "--override-kv", o->override_kv);
    push_str(a, "--spec-type", o->spec_type);
    push_str(a, "--model-draft", o->model_draft);
    if (o->spec_draft_n_max >= 0) push_i64(a, "--spec-draft-n-max", o->spec_draft_n_max);
    if (o->metrics) strv_push(a, "--metrics");
    if (p->slot_save && s->state_dir) strv_pushf(a, "--slot-save-path=%s/slots/%s", s->state_dir, p->id);

    driver_env_devices(p, &out->env);
    strv_setenv(&out->env, "GGML_CUDA_NO_PINNED", "1");
    return 0;
}
