/* overrides.c - a start's overrides (overrides.h): the table of the keys
 * a start may override, their parsing from JSON, applying them to a
 * preset, and their JSON and text.
 *
 * Design: no key is defined twice.  The table here only says which preset
 * keys tune a run; each value is parsed by the very field the preset file
 * is parsed with (config/preset.c's unit_vars table, or the top-level
 * context_size), on the scalar node a preset file would have given, and
 * then checked by the same value and cross-key checks.  What JSON adds is
 * its types: an integer must be a JSON number, a boolean true or false,
 * so "8" is refused where the YAML loader would have read 8. */
#include "config/overrides.h"
#include "config/preset.h"
#include "config/schema.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys a start may override, canonical names first, then the
 * preset's own second spelling of one (alias_of). */
static const struct okey {
    const char *name, *alias_of;
} okeys[] = {
    {"context_size", NULL},     {"threads", NULL},        {"batch_size", NULL},
    {"ubatch_size", NULL},      {"parallel", NULL},       {"n_gpu_layers", NULL},
    {"n_cpu_moe", NULL},        {"cache_type_k", NULL},   {"cache_type_v", NULL},
    {"flash_attn", NULL},       {"spec_draft_n_max", NULL}, {"max_num_seqs", NULL},
    {"gpu_memory_utilization", NULL}, {"kv_cache_dtype", NULL}, {"enforce_eager", NULL},
    {"dtype", NULL},            {"gpu_mem_util", "gpu_memory_utilization"},
};
#define N_OKEYS (sizeof okeys / sizeof *okeys)

static const struct okey *okey_find(const char *name)
{
    for (size_t k = 0; k < N_OKEYS; k++)
        if (!strcmp(okeys[k].name, name)) return &okeys[k];
    return NULL;
}

static const char *canon_of(const struct okey *k)
{
    return k->alias_of ? k->alias_of : k->name;
}

static size_t okey_rank(const char *canon)
{
    for (size_t k = 0; k < N_OKEYS; k++)
        if (!strcmp(okeys[k].name, canon)) return k;
    return N_OKEYS;
}

/* "context_size, threads, ..., env" for driver (-1: every key) */
static void keys_for(buf *b, int driver)
{
    for (size_t k = 0; k < N_OKEYS; k++)
        if (!okeys[k].alias_of && (driver < 0 || preset_key_applies(okeys[k].name, driver)))
            buf_printf(b, "%s, ", okeys[k].name);
    buf_adds(b, driver == DRV_REMOTE ? "none" : "env");
}

/* err = msg and the keys the driver takes. */
static int fail_keys(char *err, size_t errlen, int driver, const char *msg)
{
    buf k = BUF_INIT;
    keys_for(&k, driver);
    if (driver >= 0)
        snprintf(err, errlen, "%s (keys for %s: %s)", msg, driver_names[driver], k.p);
    else
        snprintf(err, errlen, "%s (keys: %s)", msg, k.p);
    buf_release(&k);
    return -1;
}

/* What a JSON value must be for f, for the error that says so. */
static void expected_of(buf *b, const field *f)
{
    switch (f->type) {
    case F_INT: buf_printf(b, "an integer in %.15g..%.15g", f->min, f->max); break;
    case F_CUSTOM: buf_printf(b, "an integer in %.15g..%.15g or \"all\"", f->min, f->max); break;
    case F_FLOAT: buf_printf(b, "a number in %.15g..%.15g", f->min, f->max); break;
    case F_BOOL: buf_adds(b, "true or false"); break;
    case F_TRI: buf_adds(b, "true, false, \"on\", \"off\" or \"auto\""); break;
    default: buf_adds(b, "a string"); break;
    }
}

static int fail_type(const char *key, const field *f, const cJSON *v, char *err, size_t errlen)
{
    buf b = BUF_INIT;
    expected_of(&b, f);
    char *j = cJSON_PrintUnformatted(v);
    snprintf(err, errlen, "overrides.%s: expected %s (or null for the preset's), found %.64s%s", key, b.p,
             j ? j : "?", j && strlen(j) > 64 ? "..." : "");
    cJSON_free(j);
    buf_release(&b);
    return -1;
}

/* The scalar node a preset file would give for v, its JSON type checked
 * against f's first; text is the node's storage. */
static int to_node(const char *key, const field *f, const cJSON *v, ynode *n, char *text, size_t tlen, char *err,
                   size_t errlen)
{
    memset(n, 0, sizeof *n);
    n->kind = Y_SCALAR;
    n->line = n->col = 1;
    n->plain = true;
    bool num = cJSON_IsNumber(v), str = cJSON_IsString(v), bl = cJSON_IsBool(v);
    bool ok = false;
    switch (f->type) {
    case F_INT: ok = num; break;
    case F_FLOAT: ok = num; break;
    case F_CUSTOM: ok = num || (str && !strcmp(v->valuestring, "all")); break;
    case F_BOOL: ok = bl; break;
    case F_TRI:
        ok = bl || (str && (!strcmp(v->valuestring, "on") || !strcmp(v->valuestring, "off") ||
                            !strcmp(v->valuestring, "auto")));
        break;
    default: ok = str; break;
    }
    if (!ok) return fail_type(key, f, v, err, errlen);
    if (num) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9.0e18)
            snprintf(text, tlen, "%lld", (long long)d);
        else
            snprintf(text, tlen, "%.15g", d);
        n->s = text;
    } else if (bl) {
        n->s = (char *)(cJSON_IsTrue(v) ? "true" : "false");
    } else {
        n->s = v->valuestring;
        n->plain = f->type == F_TRI || f->type == F_CUSTOM; /* on/off/auto/all: words, not text */
    }
    n->len = strlen(n->s);
    return 0;
}

/* Parse n with f exactly as the preset file would, into it.  -1 with err. */
static int parse_value(const char *given, const field *f, const ynode *n, ov_item *it, char *err, size_t errlen)
{
    preset scratch;
    memset(&scratch, 0, sizeof scratch);
    void *slot = preset_key_at(&scratch, f);
    if (!slot) {
        snprintf(err, errlen, "overrides.%s: not a key of a preset that a start can set", given);
        return -1;
    }
    diags d = {0};
    schema_ctx c = {"<overrides>", &d, "", false};
    schema_parse_value(&c, f, n, (char *)slot - f->off);
    int rc = 0;
    for (size_t i = 0; i < d.n && !rc; i++)
        if (d.v[i].level == DIAG_ERROR) {
            snprintf(err, errlen, "overrides.%s", d.v[i].msg);
            rc = -1;
        }
    diags_release(&d);
    char e[256];
    if (!rc && f->type == F_STR && !strncmp(f->key, "cache_type_", 11) &&
        preset_check_cache_type(f->key, *(char **)slot, e, sizeof e)) {
        snprintf(err, errlen, "overrides.%s", e);
        rc = -1;
    }
    switch (f->type) {
    case F_FLOAT: it->d = *(double *)slot; break;
    case F_BOOL: it->i = *(bool *)slot; break;
    case F_TRI: it->i = *(tri *)slot; break;
    case F_STR: it->s = *(char **)slot; break;
    default: it->i = *(int64_t *)slot; break;
    }
    if (rc) {
        free(it->s);
        it->s = NULL;
    }
    return rc;
}

static void item_push(overrides *ov, const ov_item *it)
{
    ov->v = xrealloc(ov->v, (ov->n + 1) * sizeof *ov->v);
    ov->v[ov->n++] = *it;
}

static int parse_key(const cJSON *v, int driver, overrides *out, char *err, size_t errlen)
{
    const char *given = v->string;
    const struct okey *k = okey_find(given);
    char m[256];
    if (!k) {
        const char *cands[N_OKEYS];
        for (size_t i = 0; i < N_OKEYS; i++) cands[i] = okeys[i].name;
        const char *dym = schema_did_you_mean(given, cands, N_OKEYS);
        if (preset_key_field(given))
            snprintf(m, sizeof m, "overrides: '%.64s' is a preset key that a start cannot override", given);
        else
            snprintf(m, sizeof m, "overrides: unknown key '%.64s'%s%s%s", given, dym ? " (did you mean '" : "",
                     dym ? dym : "", dym ? "'?)" : "");
        return fail_keys(err, errlen, driver, m);
    }
    if (cJSON_IsNull(v)) return 0; /* the preset's */
    const char *canon = canon_of(k);
    for (size_t i = 0; i < out->n; i++)
        if (!strcmp(out->v[i].key, canon)) {
            snprintf(m, sizeof m, "overrides: '%s' and '%s' are the same key; give one", given, canon);
            return fail_keys(err, errlen, driver, m);
        }
    if (driver >= 0 && !preset_key_applies(canon, driver)) {
        snprintf(m, sizeof m, "overrides.%s: the %s driver takes no %s", given, driver_names[driver], given);
        return fail_keys(err, errlen, driver, m);
    }
    const field *f = preset_key_field(given);
    ynode n;
    char text[64];
    ov_item it = {.key = canon, .f = preset_key_field(canon)};
    if (!f || !it.f || to_node(given, f, v, &n, text, sizeof text, err, errlen) ||
        parse_value(given, f, &n, &it, err, errlen))
        return -1;
    item_push(out, &it);
    return 0;
}

static bool env_name_ok(const char *s)
{
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_') || strlen(s) > 256) return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') return false;
    return true;
}

static int parse_env(const cJSON *e, int driver, overrides *out, char *err, size_t errlen)
{
    if (cJSON_IsNull(e)) return 0;
    if (!cJSON_IsObject(e)) {
        snprintf(err, errlen, "overrides.env: expected an object {\"NAME\": \"value\"} or null");
        return -1;
    }
    if (driver == DRV_REMOTE) {
        snprintf(err, errlen, "overrides.env: driver remote runs no process here; it takes no environment");
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, e)
    {
        if (!env_name_ok(v->string)) {
            snprintf(err, errlen,
                     "overrides.env: '%.64s' is not a valid environment variable name (expected [A-Za-z_][A-Za-z0-9_]*, "
                     "up to 256 characters)",
                     v->string);
            return -1;
        }
        if (cJSON_IsNull(v)) continue; /* the preset's */
        if (!cJSON_IsString(v)) {
            char *j = cJSON_PrintUnformatted(v);
            snprintf(err, errlen, "overrides.env.%s: expected a string (or null for the preset's), found %.64s",
                     v->string, j ? j : "?");
            cJSON_free(j);
            return -1;
        }
        size_t len = strlen(v->valuestring);
        if (text_has_control(v->valuestring, false)) {
            snprintf(err, errlen, "overrides.env.%s: control character in the value", v->string);
            return -1;
        }
        if (len > OVERRIDES_ENV_VALUE_MAX) {
            snprintf(err, errlen, "overrides.env.%s: the value is %zu bytes, more than %d", v->string, len,
                     OVERRIDES_ENV_VALUE_MAX);
            return -1;
        }
        if (out->env.n >= OVERRIDES_ENV_MAX) {
            snprintf(err, errlen, "overrides.env: more than %d variables", OVERRIDES_ENV_MAX);
            return -1;
        }
        kvlist_set(&out->env, v->string, v->valuestring, (srcpos){0});
    }
    return 0;
}

static int cmp_rank(const void *a, const void *b)
{
    size_t x = okey_rank(((const ov_item *)a)->key), y = okey_rank(((const ov_item *)b)->key);
    return x < y ? -1 : x > y;
}

/* Both batch sizes given: the cross-key rule needs no preset. */
static int check_batches(const overrides *ov, char *err, size_t errlen)
{
    preset q;
    memset(&q, 0, sizeof q);
    q.driver = DRV_LLAMACPP;
    q.llama.batch_size = q.llama.ubatch_size = -1;
    bool both = false;
    for (size_t i = 0; i < ov->n; i++) {
        if (!strcmp(ov->v[i].key, "batch_size")) q.llama.batch_size = ov->v[i].i, both = q.llama.ubatch_size > 0;
        if (!strcmp(ov->v[i].key, "ubatch_size")) q.llama.ubatch_size = ov->v[i].i, both = q.llama.batch_size > 0;
    }
    char e[256];
    if (!both || !preset_check_across(&q, e, sizeof e)) return 0;
    snprintf(err, errlen, "overrides: %s", e);
    return -1;
}

int overrides_parse(const cJSON *obj, int driver, overrides *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!obj || cJSON_IsNull(obj)) return 0;
    if (!cJSON_IsObject(obj)) {
        buf k = BUF_INIT;
        keys_for(&k, driver);
        snprintf(err, errlen, "\"overrides\" must be an object {KEY: value, ..., \"env\": {NAME: \"value\"}} or null "
                 "(keys%s%s: %s)", driver >= 0 ? " for " : "", driver >= 0 ? driver_names[driver] : "", k.p);
        buf_release(&k);
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, obj)
    {
        int rc = !strcmp(v->string, "env") ? parse_env(v, driver, out, err, errlen)
                                           : parse_key(v, driver, out, err, errlen);
        if (rc) {
            overrides_release(out);
            return -1;
        }
    }
    if (out->n > 1) qsort(out->v, out->n, sizeof *out->v, cmp_rank);
    if (check_batches(out, err, errlen)) {
        overrides_release(out);
        return -1;
    }
    return 0;
}

bool overrides_any(const overrides *ov)
{
    return ov && (ov->n || ov->env.n);
}

void overrides_release(overrides *ov)
{
    if (!ov) return;
    for (size_t i = 0; i < ov->n; i++) free(ov->v[i].s);
    free(ov->v);
    kvlist_release(&ov->env);
    memset(ov, 0, sizeof *ov);
}

void overrides_copy(overrides *dst, const overrides *src)
{
    if (dst == src) return;
    overrides_release(dst);
    if (!src) return;
    for (size_t i = 0; i < src->n; i++) {
        ov_item it = src->v[i];
        it.s = it.s ? xstrdup(it.s) : NULL;
        item_push(dst, &it);
    }
    for (size_t i = 0; i < src->env.n; i++) kvlist_set(&dst->env, src->env.v[i].key, src->env.v[i].val, (srcpos){0});
}

static bool item_same(const ov_item *a, const ov_item *b)
{
    if (strcmp(a->key, b->key)) return false;
    switch (a->f->type) {
    case F_FLOAT: return a->d == b->d;
    case F_STR: return (!a->s && !b->s) || (a->s && b->s && !strcmp(a->s, b->s));
    default: return a->i == b->i;
    }
}

static bool env_within(const kvlist *a, const kvlist *b)
{
    for (size_t i = 0; i < a->n; i++) {
        const kvpair *o = kvlist_get(b, a->v[i].key);
        if (!o || strcmp(o->val, a->v[i].val)) return false;
    }
    return true;
}

bool overrides_equal(const overrides *a, const overrides *b)
{
    static const overrides none;
    if (!a) a = &none;
    if (!b) b = &none;
    if (a->n != b->n || a->env.n != b->env.n) return false;
    for (size_t i = 0; i < a->n; i++)
        if (!item_same(&a->v[i], &b->v[i])) return false;
    return env_within(&a->env, &b->env);
}

/* One value, as JSON or for people; unset (per its field) as null / "". */
static void value_out(buf *out, const ov_item *it, bool json)
{
    const field *f = it->f;
    switch (f->type) {
    case F_FLOAT: buf_printf(out, "%.15g", it->d); break;
    case F_BOOL: buf_adds(out, it->i ? "true" : "false"); break;
    case F_TRI: buf_adds(out, it->i == TRI_ON ? "true" : it->i == TRI_OFF ? "false" : json ? "\"auto\"" : "auto"); break;
    case F_STR:
        if (json) buf_json_str_or_null(out, it->s);
        else buf_adds(out, it->s ? it->s : "");
        break;
    case F_CUSTOM:
        if (it->i == -1) {
            buf_adds(out, json ? "\"all\"" : "all");
            break;
        }
        /* fall through */
    default: buf_printf(out, "%lld", (long long)it->i); break;
    }
}

void overrides_json(buf *out, const overrides *ov)
{
    if (!overrides_any(ov)) {
        buf_adds(out, "null");
        return;
    }
    buf_addc(out, '{');
    for (size_t i = 0; i < ov->n; i++) {
        buf_printf(out, "%s\"%s\":", i ? "," : "", ov->v[i].key);
        value_out(out, &ov->v[i], true);
    }
    if (ov->env.n) {
        buf_adds(out, ov->n ? ",\"env\":{" : "\"env\":{");
        for (size_t i = 0; i < ov->env.n; i++) {
            if (i) buf_addc(out, ',');
            buf_json_str(out, ov->env.v[i].key);
            buf_addc(out, ':');
            buf_json_str(out, ov->env.v[i].val);
        }
        buf_addc(out, '}');
    }
    buf_addc(out, '}');
}

void overrides_text(buf *out, const overrides *ov)
{
    if (!ov) return;
    for (size_t i = 0; i < ov->n; i++) {
        buf_printf(out, "%s%s ", i ? ", " : "", ov->v[i].key);
        value_out(out, &ov->v[i], false);
    }
    for (size_t i = 0; i < ov->env.n; i++)
        buf_printf(out, "%senv %s=%s", i || ov->n ? ", " : "", ov->env.v[i].key, ov->env.v[i].val);
}

/* Write it's value into p's field. */
static void put(preset *p, const ov_item *it)
{
    void *slot = preset_key_at(p, it->f);
    if (!slot) return; /* parse refused such a field */
    switch (it->f->type) {
    case F_FLOAT: *(double *)slot = it->d; break;
    case F_BOOL: *(bool *)slot = it->i != 0; break;
    case F_TRI: *(tri *)slot = (tri)it->i; break;
    case F_STR: *(char **)slot = it->s; break;
    default: *(int64_t *)slot = it->i; break;
    }
    /* vLLM's --max-model-len is the context size (the loader keeps both) */
    if (!strcmp(it->key, "context_size") && p->driver == DRV_VLLM) p->vllm.max_model_len = it->i;
}

int overrides_apply(const preset *p, const overrides *ov, preset *out, char *err, size_t errlen)
{
    *out = *p;
    memset(&out->env, 0, sizeof out->env);
    for (size_t i = 0; i < p->env.n; i++) kvlist_set(&out->env, p->env.v[i].key, p->env.v[i].val, p->env.v[i].pos);
    if (!ov) return 0;
    if (ov->env.n && p->driver == DRV_REMOTE) {
        snprintf(err, errlen, "preset '%s': driver remote runs no process here; it takes no environment", p->id);
        return -1;
    }
    for (size_t i = 0; i < ov->env.n; i++) kvlist_set(&out->env, ov->env.v[i].key, ov->env.v[i].val, (srcpos){0});
    for (size_t i = 0; i < ov->n; i++) {
        if (!preset_key_applies(ov->v[i].key, p->driver)) {
            buf k = BUF_INIT;
            keys_for(&k, p->driver);
            snprintf(err, errlen, "preset '%s': the %s driver takes no %s (keys for %s: %s)", p->id,
                     driver_names[p->driver], ov->v[i].key, driver_names[p->driver], k.p);
            buf_release(&k);
            return -1;
        }
        put(out, &ov->v[i]);
    }
    char e[256];
    if (preset_check_across(out, e, sizeof e)) {
        snprintf(err, errlen, "preset '%s': %s", p->id, e);
        return -1;
    }
    return 0;
}

void overrides_applied_release(preset *out)
{
    kvlist_release(&out->env);
}

/* p's value of it's key, as an item of the same field. */
static bool current(const preset *p, const ov_item *it, ov_item *cur)
{
    *cur = (ov_item){.key = it->key, .f = it->f};
    const void *slot = preset_key_at((preset *)p, it->f);
    if (!slot) return false;
    switch (it->f->type) {
    case F_FLOAT: cur->d = *(const double *)slot; return cur->d >= 0;
    case F_BOOL: cur->i = *(const bool *)slot; return true;
    case F_TRI: cur->i = *(const tri *)slot; return true;
    case F_STR: cur->s = *(char *const *)slot; return cur->s != NULL;
    case F_CUSTOM: cur->i = *(const int64_t *)slot; return cur->i != LLAMA_NGL_UNSET;
    default: cur->i = *(const int64_t *)slot; return cur->i >= 0;
    }
}

bool overrides_differ(const preset *p, const overrides *ov, buf *have, buf *want)
{
    bool any = false;
    for (size_t i = 0; ov && i < ov->n; i++) {
        ov_item cur;
        bool set = current(p, &ov->v[i], &cur);
        if (set && item_same(&cur, &ov->v[i])) continue;
        buf_adds(have, any ? ", " : "");
        buf_adds(want, any ? ", " : "");
        any = true;
        if (set) {
            buf_printf(have, "%s ", cur.key);
            value_out(have, &cur, false);
        } else {
            buf_printf(have, "no %s set", cur.key);
        }
        buf_printf(want, "%s ", ov->v[i].key);
        value_out(want, &ov->v[i], false);
    }
    for (size_t i = 0; ov && i < ov->env.n; i++) {
        const kvpair *e = &ov->env.v[i], *c = kvlist_get(&p->env, e->key);
        if (c && !strcmp(c->val, e->val)) continue;
        buf_adds(have, any ? ", " : "");
        buf_adds(want, any ? ", " : "");
        any = true;
        if (c) buf_printf(have, "env %s=%s", c->key, c->val);
        else buf_printf(have, "no env %s set", e->key);
        buf_printf(want, "env %s=%s", e->key, e->val);
    }
    return any;
}

/* A --set value as the JSON the daemon takes: typed by the key's field
 * where the text reads as that type; anything else goes as a string, for
 * the daemon's check to name (one place says what a key takes). */
static cJSON *typed(const char *key, const char *val)
{
    const struct okey *k = okey_find(key);
    const field *f = k ? preset_key_field(canon_of(k)) : NULL;
    char *end;
    double d = strtod(val, &end);
    bool num = *val && !*end && !isspace((unsigned char)*val);
    if (f && (f->type == F_INT || f->type == F_FLOAT || f->type == F_CUSTOM) && num) return cJSON_CreateNumber(d);
    if (f && (f->type == F_BOOL || f->type == F_TRI)) {
        if (!strcmp(val, "true") || !strcmp(val, "1") || (f->type == F_BOOL && !strcmp(val, "on")))
            return cJSON_CreateTrue();
        if (!strcmp(val, "false") || !strcmp(val, "0") || (f->type == F_BOOL && !strcmp(val, "off")))
            return cJSON_CreateFalse();
    }
    return cJSON_CreateString(val);
}

int overrides_add_arg(cJSON *obj, const char *arg, bool env, char *err, size_t errlen)
{
    const char *opt = env ? "--env" : "--set";
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        snprintf(err, errlen, "%s expects %s=VALUE, found '%s'", opt, env ? "NAME" : "KEY", arg);
        return -1;
    }
    char *key = xstrndup(arg, (size_t)(eq - arg));
    cJSON *into = obj;
    if (env) {
        into = cJSON_GetObjectItemCaseSensitive(obj, "env");
        if (!into) into = cJSON_AddObjectToObject(obj, "env");
    }
    const struct okey *k = env ? NULL : okey_find(key);
    bool twice = cJSON_GetObjectItemCaseSensitive(into, key) != NULL;
    for (size_t i = 0; !twice && k && i < N_OKEYS; i++)
        twice = strcmp(okeys[i].name, key) && !strcmp(canon_of(&okeys[i]), canon_of(k)) &&
                cJSON_GetObjectItemCaseSensitive(into, okeys[i].name);
    bool envkey = !env && !strcmp(key, "env");
    if (twice || envkey) {
        snprintf(err, errlen, "%s %s: %s", opt, key, envkey ? "environment variables go with --env" : "given twice");
        free(key);
        return -1;
    }
    cJSON_AddItemToObject(into, key, env ? cJSON_CreateString(eq + 1) : typed(key, eq + 1));
    free(key);
    return 0;
}

void overrides_doc_markdown(buf *out)
{
    buf_adds(out, "| key | drivers | JSON value | the preset key's meaning |\n|---|---|---|---|\n");
    for (size_t k = 0; k < N_OKEYS; k++) {
        if (okeys[k].alias_of) continue;
        const field *f = preset_key_field(okeys[k].name);
        buf d = BUF_INIT, e = BUF_INIT;
        for (int drv = 0; drv < DRV__COUNT; drv++)
            if (preset_key_applies(okeys[k].name, drv)) buf_printf(&d, "%s%s", d.len ? ", " : "", driver_names[drv]);
        expected_of(&e, f);
        buf_printf(out, "| `%s` | %s | %s | ", okeys[k].name, d.p, e.p);
        const char *doc = f->doc;
        for (size_t a = 0; a < N_OKEYS; a++)
            if (okeys[a].alias_of && !strcmp(okeys[a].alias_of, okeys[k].name)) {
                buf_printf(out, "(also `%s`) ", okeys[a].name);
                /* the preset documents the pair at its other spelling */
                if (!strncmp(doc, "same as ", 8)) doc = preset_key_field(okeys[a].name)->doc;
            }
        schema_md_text(out, doc);
        buf_adds(out, " |\n");
        buf_release(&d);
        buf_release(&e);
    }
    buf_printf(out, "| `env` | every driver but remote | an object {NAME: string} | environment variables over the "
                    "preset's `env` (NAME `[A-Za-z_][A-Za-z0-9_]*`, a value without control characters, at most "
                    "%d bytes; at most %d variables) |\n",
               OVERRIDES_ENV_VALUE_MAX, OVERRIDES_ENV_MAX);
}
