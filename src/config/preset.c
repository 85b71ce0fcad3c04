/* preset.c - one service per YAML file: the preset field table, the
 * documented unit_vars mapping table, and per-driver resolution.
 *
 * Two tables, both declarative: preset_fields (top-level keys: every key
 * of the Python project's PresetConfig plus gpumod's own) and
 * unit_vars_fields (the Python project's template variables, each mapped
 * to what gpumod does with it, with the drivers it applies to in its
 * flags).  Driver-dependent defaults and the cross-key rules live in
 * preset_finish(), after both tables ran, because they need the whole
 * preset. */
#include "config/preset.h"
#include "config/schema.h"
#include "util/argsplit.h"
#include "util/buf.h"
#include "util/url.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const driver_names[] = {"llamacpp", "vllm", "fastapi", "docker", "command", "remote", NULL};
const char *const sleep_mode_names[] = {"none", "l1", "l2", "router", NULL};

#define P(m) offsetof(pbuild, p.m)
#define B(m) offsetof(pbuild, m)
#define DRV(x) (1u << (8 + (x)))
#define L DRV(DRV_LLAMACPP)
#define V DRV(DRV_VLLM)
#define FA DRV(DRV_FASTAPI)
#define D DRV(DRV_DOCKER)
#define C DRV(DRV_COMMAND)
#define ALLD (L | V | FA | D | C)
#define DRV_MASK (0x3fu << 8)

/* The preset under construction, plus values that must be reconciled
 * with top-level keys before they land in the preset. */
typedef struct pbuild {
    preset p;
    char *uv_model_path;
    int64_t uv_ctx;
    int64_t uv_max_model_len;
} pbuild;

static void parse_extra_args(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    pbuild *pb = obj;
    if (n->kind == Y_SEQ) { /* gpumod's own spelling: already a list */
        field g = {f->key, F_STRV, B(p.extra_args)};
        schema_parse_value(c, &g, n, obj);
        return;
    }
    if (n->kind != Y_SCALAR || yscalar_is_null(n)) {
        if (n->kind != Y_SCALAR) schema_error(c, n, "%s: expected a string or a list, found %s", f->key, ykind_name(n));
        return;
    }
    if (text_has_control(n->s, false)) {
        schema_error(c, n, "%s: control character in string", f->key);
        return;
    }
    char *s = expand_vars(n->s);
    char err[160];
    strv_release(&pb->p.extra_args);
    if (argsplit(s, &pb->p.extra_args, err, sizeof err))
        schema_error(c, n, "%s: %s (quoting rules: docs/configuration.md#extra_args)", f->key, err);
    free(s);
}

/* A JSON object given as a JSON string (the Python project's form) or as
 * a YAML mapping; stored as compact JSON text. */
static char *node_to_json(const ynode *n, int depth);

static cJSON *node_to_cjson(const ynode *n, int depth)
{
    if (depth > 32) return NULL;
    switch (n->kind) {
    case Y_MAP: {
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; i < n->npairs; i++) {
            cJSON *v = node_to_cjson(n->pairs[i].val, depth + 1);
            if (!v) {
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToObject(o, n->pairs[i].key->s, v);
        }
        return o;
    }
    case Y_SEQ: {
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < n->n; i++) {
            cJSON *v = node_to_cjson(n->items[i], depth + 1);
            if (!v) {
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, v);
        }
        return a;
    }
    default: {
        if (yscalar_is_null(n)) return cJSON_CreateNull();
        int b = yscalar_bool(n);
        if (b >= 0) return cJSON_CreateBool(b);
        int64_t iv;
        if (n->plain && !parse_int64(n->s, &iv)) return cJSON_CreateNumber((double)iv);
        char *end;
        double d = strtod(n->s, &end);
        if (n->plain && *n->s && !*end) return cJSON_CreateNumber(d);
        return cJSON_CreateString(n->s);
    }
    }
}

static char *node_to_json(const ynode *n, int depth)
{
    cJSON *j = node_to_cjson(n, depth);
    if (!j) return NULL;
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char *r = s ? xstrdup(s) : NULL;
    cJSON_free(s);
    return r;
}

static void show_extra_args(buf *out, const field *f, const void *obj, bool json)
{
    schema_show_strv(out, &((const pbuild *)obj)->p.extra_args, json);
}

static void parse_json_object(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    char **dst = (char **)((char *)obj + f->off);
    char *json = NULL;
    if (yscalar_is_null(n)) return;
    if (n->kind == Y_MAP) {
        json = node_to_json(n, 0);
    } else if (n->kind == Y_SCALAR) {
        cJSON *j = cJSON_Parse(n->s);
        if (!j || !cJSON_IsObject(j)) {
            schema_error(c, n, "%s: expected a JSON object (as a string or a mapping), found '%s'", f->key, n->s);
            cJSON_Delete(j);
            return;
        }
        char *s = cJSON_PrintUnformatted(j);
        json = xstrdup(s);
        cJSON_free(s);
        cJSON_Delete(j);
    } else {
        schema_error(c, n, "%s: expected a JSON object, found %s", f->key, ykind_name(n));
        return;
    }
    if (!json) {
        schema_error(c, n, "%s: cannot convert to JSON", f->key);
        return;
    }
    if (text_has_control(json, false)) {
        schema_error(c, n, "%s: control character in string", f->key);
        free(json);
        return;
    }
    free(*dst);
    *dst = json;
}

static void show_json_text(buf *out, const field *f, const void *obj, bool json)
{
    const char *s = *(char *const *)((const char *)obj + f->off);
    if (!s)
        buf_adds(out, "null");
    else
        buf_json_str(out, s);
}

static void parse_int_or_all(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    if (n->kind == Y_SCALAR && (!strcmp(n->s, "all") || !strcmp(n->s, "-1"))) {
        *(int64_t *)((char *)obj + f->off) = -1;
        return;
    }
    field g = *f;
    g.type = F_INT;
    g.flags &= ~(unsigned)FL_IGNORED;
    schema_parse_value(c, &g, n, obj);
}

static void show_int_or_all(buf *out, const field *f, const void *obj, bool json)
{
    int64_t v = *(const int64_t *)((const char *)obj + f->off);
    if (v == LLAMA_NGL_UNSET)
        buf_adds(out, "null");
    else if (v < 0)
        buf_adds(out, json ? "\"all\"" : "all");
    else
        buf_printf(out, "%lld", (long long)v);
}

/* The documented mapping of the Python project's unit_vars (see
 * docs/configuration.md, generated from this table).  The driver bits in
 * flags say which drivers act on a key. */
static const char *const uv_ignored[] = {"omni", "lazy_load", "model_file", NULL};

const field unit_vars_fields[] = {
    {"model_path", F_STR, B(uv_model_path), .flags = L | V | FL_PATH | FL_ENVEXP,
     .doc = "llama-server -m / vllm serve MODEL; must agree with top-level model_path"},
    {"context_size", F_INT, B(uv_ctx), 1, 16777216, .flags = L | V | FL_NULLABLE_INT, .deflt = "null",
     .doc = "-c / --max-model-len; must agree with top-level context_size"},
    {"ctx_size", F_INT, B(uv_ctx), 1, 16777216, .flags = L | V | FL_NULLABLE_INT,
     .doc = "same as context_size (the Python project ignored it; gpumod acts on it)"},
    {"n_gpu_layers", F_CUSTOM, P(llama.n_gpu_layers), .parse = parse_int_or_all, .show = show_int_or_all,
     .min = 0, .max = 100000, .flags = L, .deflt = NULL, .doc = "-ngl N, or all (-1, the default; router mode: only when set)"},
    {"host", F_STR, P(host), .flags = L | V | FA, .doc = "--host (gpumod's default is 127.0.0.1 for every driver)"},
    {"jinja", F_TRI, P(llama.jinja), .flags = L, .doc = "--jinja / --no-jinja"},
    {"flash_attn", F_TRI, P(llama.flash_attn), .flags = L, .doc = "-fa on|off (auto: not passed)"},
    {"parallel", F_INT, P(llama.parallel), 1, 4096, .flags = L | FL_NULLABLE_INT, .deflt = "1",
     .doc = "--parallel N, always explicit (llama-server's auto would disagree with the estimate); router mode: only when set"},
    {"threads", F_INT, P(llama.threads), 1, 4096, .flags = L | FL_NULLABLE_INT, .deflt = "null",
     .doc = "-t N (the Python project ignored it; gpumod acts on it)"},
    {"batch_size", F_INT, P(llama.batch_size), 1, 16777216, .flags = L | FL_NULLABLE_INT, .deflt = "null",
     .doc = "-b N: the logical batch, tokens per decode call (llama-server's default 2048); the estimate's n_batch"},
    {"ubatch_size", F_INT, P(llama.ubatch_size), 1, 16777216, .flags = L | FL_NULLABLE_INT, .deflt = "null",
     .doc = "-ub N: the physical batch, at most batch_size (llama-server's default 512); the estimate's n_ubatch, "
            "which sizes the compute buffers"},
    {"n_cpu_moe", F_INT, P(llama.n_cpu_moe), 0, 100000, .flags = L | FL_NULLABLE_INT, .deflt = "null",
     .doc = "--n-cpu-moe N (the Python project ignored it; gpumod acts on it)"},
    {"cache_type_k", F_STR, P(llama.cache_type_k), .flags = L, .doc = "--cache-type-k TYPE"},
    {"cache_type_v", F_STR, P(llama.cache_type_v), .flags = L, .doc = "--cache-type-v TYPE"},
    {"spec_type", F_STR, P(llama.spec_type), .flags = L, .doc = "--spec-type (speculative decoding)"},
    {"spec_draft_n_max", F_INT, P(llama.spec_draft_n_max), 1, 1024, .flags = L | FL_NULLABLE_INT, .deflt = "null",
     .doc = "--spec-draft-n-max N"},
    {"model_draft", F_STR, P(llama.model_draft), .flags = L | FL_PATH | FL_ENVEXP, .doc = "--model-draft PATH"},
    {"chat_template_kwargs", F_CUSTOM, P(llama.chat_template_kwargs), .parse = parse_json_object,
     .show = show_json_text, .flags = L, .doc = "--chat-template-kwargs JSON (a JSON string or a mapping)"},
    {"fit", F_TRI, P(llama.fit), .flags = L, .deflt = "false",
     .doc = "-fit on|off; off by default so placement is predictable; router mode: only when set"},
    {"metrics", F_BOOL, P(llama.metrics), .flags = L, .deflt = "true", .doc = "--metrics (the router and bench read it)"},
    {"override_kv", F_STR, P(llama.override_kv), .flags = L, .doc = "--override-kv KEY=TYPE:VALUE"},
    {"models_dir", F_STR, P(llama.models_dir), .flags = L | FL_PATH | FL_ENVEXP,
     .doc = "router mode: --models-dir (no -m)"},
    {"models_max", F_INT, P(llama.models_max), 0, 1024, .flags = L | FL_NULLABLE_INT, .deflt = "null",
     .doc = "router mode: --models-max N"},
    {"no_models_autoload", F_BOOL, P(llama.no_models_autoload), .flags = L, .doc = "router mode: --no-models-autoload"},
    {"models_preset", F_STR, P(llama.models_preset), .flags = L | FL_PATH | FL_ENVEXP,
     .doc = "router mode: --models-preset INI"},
    {"preset_file", F_STR, P(llama.models_preset), .flags = L | FL_PATH | FL_ENVEXP,
     .doc = "router mode: --models-preset INI (the Python template passed it to --override-kv)"},
    {"default_model", F_STR, P(llama.default_model), .flags = L,
     .doc = "router mode: the model a request naming the service (its id, an alias, default) is sent to"},
    {"gpu_mem_util", F_FLOAT, P(vllm.gpu_memory_utilization), 0.01, 1, .flags = V, .deflt = "0.9",
     .doc = "--gpu-memory-utilization F"},
    {"gpu_memory_utilization", F_FLOAT, P(vllm.gpu_memory_utilization), 0.01, 1, .flags = V,
     .doc = "same as gpu_mem_util"},
    {"max_model_len", F_INT, B(uv_max_model_len), 1, 16777216, .flags = V | FL_NULLABLE_INT, .deflt = "null",
     .doc = "--max-model-len N; must agree with context_size"},
    {"max_num_seqs", F_INT, P(vllm.max_num_seqs), 1, 1000000, .flags = V | FL_NULLABLE_INT, .deflt = "null",
     .doc = "--max-num-seqs N"},
    {"dtype", F_STR, P(vllm.dtype), .flags = V, .doc = "--dtype"},
    {"kv_cache_dtype", F_STR, P(vllm.kv_cache_dtype), .flags = V, .doc = "--kv-cache-dtype"},
    {"enforce_eager", F_BOOL, P(vllm.enforce_eager), .flags = V, .doc = "--enforce-eager"},
    {"tensor_parallel_size", F_INT, P(vllm.tensor_parallel_size), 1, 64, .flags = V | FL_NULLABLE_INT,
     .deflt = "null", .doc = "--tensor-parallel-size N (default: the number of devices when several)"},
    {"runner", F_STR, P(vllm.runner), .flags = V, .doc = "--runner (pooling for embedding and rerank models)"},
    {"hf_overrides", F_CUSTOM, P(vllm.hf_overrides), .parse = parse_json_object, .show = show_json_text,
     .flags = V, .doc = "--hf-overrides JSON (a JSON string or a mapping)"},
    {"enable_sleep_mode", F_BOOL, P(vllm.enable_sleep_mode), .flags = V,
     .doc = "--enable-sleep-mode + VLLM_SERVER_DEV_MODE=1 (implied by sleep_mode l1/l2)"},
    {"sleep_level", F_INT, P(vllm.sleep_level), 1, 2, .flags = V | FL_NULLABLE_INT, .deflt = "null",
     .doc = "level sent with POST /sleep (not a command-line flag); not yet acted on (warning): no POST /sleep is sent"},
    {"trust_remote_code", F_BOOL, P(vllm.trust_remote_code), .flags = V, .doc = "--trust-remote-code"},
    {"working_dir", F_STR, P(fastapi.working_dir), .flags = FA | FL_PATH | FL_ENVEXP, .deflt = "/opt",
     .doc = "uvicorn's working directory"},
    {"app_module", F_STR, P(fastapi.app_module), .flags = FA, .deflt = "main:app", .doc = "uvicorn APP"},
    {"workers", F_INT, P(fastapi.workers), 1, 1024, .flags = FA | FL_NULLABLE_INT, .deflt = "null",
     .doc = "uvicorn --workers N"},
    {"image", F_STR, P(docker.image), .flags = D, .doc = "docker image (required for driver docker)"},
    {"container_port", F_INT, P(docker.container_port), 1, 65535, .flags = D | FL_NULLABLE_INT, .deflt = "null",
     .doc = "port inside the container (default: port)"},
    {"volumes", F_STRV, P(docker.volumes), .flags = D, .doc = "docker -v HOST:CONTAINER[:ro] entries"},
    {"gpus", F_STR, P(docker.gpus), .flags = D, .doc = "docker --gpus value (default: the preset's devices, else all)"},
    {"extra_args", F_CUSTOM, B(p.extra_args), .parse = parse_extra_args, .show = show_extra_args, .flags = ALLD,
     .doc = "extra argv words: a string split by the documented quoting rules, no expansion, or a list"},
    {NULL},
};

static bool applies(const field *f, int driver)
{
    return (f->flags & DRV(driver)) != 0;
}

static void drivers_of(buf *b, const field *f)
{
    int k = 0;
    for (int d = 0; d < DRV__COUNT; d++)
        if (applies(f, d)) buf_printf(b, "%s%s", k++ ? ", " : "", driver_names[d]);
}

static void parse_unit_vars(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    pbuild *pb = obj;
    if (yscalar_is_null(n)) return;
    if (n->kind != Y_MAP) {
        schema_error(c, n, "unit_vars: expected a mapping, found %s", ykind_name(n));
        return;
    }
    const char *cands[96];
    size_t nc = 0;
    for (const field *g = unit_vars_fields; g->key && nc < 96; g++) cands[nc++] = g->key;

    for (size_t i = 0; i < n->npairs; i++) {
        const ynode *k = n->pairs[i].key, *v = n->pairs[i].val;
        /* keep what was written (expanded) for config show */
        if (v->kind == Y_SCALAR && !text_has_control(v->s, false)) {
            char *e = expand_vars(v->s);
            kvlist_set(&pb->p.unit_vars, k->s, e, ypos(c->file, k));
            free(e);
        } else {
            kvlist_set(&pb->p.unit_vars, k->s, v->kind == Y_SCALAR ? "" : ykind_name(v), ypos(c->file, k));
        }
        const field *g = NULL;
        for (const field *h = unit_vars_fields; h->key; h++)
            if (!strcmp(h->key, k->s)) g = h;
        if (!g) {
            bool ign = false;
            for (size_t j = 0; uv_ignored[j]; j++)
                if (!strcmp(uv_ignored[j], k->s)) ign = true;
            const char *dym = ign ? NULL : schema_did_you_mean(k->s, cands, nc);
            if (dym)
                schema_error(c, k, "unit_vars: unknown key '%s' (did you mean '%s'?)", k->s, dym);
            else
                schema_warn(c, k, "unit_vars: key '%s' is accepted but gpumod does not act on it%s", k->s,
                            ign ? " (the Python project ignored it too)" : "");
            continue;
        }
        if (!applies(g, pb->p.driver)) {
            buf b = BUF_INIT;
            drivers_of(&b, g);
            schema_warn(c, k, "unit_vars: key '%s' applies to driver %s, not %s; gpumod does not act on it", k->s,
                        b.p, driver_names[pb->p.driver]);
            buf_release(&b);
            continue;
        }
        char saved[sizeof c->subject];
        memcpy(saved, c->subject, sizeof saved);
        size_t l = strlen(c->subject);
        snprintf(c->subject + l, sizeof c->subject - l, "%sunit_vars", l ? ": " : "");
        schema_parse_value(c, g, v, obj);
        memcpy(c->subject, saved, sizeof saved);
        if (!strcmp(k->s, "preset_file"))
            schema_warn(c, k, "unit_vars: preset_file is passed as --models-preset (the Python template passed it to --override-kv, which takes KEY=TYPE:VALUE)");
    }
}

static void show_unit_vars(buf *out, const field *f, const void *obj, bool json)
{
    schema_show_kvlist(out, &((const pbuild *)obj)->p.unit_vars, json, 0);
}

static void parse_devices(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    pbuild *pb = obj;
    if (yscalar_is_null(n)) return;
    const ynode *one[1] = {n};
    const ynode *const *items = one;
    size_t cnt = 1;
    if (n->kind == Y_SEQ) {
        items = (const ynode *const *)n->items;
        cnt = n->n;
    } else if (n->kind != Y_SCALAR) {
        schema_error(c, n, "devices: expected a list of GPU indices or UUIDs, found %s", ykind_name(n));
        return;
    }
    strv_release(&pb->p.devices);
    for (size_t i = 0; i < cnt; i++) {
        const ynode *it = items[i];
        int64_t idx;
        if (it->kind == Y_SCALAR && !parse_int64(it->s, &idx) && idx >= 0 && idx < 64) {
            strv_pushf(&pb->p.devices, "%lld", (long long)idx);
        } else if (it->kind == Y_SCALAR && (!strncmp(it->s, "GPU-", 4) || !strncmp(it->s, "MIG-", 4)) &&
                   !text_has_control(it->s, false) && !strchr(it->s, ',') && !strchr(it->s, ' ')) {
            strv_push(&pb->p.devices, it->s);
        } else {
            schema_error(c, it, "devices: expected a GPU index 0..63 or a UUID (GPU-... or MIG-...), found '%s'",
                         it->kind == Y_SCALAR ? it->s : ykind_name(it));
            continue;
        }
        for (size_t j = 0; j + 1 < pb->p.devices.n; j++)
            if (!strcmp(pb->p.devices.v[j], pb->p.devices.v[pb->p.devices.n - 1]))
                schema_error(c, it, "devices: '%s' is listed twice", it->s);
    }
}

static void show_devices(buf *out, const field *f, const void *obj, bool json)
{
    schema_show_strv(out, &((const pbuild *)obj)->p.devices, json);
}

static void parse_memory(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    pbuild *pb = obj;
    if (yscalar_is_null(n)) return;
    if (n->kind != Y_MAP) {
        schema_error(c, n, "memory: expected a mapping {gpu_mb, host_mb, pins_host}, found %s", ykind_name(n));
        return;
    }
    for (size_t i = 0; i < n->npairs; i++) {
        const ynode *k = n->pairs[i].key, *v = n->pairs[i].val;
        int64_t x;
        if (!strcmp(k->s, "host_mb")) {
            if (v->kind != Y_SCALAR || parse_int64(v->s, &x) || x < 0 || x > 16777216)
                schema_error(c, v, "memory: host_mb: expected an integer in 0..16777216, found '%s'",
                             v->kind == Y_SCALAR ? v->s : ykind_name(v));
            else
                pb->p.mem_host_mb = x;
        } else if (!strcmp(k->s, "gpu_mb")) {
            size_t cnt = v->kind == Y_SEQ ? v->n : 1;
            if (v->kind == Y_MAP || cnt == 0) {
                schema_error(c, v, "memory: gpu_mb: expected an integer or a list of integers (one per device)");
                continue;
            }
            free(pb->p.mem_gpu_mb);
            pb->p.mem_gpu_mb = xcalloc(cnt, sizeof(int64_t));
            pb->p.n_mem_gpu = 0;
            for (size_t j = 0; j < cnt; j++) {
                const ynode *it = v->kind == Y_SEQ ? v->items[j] : v;
                if (it->kind != Y_SCALAR || parse_int64(it->s, &x) || x < 0 || x > 16777216) {
                    schema_error(c, it, "memory: gpu_mb: expected an integer in 0..16777216, found '%s'",
                                 it->kind == Y_SCALAR ? it->s : ykind_name(it));
                    continue;
                }
                pb->p.mem_gpu_mb[pb->p.n_mem_gpu++] = x;
            }
        } else if (!strcmp(k->s, "pins_host")) {
            int b = v->kind == Y_SCALAR ? yscalar_bool(v) : -1;
            if (b < 0)
                schema_error(c, v, "memory: pins_host: expected true or false, found '%s'",
                             v->kind == Y_SCALAR ? v->s : ykind_name(v));
            else
                pb->p.mem_pins_host = b;
        } else {
            static const char *const mk[] = {"gpu_mb", "host_mb", "pins_host"};
            const char *dym = schema_did_you_mean(k->s, mk, 3);
            schema_error(c, k, "memory: unknown key '%s'%s%s%s", k->s, dym ? " (did you mean '" : "",
                         dym ? dym : "", dym ? "'?)" : "");
        }
    }
}

static void show_memory(buf *out, const field *f, const void *obj, bool json)
{
    const preset *p = &((const pbuild *)obj)->p;
    if (json) buf_adds(out, "{\"gpu_mb\":");
    else buf_adds(out, "{gpu_mb: ");
    if (!p->n_mem_gpu)
        buf_adds(out, "null");
    else {
        buf_addc(out, '[');
        for (size_t i = 0; i < p->n_mem_gpu; i++) buf_printf(out, "%s%lld", i ? "," : "", (long long)p->mem_gpu_mb[i]);
        buf_addc(out, ']');
    }
    if (p->mem_host_mb < 0)
        buf_adds(out, json ? ",\"host_mb\":null" : ", host_mb: null");
    else
        buf_printf(out, json ? ",\"host_mb\":%lld" : ", host_mb: %lld", (long long)p->mem_host_mb);
    const char *ph = p->mem_pins_host < 0 ? "null" : p->mem_pins_host ? "true" : "false";
    buf_printf(out, json ? ",\"pins_host\":%s}" : ", pins_host: %s}", ph);
}

static void parse_canary(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    preset *p = &((pbuild *)obj)->p;
    if (yscalar_is_null(n)) return;
    int b = yscalar_bool(n);
    if (b >= 0) {
        p->canary.enabled = b;
        return;
    }
    if (n->kind != Y_MAP) {
        schema_error(c, n, "canary: expected true/false or a mapping {prompt, expect, max_tokens}, found '%s'",
                     n->kind == Y_SCALAR ? n->s : ykind_name(n));
        return;
    }
    p->canary.enabled = true;
    for (size_t i = 0; i < n->npairs; i++) {
        const ynode *k = n->pairs[i].key, *v = n->pairs[i].val;
        int64_t x;
        if (!strcmp(k->s, "prompt")) {
            if (v->kind != Y_SCALAR || text_has_control(v->s, true)) {
                schema_error(c, v, "canary: prompt: expected a string");
                continue;
            }
            free(p->canary.prompt);
            p->canary.prompt = xstrdup(v->s);
        } else if (!strcmp(k->s, "expect")) {
            if (v->kind != Y_SCALAR || !*v->s || text_has_control(v->s, true)) {
                schema_error(c, v, "canary: expect: expected a non-empty string (the text the answer must contain)");
                continue;
            }
            free(p->canary.expect);
            p->canary.expect = xstrdup(v->s);
        } else if (!strcmp(k->s, "max_tokens")) {
            if (v->kind != Y_SCALAR || parse_int64(v->s, &x) || x < 1 || x > 4096)
                schema_error(c, v, "canary: max_tokens: expected an integer in 1..4096");
            else
                p->canary.max_tokens = x;
        } else if (!strcmp(k->s, "enabled")) {
            int e = yscalar_bool(v);
            if (e < 0)
                schema_error(c, v, "canary: enabled: expected true or false");
            else
                p->canary.enabled = e;
        } else {
            static const char *const ck[] = {"prompt", "expect", "max_tokens", "enabled"};
            const char *dym = schema_did_you_mean(k->s, ck, 4);
            schema_error(c, k, "canary: unknown key '%s'%s%s%s", k->s, dym ? " (did you mean '" : "", dym ? dym : "",
                         dym ? "'?)" : "");
        }
    }
    if (p->canary.expect && !p->canary.prompt)
        schema_error(c, n, "canary: expect needs a prompt (the built-in prompts have their own answers)");
}

static void show_canary(buf *out, const field *f, const void *obj, bool json)
{
    const preset *p = &((const pbuild *)obj)->p;
    if (!p->canary.enabled) {
        buf_adds(out, "false");
        return;
    }
    buf_adds(out, json ? "{\"prompt\":" : "{prompt: ");
    if (json)
        buf_json_str_or_null(out, p->canary.prompt);
    else
        buf_json_str(out, p->canary.prompt ? p->canary.prompt : "(built-in)");
    buf_adds(out, json ? ",\"expect\":" : ", expect: ");
    if (json)
        buf_json_str_or_null(out, p->canary.expect);
    else
        buf_json_str(out, p->canary.expect ? p->canary.expect : p->canary.prompt ? "(any answer)" : "(built-in)");
    buf_printf(out, json ? ",\"max_tokens\":%lld}" : ", max_tokens: %lld}", (long long)p->canary.max_tokens);
}

static const field restart_fields[] = {
    {"max_restarts", F_INT, P(restart.max_restarts), 0, 1000, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "restarts allowed within restart_window (default: supervisor's)"},
    {"restart_window", F_DURATION, P(restart.window_ms), 1, 86400000, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "the window max_restarts counts in"},
    {"backoff_initial", F_DURATION, P(restart.backoff_initial_ms), 0, 3600000, .flags = FL_NULLABLE_INT,
     .deflt = "null", .doc = "first restart delay"},
    {"backoff_max", F_DURATION, P(restart.backoff_max_ms), 0, 3600000, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "restart delay cap"},
    {NULL},
};

static const field remote_fields[] = {
    {"base_url", F_STR, P(remote.base_url), .doc = "http(s)://host:port of the remote OpenAI-compatible server"},
    {"api_key_env", F_STR, P(remote.api_key_env), .doc = "name of the env var holding its API key"},
    {NULL},
};

const field preset_fields[] = {
    {"id", F_STR, P(id), .flags = FL_REQUIRED, .doc = "unique service id: [A-Za-z0-9][A-Za-z0-9._-]*, up to 64"},
    {"name", F_STR, P(name), .doc = "display name (default: the id)"},
    {"driver", F_ENUM, P(driver), .names = driver_names, .flags = FL_REQUIRED, .doc = "the engine"},
    {"port", F_INT, P(port), 1, 65535, .doc = "the engine's HTTP port (required but for driver remote)"},
    {"vram_mb", F_INT, P(vram_mb), 0, 1048576, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "declared GPU MiB (the Python project's only figure); same as memory.gpu_mb"},
    {"context_size", F_INT, P(context_size), 1, 16777216, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "context tokens: llama-server -c (default 4096; router mode: none, -c only when set), vllm --max-model-len (default 4096)"},
    {"kv_cache_per_1k", F_INT, P(kv_cache_per_1k), 0, 1048576, .flags = FL_IGNORED | FL_NULLABLE_INT, .deflt = "null",
     .doc = "the Python project's KV MiB per 1k tokens; gpumod estimates the KV cache from the model file (declare "
            "memory.gpu_mb where there is no estimate)"},
    {"model_id", F_STR, P(model_id), .doc = "model name (vllm serve MODEL when model_path is unset); a routable name"},
    {"model_path", F_STR, P(model_path), .flags = FL_PATH | FL_ENVEXP, .doc = "model file ($VAR and ~ expanded)"},
    {"health_endpoint", F_STR, P(health_endpoint), .deflt = "/health", .doc = "path probed for health"},
    {"startup_timeout", F_DURATION, P(startup_timeout_ms), 1000, 86400000, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "load deadline (default: supervisor.startup_timeout)"},
    {"supports_sleep", F_BOOL, P(supports_sleep), .flags = FL_IGNORED,
     .doc = "sleep capability comes from the driver and sleep_mode"},
    {"sleep_mode", F_ENUM, P(sleep), .names = sleep_mode_names, .deflt = "none",
     .doc = "how the service leaves the GPU short of a stop: none (stop), l1 (vLLM: weights to host RAM, KV "
            "freed), l2 (vLLM: weights and KV freed), router (llama.cpp router mode: its models unloaded); "
            "docs/modes.md"},
    {"idle_timeout", F_DURATION, P(idle_timeout_ms), 0, 2592000000LL, .flags = FL_NULLABLE_INT, .deflt = "null",
     .doc = "with no request for this long the service sleeps (sleep_mode) or stops; 0: never (default: "
            "router.idle_timeout)"},
    {"slot_save", F_BOOL, P(slot_save), .deflt = "false",
     .doc = "llama.cpp: save each slot's prompt cache before a sleep or stop and restore it after the same "
            "model's wake or start (--slot-save-path under <state_dir>/slots)"},
    {"unit_template", F_STR, P(unit_template), .flags = FL_IGNORED,
     .doc = "gpumod renders its own units (gpumod template render)"},
    {"unit_vars", F_CUSTOM, 0, .parse = parse_unit_vars, .show = show_unit_vars,
     .doc = "the Python project's template variables; see the unit_vars table"},
    {"command", F_STRV, P(command), .doc = "driver command: the argv, with {host} {port} {model_path} {id}"},
    {"args", F_STRV, P(args), .doc = "extra argv words appended after the driver's own"},
    {"env", F_ENV, P(env), .doc = "environment of the engine"},
    {"aliases", F_STRV, P(aliases), .doc = "more model names routed to this service"},
    {"devices", F_CUSTOM, 0, .parse = parse_devices, .show = show_devices,
     .doc = "GPU indices in PCI bus order, or UUIDs"},
    {"memory", F_CUSTOM, 0, .parse = parse_memory, .show = show_memory,
     .doc = "{gpu_mb: N or [per device], host_mb: N, pins_host: BOOL}: declared need; pins_host says whether "
            "the engine pins host memory (the contiguity rule binds only then; default: vllm and unknown "
            "commands yes, llama.cpp no, since gpumod sets GGML_CUDA_NO_PINNED=1)"},
    {"restart", F_SECTION, 0, .sub = restart_fields, .doc = "overrides the supervisor's restart keys"},
    {"activation", F_ENUM, P(activation), .names = activation_names,
     .doc = "switch | start | reject (default: router.activation)"},
    {"start_first", F_BOOL, P(start_first), .doc = "start before the mode's other services (engines such as vLLM)"},
    {"canary", F_CUSTOM, 0, .parse = parse_canary, .show = show_canary,
     .doc = "true (the built-in known-answer prompts) or {prompt, expect, max_tokens}: checked after the health "
            "check and before ready; a wrong answer fails the start, without a restart (docs/canary.md)"},
    {"remote", F_SECTION, 0, .sub = remote_fields, .doc = "driver remote: no process, no port, no gate"},
    {NULL},
};

static bool id_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 64 || !isalnum((unsigned char)s[0])) return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') return false;
    return true;
}

static bool alias_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 200) return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-:/@+", *p)) return false;
    return true;
}

static const char *const cache_types[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1", NULL};

int preset_check_cache_type(const char *key, const char *v, char *err, size_t errlen)
{
    if (!v) return 0;
    for (size_t i = 0; cache_types[i]; i++)
        if (!strcmp(v, cache_types[i])) return 0;
    buf b = BUF_INIT;
    for (size_t i = 0; cache_types[i]; i++) buf_printf(&b, "%s%s", i ? ", " : "", cache_types[i]);
    snprintf(err, errlen, "%s: expected one of %s, found '%s'", key, b.p, v);
    buf_release(&b);
    return -1;
}

static void check_cache_type(schema_ctx *c, const ynode *uv, const char *key, const char *v)
{
    char e[256];
    if (preset_check_cache_type(key, v, e, sizeof e)) schema_error(c, ymap_get(uv, key), "unit_vars: %s", e);
}

/* llama.cpp's physical batch is at most its logical one (it would cut
 * n_ubatch down silently: the estimate and the run would disagree). */
int preset_check_across(const preset *p, char *err, size_t errlen)
{
    const llama_opts *o = &p->llama;
    if (p->driver != DRV_LLAMACPP || o->ubatch_size <= 0) return 0;
    int64_t batch = o->batch_size > 0 ? o->batch_size : 2048;
    if (o->ubatch_size <= batch) return 0;
    snprintf(err, errlen,
             "ubatch_size %lld is larger than batch_size %s%lld (llama.cpp's physical batch is at most its logical "
             "batch%s)",
             (long long)o->ubatch_size, o->batch_size > 0 ? "" : "(its default) ", (long long)batch,
             o->batch_size > 0 ? "" : "; set batch_size too");
    return -1;
}

/* A host the daemon's health probe can reach without a resolver. */
static bool host_ok(const char *h)
{
    unsigned char a[16];
    return !strcmp(h, "localhost") || !strcmp(h, "[::]") || inet_pton(AF_INET, h, a) == 1 ||
           inet_pton(AF_INET6, h, a) == 1;
}

/* llama.cpp router mode: the router's command line overrides each
 * model's own settings, so a default written there would silently replace
 * them (a 128K model run at -c 4096): what the preset leaves out is not
 * passed at all. */
static void router_mode_unset(preset *p, const ynode *uv)
{
    if (!ymap_get(uv, "parallel")) p->llama.parallel = -1;
    if (!ymap_get(uv, "fit")) p->llama.fit = TRI_UNSET;
    if (!ymap_get(uv, "n_gpu_layers")) p->llama.n_gpu_layers = LLAMA_NGL_UNSET;
}

/* The key node of key in map (warnings about a unit_vars key point at
 * the key, as the unknown-key ones do). */
static const ynode *ymap_key(const ynode *map, const char *key)
{
    if (!map || map->kind != Y_MAP) return NULL;
    for (size_t i = 0; i < map->npairs; i++)
        if (!strcmp(map->pairs[i].key->s, key)) return map->pairs[i].key;
    return NULL;
}

/* Keys that parse but whose feature is not built yet: a warning naming
 * what does not happen, at config check and at every load (the daemon
 * logs it), so that nobody takes them for honoured. */
static void warn_not_yet(schema_ctx *c, const preset *p, const ynode *root, const ynode *uv)
{
    const ynode *sm = ymap_get(root, "sleep_mode"), *k;
    bool level = p->sleep == SLEEP_L1 || p->sleep == SLEEP_L2;
    if (p->driver != DRV_VLLM && p->driver != DRV_LLAMACPP && p->sleep != SLEEP_NONE)
        schema_warn(c, sm, "sleep_mode %s is %s; driver %s cannot sleep, so a stop frees this service",
                    sleep_mode_names[p->sleep], level ? "a vLLM sleep level" : "llama.cpp router mode's unload",
                    driver_names[p->driver]);
    if (p->driver == DRV_VLLM && (k = ymap_key(uv, "sleep_level")))
        schema_warn(c, k,
                    "unit_vars: key 'sleep_level' is accepted but not acted on: the level of each POST /sleep "
                    "comes from sleep_mode (l1 or l2)");
    if (p->slot_save && p->driver != DRV_LLAMACPP)
        schema_warn(c, ymap_get(root, "slot_save"),
                    "slot_save: only llama.cpp saves slots; driver %s does nothing with it",
                    driver_names[p->driver]);
}

/* Whether h is a loopback address: 127.0.0.0/8, ::1 (also as
 * ::ffff:127.x.y.z) or the literal name localhost; never a name that
 * merely begins with "127.". */
static bool host_loopback(const char *h)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (!strcmp(h, "localhost")) return true;
    if (inet_pton(AF_INET, h, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, h, &a6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

/* The engines' sleep, wake and load endpoints are unauthenticated
 * development endpoints: a preset that uses them must keep its engine on
 * loopback (an error).  A llama.cpp router-mode preset (models_dir, no
 * model_path) with sleep_mode none still has its /models/load and unload
 * called by gpumod: a warning. */
static void check_sleep_loopback(schema_ctx *c, const preset *p, const ynode *root, const ynode *uv)
{
    if (p->driver != DRV_VLLM && p->driver != DRV_LLAMACPP) return;
    bool router = p->driver == DRV_LLAMACPP && p->llama.models_dir && !p->model_path;
    if (p->sleep == SLEEP_NONE && !router) return;
    const char *h = p->host ? p->host : "127.0.0.1";
    if (host_loopback(h)) return;
    const ynode *at = ymap_get(uv, "host") ? ymap_get(uv, "host") : ymap_get(root, "host");
    if (p->sleep == SLEEP_NONE) {
        schema_warn(c, at ? at : root,
                    "unit_vars: router mode (models_dir) has gpumod call the engine's unauthenticated "
                    "/models/load and /models/unload: host should be a loopback address (127.0.0.1, ::1 "
                    "or localhost), not '%s'",
                    h);
        return;
    }
    schema_error(c, at ? at : ymap_get(root, "sleep_mode"),
                 "unit_vars: sleep_mode %s uses the engine's unauthenticated sleep/load endpoints: host must be "
                 "a loopback address (127.0.0.1, ::1 or localhost), not '%s'",
                 sleep_mode_names[p->sleep], h);
}

/* id, name, host, aliases, health_endpoint: valid, defaults filled. */
static void finish_identity(schema_ctx *c, preset *p, const ynode *root, const ynode *uv)
{
    if (p->id && !id_ok(p->id))
        schema_error(c, ymap_get(root, "id"),
                     "id '%s' is not valid: expected [A-Za-z0-9][A-Za-z0-9._-]*, up to 64 characters", p->id);
    if (p->id && (!strcmp(p->id, "none") || !strcmp(p->id, "default")))
        schema_error(c, ymap_get(root, "id"), "id '%s' is reserved", p->id);
    if (!p->name && p->id) p->name = xstrdup(p->id);
    if (!p->host) p->host = xstrdup("127.0.0.1");
    if (p->driver != DRV_REMOTE && !host_ok(p->host))
        schema_error(c, ymap_get(uv, "host") ? ymap_get(uv, "host") : ymap_get(root, "host"),
                     "host '%s' is not valid: expected a numeric IP address (127.0.0.1, 0.0.0.0, ::1) or localhost "
                     "(the daemon probes the service's health there)",
                     p->host);
    for (size_t i = 0; i < p->aliases.n; i++) {
        if (!alias_ok(p->aliases.v[i]))
            schema_error(c, ymap_get(root, "aliases"),
                         "aliases[%zu]: '%s' is not a valid model name: expected letters, digits and ._-:/@+", i,
                         p->aliases.v[i]);
        else if (!strcmp(p->aliases.v[i], "default"))
            schema_error(c, ymap_get(root, "aliases"), "aliases[%zu]: 'default' is reserved for router.default", i);
    }
    if (p->health_endpoint && p->health_endpoint[0] != '/')
        schema_error(c, ymap_get(root, "health_endpoint"), "health_endpoint '%s' must start with '/'",
                     p->health_endpoint);
}

/* model_path and the context size may be given twice (top level and
 * unit_vars): they must agree, and the unit_vars one fills a missing one. */
static void finish_twice_given(schema_ctx *c, pbuild *pb, const ynode *root, const ynode *uv)
{
    preset *p = &pb->p;
    if (pb->uv_model_path) {
        if (p->model_path && strcmp(p->model_path, pb->uv_model_path))
            schema_error(c, ymap_get(uv, "model_path"),
                         "unit_vars.model_path '%s' disagrees with model_path '%s' (line %d)", pb->uv_model_path,
                         p->model_path, ymap_get(root, "model_path")->line);
        else if (!p->model_path)
            p->model_path = xstrdup(pb->uv_model_path);
    }
    const char *ctxkey = ymap_get(uv, "context_size") ? "context_size" : "ctx_size";
    if (ymap_get(uv, "context_size") && ymap_get(uv, "ctx_size")) {
        int64_t a = 0, b2 = 0;
        parse_int64(ymap_get(uv, "context_size")->s, &a);
        parse_int64(ymap_get(uv, "ctx_size")->s, &b2);
        if (a != b2)
            schema_error(c, ymap_get(uv, "ctx_size"), "unit_vars.ctx_size %lld disagrees with unit_vars.context_size %lld",
                         (long long)b2, (long long)a);
    }
    if (pb->uv_ctx > 0) {
        if (p->context_size > 0 && p->context_size != pb->uv_ctx)
            schema_error(c, ymap_get(uv, ctxkey), "unit_vars.%s %lld disagrees with context_size %lld", ctxkey,
                         (long long)pb->uv_ctx, (long long)p->context_size);
        else
            p->context_size = pb->uv_ctx;
    }
    if (pb->uv_max_model_len > 0) {
        if (p->context_size > 0 && p->context_size != pb->uv_max_model_len)
            schema_error(c, ymap_get(uv, "max_model_len"), "unit_vars.max_model_len %lld disagrees with context_size %lld",
                         (long long)pb->uv_max_model_len, (long long)p->context_size);
        else
            p->context_size = pb->uv_max_model_len;
    }
}

/* declared memory: vram_mb is the scalar form of memory.gpu_mb */
static void finish_memory(schema_ctx *c, preset *p, const ynode *root)
{
    if (p->vram_mb >= 0 && p->n_mem_gpu) {
        int64_t sum = 0;
        for (size_t i = 0; i < p->n_mem_gpu; i++) sum += p->mem_gpu_mb[i];
        if (sum != p->vram_mb)
            schema_error(c, ymap_get(root, "vram_mb"), "vram_mb %lld disagrees with memory.gpu_mb (total %lld)",
                         (long long)p->vram_mb, (long long)sum);
    } else if (p->vram_mb >= 0) {
        p->mem_gpu_mb = xcalloc(1, sizeof(int64_t));
        p->mem_gpu_mb[0] = p->vram_mb;
        p->n_mem_gpu = 1;
    }
    if (p->n_mem_gpu > 1 && p->n_mem_gpu != p->devices.n)
        schema_error(c, ymap_get(root, "memory"), "memory.gpu_mb has %zu entries but devices has %zu", p->n_mem_gpu,
                     p->devices.n);
}

/* command: and remote: belong to their drivers; a server needs a port. */
static void finish_driver_keys(schema_ctx *c, const preset *p, const ynode *root)
{
    if (ymap_get(root, "command") && p->driver != DRV_COMMAND)
        schema_error(c, ymap_get(root, "command"), "command: only for driver 'command' (this preset's driver is %s)",
                     driver_names[p->driver]);
    if (ymap_get(root, "remote") && p->driver != DRV_REMOTE)
        schema_error(c, ymap_get(root, "remote"), "remote: only for driver 'remote' (this preset's driver is %s)",
                     driver_names[p->driver]);
    if (p->driver != DRV_REMOTE && !ymap_get(root, "port") && ymap_get(root, "driver"))
        schema_error(c, root, "required key 'port' is missing (driver %s runs a server on a port)",
                     driver_names[p->driver]);
}

static void finish_llamacpp(schema_ctx *c, preset *p, const ynode *root, const ynode *uv)
{
    if (p->model_path && p->llama.models_dir)
        schema_error(c, ymap_get(uv, "models_dir"),
                     "unit_vars.models_dir (router mode) and model_path (single-model mode) exclude each other");
    else if (!p->model_path && !p->llama.models_dir)
        schema_error(c, root, "driver llamacpp needs model_path (single model) or unit_vars.models_dir (router mode)");
    if (p->llama.models_dir && !p->model_path) {
        router_mode_unset(p, uv);
    } else {
        if (p->context_size < 0) p->context_size = 4096;
        if (p->llama.parallel < 0) p->llama.parallel = 1; /* parallel: null keeps the default */
    }
    check_cache_type(c, uv, "cache_type_k", p->llama.cache_type_k);
    check_cache_type(c, uv, "cache_type_v", p->llama.cache_type_v);
    char e[256];
    if (preset_check_across(p, e, sizeof e)) schema_error(c, ymap_get(uv, "ubatch_size"), "unit_vars: %s", e);
    if (p->sleep != SLEEP_NONE && p->sleep != SLEEP_ROUTER)
        schema_warn(c, ymap_get(root, "sleep_mode"),
                    "sleep_mode %s is a vLLM sleep level; llama-server cannot sleep, so a stop frees this service",
                    sleep_mode_names[p->sleep]);
    if (p->sleep == SLEEP_ROUTER && !p->llama.models_dir)
        schema_error(c, ymap_get(root, "sleep_mode"), "sleep_mode router needs router mode (unit_vars.models_dir)");
}

static void finish_vllm(schema_ctx *c, preset *p, const ynode *root)
{
    if (!p->model_id && !p->model_path) schema_error(c, root, "driver vllm needs model_id or model_path");
    if (p->context_size < 0) p->context_size = 4096;
    p->vllm.max_model_len = p->context_size;
    if (p->sleep == SLEEP_L1 || p->sleep == SLEEP_L2) p->vllm.enable_sleep_mode = true;
    if (p->sleep == SLEEP_ROUTER)
        schema_error(c, ymap_get(root, "sleep_mode"), "sleep_mode router is for llama.cpp router mode, not vllm");
    if (p->vllm.sleep_level < 0 && p->sleep == SLEEP_L2) p->vllm.sleep_level = 2;
    if (p->vllm.sleep_level < 0 && p->sleep == SLEEP_L1) p->vllm.sleep_level = 1;
}

static void finish_remote(schema_ctx *c, const preset *p, const ynode *root)
{
    if (!p->remote.base_url) {
        schema_error(c, root, "driver remote needs remote.base_url");
    } else {
        url_base ub;
        char uerr[512];
        if (url_base_parse(p->remote.base_url, &ub, uerr, sizeof uerr))
            schema_error(c, ymap_get(ymap_get(root, "remote"), "base_url"), "remote.%s", uerr);
    }
    if (p->remote.api_key_env && *p->remote.api_key_env) {
        /* the key goes out as a header value: a space or a control
         * character in it would be refused there, silently */
        const char *k = getenv(p->remote.api_key_env);
        bool clean = true;
        for (const char *q = k ? k : ""; *q; q++)
            if ((unsigned char)*q < 0x21 || *q == 0x7f) clean = false;
        if (!clean)
            schema_error(c, ymap_get(ymap_get(root, "remote"), "api_key_env"),
                         "remote.api_key_env: the variable '%s' holds a key with a space or a control character; "
                         "it cannot be sent as 'Authorization: Bearer KEY' (remove the stray characters)",
                         p->remote.api_key_env);
    }
}

/* Driver defaults and the rules that need the whole preset: what the
 * keys mean together, and each driver's own rules. */
static void preset_finish(schema_ctx *c, pbuild *pb, const ynode *root)
{
    preset *p = &pb->p;
    const ynode *uv = ymap_get(root, "unit_vars");
    const ynode *at;

    finish_identity(c, p, root, uv);
    finish_twice_given(c, pb, root, uv);
    finish_memory(c, p, root);
    finish_driver_keys(c, p, root);
    warn_not_yet(c, p, root, uv);
    check_sleep_loopback(c, p, root, uv);
    switch (p->driver) {
    case DRV_LLAMACPP: finish_llamacpp(c, p, root, uv); break;
    case DRV_VLLM: finish_vllm(c, p, root); break;
    case DRV_DOCKER:
        if (!p->docker.image) schema_error(c, root, "driver docker needs unit_vars.image");
        break;
    case DRV_COMMAND:
        if (!ymap_get(root, "command") || !p->command.n)
            schema_error(c, root, "driver command needs command: [program, args...]");
        break;
    case DRV_REMOTE: finish_remote(c, p, root); break;
    default: break;
    }
    if (p->driver != DRV_LLAMACPP && p->driver != DRV_VLLM && (p->sleep == SLEEP_L1 || p->sleep == SLEEP_L2))
        schema_warn(c, ymap_get(root, "sleep_mode"), "sleep_mode %s: driver %s cannot sleep; a stop frees this service",
                    sleep_mode_names[p->sleep], driver_names[p->driver]);
    if ((at = ymap_get(root, "model_path")) && p->driver == DRV_REMOTE)
        schema_warn(c, at, "model_path: driver remote runs no model here; gpumod does not act on it");
}

static void pbuild_init(pbuild *pb)
{
    memset(pb, 0, sizeof *pb);
    schema_defaults(preset_fields, pb);
    schema_defaults(unit_vars_fields, pb);
    pb->p.activation = ACT_INHERIT;
    pb->p.mem_host_mb = -1;
    pb->p.mem_pins_host = -1;
    pb->p.canary.max_tokens = 32; /* core/canary.h CANARY_MAX_TOKENS_DEFAULT */
    /* documented default: every layer on the GPU (-ngl all); the schema
     * sets no default for custom fields, so it is set here */
    pb->p.llama.n_gpu_layers = -1;
}

int preset_parse(preset *out, const ynode *root, const char *file, diags *d)
{
    pbuild pb;
    pbuild_init(&pb);
    schema_ctx c = {file, d, "", false};
    pb.p.pos = ypos(file, root);

    if (!root || root->kind != Y_MAP) {
        schema_error(&c, root, "a preset file holds one mapping (id, driver, port, ...), found %s", ykind_name(root));
    } else {
        /* driver first: unit_vars are checked against it */
        const ynode *id = ymap_get(root, "id");
        if (id && id->kind == Y_SCALAR && !text_has_control(id->s, false))
            snprintf(c.subject, sizeof c.subject, "preset '%s'", id->s);
        const ynode *drv = ymap_get(root, "driver");
        if (drv) { /* errors are reported by the full pass below */
            diags scratch = {0};
            schema_ctx c2 = {file, &scratch, "", false};
            schema_parse_value(&c2, &preset_fields[2], drv, &pb);
            diags_release(&scratch);
        }
        schema_parse(&c, preset_fields, root, &pb);
        preset_finish(&c, &pb, root);
        pb.p.id_pos = ypos(file, ymap_get(root, "id"));
        pb.p.port_pos = ypos(file, ymap_get(root, "port"));
        pb.p.aliases_pos = ypos(file, ymap_get(root, "aliases"));
    }
    free(pb.uv_model_path);
    pb.p.has_errors = c.failed;
    *out = pb.p;
    return c.failed ? -1 : 0;
}

/* Relative paths are relative to the configuration directory, so a
 * configuration directory can be moved as a whole (the demo is one). */
static void absolutize(char **path, const char *base)
{
    if (!*path || (*path)[0] == '/' || !base) return;
    char *abs = xasprintf("%s/%s", base, *path);
    free(*path);
    *path = abs;
}

void preset_resolve_paths(preset *p, const char *base)
{
    absolutize(&p->model_path, base);
    absolutize(&p->llama.models_dir, base);
    absolutize(&p->llama.model_draft, base);
    absolutize(&p->llama.models_preset, base);
    absolutize(&p->fastapi.working_dir, base);
}

void preset_release(preset *p)
{
    pbuild pb = {.p = *p};
    schema_release(preset_fields, &pb);
    schema_release(unit_vars_fields, &pb);
    kvlist_release(&pb.p.unit_vars);
    strv_release(&pb.p.devices);
    strv_release(&pb.p.extra_args);
    free(pb.p.mem_gpu_mb);
    free(pb.p.canary.prompt);
    free(pb.p.canary.expect);
    free(pb.p.llama.chat_template_kwargs); /* F_CUSTOM: not the table's to free */
    free(pb.p.vllm.hf_overrides);
    free(pb.uv_model_path);
    memset(p, 0, sizeof *p);
}

void preset_show(buf *out, const preset *p, bool json)
{
    pbuild pb = {.p = *p};
    if (json)
        schema_show_json(out, preset_fields, &pb);
    else
        schema_show_text(out, preset_fields, &pb, 0);
}

void preset_show_unit_vars(buf *out, const preset *p, bool json)
{
    pbuild pb = {.p = *p};
    /* the resolved driver options: only the keys that apply */
    field tab[96];
    size_t n = 0;
    for (const field *f = unit_vars_fields; f->key && n < 95; f++) {
        if (!applies(f, p->driver)) continue;
        if (f->off == B(uv_model_path) || f->off == B(uv_ctx) || f->off == B(uv_max_model_len)) continue;
        if (!strcmp(f->key, "gpu_memory_utilization") || !strcmp(f->key, "preset_file")) continue;
        tab[n++] = *f;
    }
    tab[n] = (field){NULL};
    if (json)
        schema_show_json(out, tab, &pb);
    else
        schema_show_text(out, tab, &pb, 2);
}

void preset_doc_markdown(buf *out)
{
    buf_adds(out, "| key | type | default | meaning |\n|---|---|---|---|\n");
    schema_doc_markdown(out, preset_fields, "");
}

const field *preset_key_field(const char *key)
{
    /* the top-level context_size: its unit_vars twin parses into a slot
     * of the loader's (reconciled with this one later), no preset's */
    const field *tab = strcmp(key, "context_size") ? unit_vars_fields : preset_fields;
    for (const field *f = tab; f->key; f++)
        if (!strcmp(f->key, key)) return f;
    return NULL;
}

bool preset_key_applies(const char *key, int driver)
{
    for (const field *f = unit_vars_fields; f->key; f++)
        if (!strcmp(f->key, key)) return driver >= 0 && driver < DRV__COUNT && applies(f, driver);
    return false;
}

void *preset_key_at(preset *p, const field *f)
{
    /* P() offsets are the preset's own (it leads pbuild); B() ones are not */
    size_t base = offsetof(pbuild, p);
    return f->off >= base && f->off + sizeof(int64_t) <= base + sizeof(preset) ? (char *)p + (f->off - base) : NULL;
}

void unit_vars_doc_markdown(buf *out)
{
    buf_adds(out, "| unit_vars key | drivers | type | what gpumod does with it |\n|---|---|---|---|\n");
    for (const field *f = unit_vars_fields; f->key; f++) {
        buf b = BUF_INIT;
        drivers_of(&b, f);
        buf_printf(out, "| `%s` | %s | %s | ", f->key, b.p, ftype_name(f));
        if (f->deflt && strcmp(f->deflt, "null")) buf_printf(out, "default %s; ", f->deflt);
        schema_md_text(out, f->doc);
        buf_adds(out, " |\n");
        buf_release(&b);
    }
    for (size_t i = 0; uv_ignored[i]; i++)
        buf_printf(out, "| `%s` | — | — | accepted, not acted on (warning); the Python project ignored it too |\n",
                   uv_ignored[i]);
}
