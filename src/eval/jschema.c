/* jschema.c - a JSON Schema subset (see jschema.h).
 *
 * Design: a keyword table says which keywords exist and what each takes;
 * the check walks a schema against it once at load time, so validation
 * can assume a well-formed schema and stays a plain recursive walk.  The
 * first violation is reported, with its path: one clear reason per
 * failed item is what the results show. */
#include "eval/jschema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/buf.h"
#include "util/errf.h"

/* what a keyword takes */
typedef enum {
    K_TYPE,          /* a type name or a list of them */
    K_SCHEMAS,       /* a mapping of names to schemas */
    K_NAMES,         /* a list of names */
    K_SCHEMA,        /* a schema */
    K_BOOL_OR_SCHEMA,
    K_ARRAY,         /* a non-empty list of anything */
    K_ANY,
    K_NUMBER,
    K_COUNT,         /* a non-negative integer */
    K_NOTE,          /* an annotation: anything, checks nothing */
} ktype;

static const struct kw {
    const char *name;
    ktype t;
} keywords[] = {
    {"type", K_TYPE},
    {"properties", K_SCHEMAS},
    {"required", K_NAMES},
    {"additionalProperties", K_BOOL_OR_SCHEMA},
    {"items", K_SCHEMA},
    {"enum", K_ARRAY},
    {"const", K_ANY},
    {"minimum", K_NUMBER},
    {"maximum", K_NUMBER},
    {"exclusiveMinimum", K_NUMBER},
    {"exclusiveMaximum", K_NUMBER},
    {"minLength", K_COUNT},
    {"maxLength", K_COUNT},
    {"minItems", K_COUNT},
    {"maxItems", K_COUNT},
    {"title", K_NOTE},
    {"description", K_NOTE},
    {"$schema", K_NOTE},
    {"$id", K_NOTE},
    {"default", K_NOTE},
    {"examples", K_NOTE},
};

static const char *const type_names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

const char *json_type_name(const cJSON *v)
{
    if (cJSON_IsObject(v)) return "object";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsBool(v)) return "boolean";
    return "null";
}

static bool type_known(const char *t)
{
    for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++)
        if (!strcmp(t, type_names[i])) return true;
    return false;
}

static const struct kw *keyword(const char *name)
{
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        if (!strcmp(keywords[i].name, name)) return &keywords[i];
    return NULL;
}

static int check_at(const cJSON *s, buf *path, char *err, size_t errlen);

/* "properties.age" from a path with a leading '.' */
static const char *where(const buf *path)
{
    return path->len ? path->p + 1 : "the schema";
}

/* v, the value of keyword k; path ends with ".k", parent is its length
 * without (a mistake is said at the schema that holds the keyword) */
static int check_value(const struct kw *k, const cJSON *v, buf *path, size_t parent, char *err, size_t errlen)
{
    const cJSON *c;
    size_t at = path->len;
    int rc = 0;
    switch (k->t) {
    case K_TYPE:
        if (cJSON_IsString(v) && type_known(v->valuestring)) return 0;
        if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v)) break;
        cJSON_ArrayForEach(c, v) if (!cJSON_IsString(c) || !type_known(c->valuestring)) goto bad;
        return 0;
    case K_SCHEMAS:
        if (!cJSON_IsObject(v)) break;
        cJSON_ArrayForEach(c, v)
        {
            buf_printf(path, ".%s", c->string);
            rc = check_at(c, path, err, errlen);
            path->len = at, path->p[at] = '\0';
            if (rc) return rc;
        }
        return 0;
    case K_NAMES:
        if (!cJSON_IsArray(v)) break;
        cJSON_ArrayForEach(c, v) if (!cJSON_IsString(c)) goto bad;
        return 0;
    case K_BOOL_OR_SCHEMA:
    case K_SCHEMA: return check_at(v, path, err, errlen);
    case K_ARRAY:
        if (cJSON_IsArray(v) && cJSON_GetArraySize(v)) return 0;
        break;
    case K_NUMBER:
        if (cJSON_IsNumber(v)) return 0;
        break;
    case K_COUNT:
        if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble == floor(v->valuedouble)) return 0;
        break;
    case K_ANY:
    case K_NOTE: return 0;
    }
bad:
    path->len = parent;
    path->p[parent] = '\0';
    return errf_ret(-1, err, errlen, "%s: '%s' takes %s, found %s", where(path), k->name,
                    k->t == K_TYPE      ? "a type name or a list of them (object, array, string, number, integer, "
                                          "boolean, null)"
                    : k->t == K_SCHEMAS ? "a mapping of property names to schemas"
                    : k->t == K_NAMES   ? "a list of property names"
                    : k->t == K_ARRAY   ? "a non-empty list"
                    : k->t == K_NUMBER  ? "a number"
                                        : "a non-negative integer",
                    json_type_name(v));
}

static int check_at(const cJSON *s, buf *path, char *err, size_t errlen)
{
    if (cJSON_IsBool(s)) return 0;
    if (!cJSON_IsObject(s))
        return errf_ret(-1, err, errlen, "%s: a schema is a mapping (or true/false), found %s", where(path),
                        json_type_name(s));
    const cJSON *c;
    cJSON_ArrayForEach(c, s)
    {
        const struct kw *k = keyword(c->string);
        if (!k)
            return errf_ret(-1, err, errlen,
                            "%s: keyword '%s' is not supported (supported: type, properties, required, "
                            "additionalProperties, items, enum, const, minimum, maximum, exclusiveMinimum, "
                            "exclusiveMaximum, minLength, maxLength, minItems, maxItems)",
                            where(path), c->string);
        size_t at = path->len;
        buf_printf(path, ".%s", c->string);
        int rc = check_value(k, c, path, at, err, errlen);
        path->len = at, path->p[at] = '\0';
        if (rc) return rc;
    }
    return 0;
}

int jschema_check(const cJSON *schema, char *err, size_t errlen)
{
    buf path = BUF_INIT;
    int rc = check_at(schema, &path, err, errlen);
    buf_release(&path);
    return rc;
}

bool json_equal(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) return a->valuedouble == b->valuedouble;
    if (cJSON_IsBool(a) && cJSON_IsBool(b)) return cJSON_IsTrue(a) == cJSON_IsTrue(b);
    if (strcmp(json_type_name(a), json_type_name(b))) return false;
    if (cJSON_IsString(a)) return !strcmp(a->valuestring, b->valuestring);
    if (cJSON_IsNull(a)) return true;
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return false;
    const cJSON *x, *y = b->child;
    cJSON_ArrayForEach(x, a)
    {
        const cJSON *other = cJSON_IsObject(a) ? cJSON_GetObjectItemCaseSensitive(b, x->string) : y;
        if (!other || !json_equal(x, other)) return false;
        y = y ? y->next : NULL;
    }
    return true;
}

static bool type_is(const cJSON *v, const char *t)
{
    if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    return !strcmp(t, json_type_name(v));
}

static int validate_at(const cJSON *s, const cJSON *v, buf *path, char *err, size_t errlen);

static int bad(char *err, size_t errlen, const buf *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bad(char *err, size_t errlen, const buf *path, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return errf_ret(-1, err, errlen, "%s: %s", path->p, what);
}

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* the value's JSON text, shortened, for messages */
static void show(char *out, size_t n, const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);
    snprintf(out, n, "%s", t ? t : "?");
    if (t && strlen(t) >= n && n > 4) memcpy(out + n - 4, "...", 4);
    cJSON_free(t);
}

static int check_type(const cJSON *t, const cJSON *v, const buf *path, char *err, size_t errlen)
{
    if (cJSON_IsString(t)) {
        if (type_is(v, t->valuestring)) return 0;
        return bad(err, errlen, path, "expected %s, found %s", t->valuestring, json_type_name(v));
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, t) if (type_is(v, c->valuestring)) return 0;
    return bad(err, errlen, path, "%s is none of the types allowed", json_type_name(v));
}

static int check_number(const cJSON *s, double x, const buf *path, char *err, size_t errlen)
{
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "minimum")) && x < k->valuedouble)
        return bad(err, errlen, path, "%.15g is below the minimum %.15g", x, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "maximum")) && x > k->valuedouble)
        return bad(err, errlen, path, "%.15g is above the maximum %.15g", x, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum")) && x <= k->valuedouble)
        return bad(err, errlen, path, "%.15g is not above %.15g", x, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum")) && x >= k->valuedouble)
        return bad(err, errlen, path, "%.15g is not below %.15g", x, k->valuedouble);
    return 0;
}

/* count against min/max keywords: "a string of 3 characters" */
static int check_count(const cJSON *s, double n, const char *mink, const char *maxk, const char *what,
                       const buf *path, char *err, size_t errlen)
{
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, mink)) && n < k->valuedouble)
        return bad(err, errlen, path, "%.0f %s, fewer than %.0f", n, what, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, maxk)) && n > k->valuedouble)
        return bad(err, errlen, path, "%.0f %s, more than %.0f", n, what, k->valuedouble);
    return 0;
}

static int check_object(const cJSON *s, const cJSON *v, buf *path, char *err, size_t errlen)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties"), *c;
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    cJSON_ArrayForEach(c, req) if (!cJSON_GetObjectItemCaseSensitive(v, c->valuestring))
        return bad(err, errlen, path, "required property '%s' is missing", c->valuestring);
    size_t at = path->len;
    cJSON_ArrayForEach(c, v)
    {
        const cJSON *sub = props ? cJSON_GetObjectItemCaseSensitive(props, c->string) : NULL;
        if (!sub && extra && cJSON_IsFalse(extra))
            return bad(err, errlen, path, "property '%s' is not allowed (additionalProperties is false)",
                       c->string);
        if (!sub) sub = extra;
        if (!sub) continue;
        buf_printf(path, ".%s", c->string);
        int rc = validate_at(sub, c, path, err, errlen);
        path->len = at, path->p[at] = '\0';
        if (rc) return rc;
    }
    return 0;
}

static int check_array(const cJSON *s, const cJSON *v, buf *path, char *err, size_t errlen)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items"), *c;
    if (check_count(s, cJSON_GetArraySize(v), "minItems", "maxItems", "items", path, err, errlen)) return -1;
    if (!items) return 0;
    size_t at = path->len, i = 0;
    cJSON_ArrayForEach(c, v)
    {
        buf_printf(path, "[%zu]", i++);
        int rc = validate_at(items, c, path, err, errlen);
        path->len = at, path->p[at] = '\0';
        if (rc) return rc;
    }
    return 0;
}

static int validate_at(const cJSON *s, const cJSON *v, buf *path, char *err, size_t errlen)
{
    char shown[80];
    if (cJSON_IsBool(s)) return cJSON_IsTrue(s) ? 0 : bad(err, errlen, path, "no value is allowed here");
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "type")) && check_type(k, v, path, err, errlen)) return -1;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "const")) && !json_equal(k, v)) {
        show(shown, sizeof shown, k);
        return bad(err, errlen, path, "expected the value %s", shown);
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
        const cJSON *c;
        bool any = false;
        cJSON_ArrayForEach(c, k) any = any || json_equal(c, v);
        show(shown, sizeof shown, v);
        if (!any) return bad(err, errlen, path, "%s is not one of the enum's values", shown);
    }
    if (cJSON_IsNumber(v)) return check_number(s, v->valuedouble, path, err, errlen);
    if (cJSON_IsString(v))
        return check_count(s, (double)utf8_chars(v->valuestring), "minLength", "maxLength", "characters", path,
                           err, errlen);
    if (cJSON_IsObject(v)) return check_object(s, v, path, err, errlen);
    if (cJSON_IsArray(v)) return check_array(s, v, path, err, errlen);
    return 0;
}

int jschema_validate(const cJSON *schema, const cJSON *value, char *err, size_t errlen)
{
    buf path = BUF_INIT;
    buf_adds(&path, "$");
    int rc = validate_at(schema, value, &path, err, errlen);
    buf_release(&path);
    return rc;
}
