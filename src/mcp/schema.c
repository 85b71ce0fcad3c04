/* schema.c - the JSON Schema subset of the MCP tools (see schema.h). */
#include "mcp/schema.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/buf.h"

static const char *type_of(const cJSON *v)
{
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsNumber(v))
        return v->valuedouble == floor(v->valuedouble) ? "an integer" : "a number";
    return "something else";
}

static bool type_is(const char *t, const cJSON *v)
{
    if (!strcmp(t, "string")) return cJSON_IsString(v);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
    if (!strcmp(t, "object")) return cJSON_IsObject(v);
    if (!strcmp(t, "array")) return cJSON_IsArray(v);
    if (!strcmp(t, "number")) return cJSON_IsNumber(v) && isfinite(v->valuedouble);
    if (!strcmp(t, "integer"))
        return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
               v->valuedouble == floor(v->valuedouble);
    return false;
}

/* UTF-8 characters in s (a maxLength counts characters, not bytes) */
static size_t u8len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

static int check_enum(const cJSON *en, const cJSON *v, const char *where, char *err, size_t errlen)
{
    buf list = BUF_INIT;
    for (const cJSON *e = en->child; e; e = e->next) {
        if (cJSON_IsString(e) && cJSON_IsString(v) && !strcmp(e->valuestring, v->valuestring)) {
            buf_release(&list);
            return 0;
        }
        if (cJSON_IsString(e)) buf_printf(&list, "%s\"%s\"", list.len ? ", " : "", e->valuestring);
    }
    snprintf(err, errlen, "%s: %s%s%s is not one of %s", where, cJSON_IsString(v) ? "\"" : "",
             cJSON_IsString(v) ? v->valuestring : type_of(v), cJSON_IsString(v) ? "\"" : "",
             list.p ? list.p : "");
    buf_release(&list);
    return -1;
}

static int check_scalar(const cJSON *s, const cJSON *v, const char *where, char *err, size_t errlen)
{
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    if (en && check_enum(en, v, where, err, errlen)) return -1;
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minimum");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maximum");
    if (cJSON_IsNumber(v) && mn && v->valuedouble < mn->valuedouble) {
        snprintf(err, errlen, "%s: %g is below the minimum %g", where, v->valuedouble,
                 mn->valuedouble);
        return -1;
    }
    if (cJSON_IsNumber(v) && mx && v->valuedouble > mx->valuedouble) {
        snprintf(err, errlen, "%s: %g is above the maximum %g", where, v->valuedouble,
                 mx->valuedouble);
        return -1;
    }
    const cJSON *mnl = cJSON_GetObjectItemCaseSensitive(s, "minLength");
    const cJSON *mxl = cJSON_GetObjectItemCaseSensitive(s, "maxLength");
    if (cJSON_IsString(v) && mnl && (double)u8len(v->valuestring) < mnl->valuedouble) {
        snprintf(err, errlen, "%s: the string is shorter than %g characters", where,
                 mnl->valuedouble);
        return -1;
    }
    if (cJSON_IsString(v) && mxl && (double)u8len(v->valuestring) > mxl->valuedouble) {
        snprintf(err, errlen, "%s: the string is longer than %g characters", where,
                 mxl->valuedouble);
        return -1;
    }
    return 0;
}

static int check_array(const cJSON *s, const cJSON *v, const char *where, char *err, size_t errlen)
{
    const cJSON *mxi = cJSON_GetObjectItemCaseSensitive(s, "maxItems");
    if (mxi && (double)cJSON_GetArraySize(v) > mxi->valuedouble) {
        snprintf(err, errlen, "%s: %d items, at most %g allowed", where, cJSON_GetArraySize(v),
                 mxi->valuedouble);
        return -1;
    }
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    int i = 0;
    for (const cJSON *e = v->child; items && e; e = e->next, i++) {
        char w[256];
        snprintf(w, sizeof w, "%s[%d]", where, i);
        if (schema_check(items, e, w, err, errlen)) return -1;
    }
    return 0;
}

static int unknown_member(const cJSON *props, const char *key, const char *where, char *err,
                          size_t errlen)
{
    buf list = BUF_INIT;
    for (const cJSON *p = props ? props->child : NULL; p; p = p->next)
        buf_printf(&list, "%s%s", list.len ? ", " : "", p->string);
    if (list.len)
        snprintf(err, errlen, "%s: unknown argument '%s' (expected: %s)", where, key, list.p);
    else
        snprintf(err, errlen, "%s: unknown argument '%s' (this takes no arguments)", where, key);
    buf_release(&list);
    return -1;
}

static int check_object(const cJSON *s, const cJSON *v, const char *where, char *err, size_t errlen)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
        if (!cJSON_GetObjectItemCaseSensitive(v, r->valuestring)) {
            snprintf(err, errlen, "%s: the argument '%s' is required", where, r->valuestring);
            return -1;
        }
    for (const cJSON *m = v->child; m; m = m->next) {
        const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
        if (!ps && cJSON_IsFalse(addl)) return unknown_member(props, m->string, where, err, errlen);
        if (!ps && cJSON_IsObject(addl)) ps = addl;
        if (!ps) continue;
        char w[256];
        snprintf(w, sizeof w, "%s.%s", where, m->string);
        if (schema_check(ps, m, w, err, errlen)) return -1;
    }
    return 0;
}

int schema_check(const cJSON *schema, const cJSON *v, const char *where, char *err, size_t errlen)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (cJSON_IsString(t) && !type_is(t->valuestring, v)) {
        snprintf(err, errlen, "%s: expected %s %s, got %s", where,
                 strchr("aeiou", t->valuestring[0]) ? "an" : "a", t->valuestring, type_of(v));
        return -1;
    }
    if (cJSON_IsObject(v)) return check_object(schema, v, where, err, errlen);
    if (cJSON_IsArray(v)) return check_array(schema, v, where, err, errlen);
    return check_scalar(schema, v, where, err, errlen);
}

static const char *const known[] = {"type",      "required", "properties", "additionalProperties",
                                    "enum",      "minimum",  "maximum",    "minLength",
                                    "maxLength", "items",    "maxItems",   "description",
                                    "default"};

bool schema_supported(const cJSON *schema, char *err, size_t errlen)
{
    if (!cJSON_IsObject(schema)) {
        snprintf(err, errlen, "a schema must be an object");
        return false;
    }
    for (const cJSON *k = schema->child; k; k = k->next) {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(known[i], k->string))
            i++;
        if (i == sizeof known / sizeof *known) {
            snprintf(err, errlen, "unsupported keyword '%s'", k->string);
            return false;
        }
    }
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    for (const cJSON *p = props ? props->child : NULL; p; p = p->next)
        if (!schema_supported(p, err, errlen)) return false;
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    if (items && !schema_supported(items, err, errlen)) return false;
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
    if (cJSON_IsObject(addl) && !schema_supported(addl, err, errlen)) return false;
    return true;
}
