/* schema.c - the field-table engine (see schema.h).
 *
 * Design: values are parsed from ynodes, and defaults are parsed from
 * their YAML text by the very same code, so a default can never be a
 * value the parser would reject, and `config show` prints both alike. */
#include "config/schema.h"
#include "util/dur.h"
#include "util/buf.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AT(obj, off, type) ((type *)((char *)(obj) + (off)))
#define CAT(obj, off, type) ((const type *)((const char *)(obj) + (off)))

static void vdiag(schema_ctx *c, diag_level lv, const ynode *n, const char *fmt, va_list ap)
{
    buf b = BUF_INIT;
    if (c->subject[0]) buf_printf(&b, "%s: ", c->subject);
    buf_vprintf(&b, fmt, ap);
    diags_add(c->d, lv, ypos(c->file, n), "%s", b.p);
    buf_release(&b);
}

void schema_error(schema_ctx *c, const ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(c, DIAG_ERROR, n, fmt, ap);
    va_end(ap);
    c->failed = true;
}

void schema_warn(schema_ctx *c, const ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(c, DIAG_WARNING, n, fmt, ap);
    va_end(ap);
}

bool text_has_control(const char *s, bool allow_newlines)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (allow_newlines && (*p == '\n' || *p == '\t')) continue;
        if (*p < 0x20 || *p == 0x7f) return true;
    }
    return false;
}

/* Optimal string alignment distance: a transposition ("prot") costs one,
 * as it does for a typist. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            char x = (char)tolower((unsigned char)a[i - 1]), y = (char)tolower((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (x != y);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && x == tolower((unsigned char)b[j - 2]) && a[i - 2] && tolower((unsigned char)a[i - 2]) == y &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *schema_did_you_mean(const char *key, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bestd = 99;
    size_t kl = strlen(key);
    size_t limit = kl <= 4 ? 1 : kl <= 8 ? 2 : 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(key, cands[i]);
        if (d < bestd) {
            bestd = d;
            best = cands[i];
        }
    }
    return bestd <= limit ? best : NULL;
}

char *expand_home(const char *s)
{
    const char *home = getenv("HOME");
    if (s[0] == '~' && (s[1] == '/' || !s[1]) && home && *home) return xasprintf("%s%s", home, s + 1);
    return xstrdup(s);
}

char *expand_vars(const char *s)
{
    buf b = BUF_INIT;
    for (const char *p = s; *p;) {
        if (*p != '$') {
            buf_addc(&b, *p++);
            continue;
        }
        const char *name = p + 1, *end;
        bool brace = *name == '{';
        if (brace) name++;
        for (end = name; isalnum((unsigned char)*end) || *end == '_'; end++) {}
        if (end == name || (brace && *end != '}')) {
            buf_addc(&b, *p++);
            continue;
        }
        char *nm = xstrndup(name, (size_t)(end - name));
        const char *val = getenv(nm);
        free(nm);
        const char *after = brace ? end + 1 : end;
        if (val)
            buf_adds(&b, val);
        else
            buf_add(&b, p, (size_t)(after - p));
        p = after;
    }
    return buf_detach(&b);
}

int parse_int64(const char *s, int64_t *out)
{
    char clean[64];
    size_t j = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '_') continue; /* YAML 1.1: 1_000 */
        if (j + 1 >= sizeof clean) return -1;
        clean[j++] = *p;
    }
    clean[j] = '\0';
    if (!j) return -1;
    const char *q = clean;
    if (*q == '+' || *q == '-') q++;
    if (!*q) return -1;
    for (const char *p = q; *p; p++)
        if (!isdigit((unsigned char)*p)) return -1;
    errno = 0;
    long long v = strtoll(clean, NULL, 10);
    if (errno) return -1;
    *out = v;
    return 0;
}

int parse_duration_ms(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v)) return -1;
    while (*end == ' ') end++;
    double mult;
    if (!*end || !strcmp(end, "s"))
        mult = 1000;
    else if (!strcmp(end, "ms"))
        mult = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        mult = 60000;
    else if (!strcmp(end, "h"))
        mult = 3600000;
    else if (!strcmp(end, "d"))
        mult = 86400000;
    else
        return -1;
    double ms = v * mult;
    if (ms > 1e15) return -1;
    *out = (int64_t)llround(ms);
    return 0;
}

static bool is_num_text(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return false;
    *out = v;
    return true;
}

const char *ftype_name(const field *f)
{
    switch (f->type) {
    case F_STR: return "string";
    case F_INT: return "integer";
    case F_FLOAT: return "number";
    case F_BOOL: return "boolean";
    case F_TRI: return "boolean or auto";
    case F_DURATION: return "duration";
    case F_ENUM: return "one of";
    case F_STRV: return "list of strings";
    case F_ENV: return "mapping of strings";
    case F_SECTION: return "mapping";
    case F_CUSTOM: return "see meaning";
    }
    return "?";
}

/* {0, 0} (a table entry that names no range) means unbounded */
static bool has_range(const field *f)
{
    return !(f->min == 0 && f->max == 0);
}

/* Only on the error paths: %.15g costs a few microseconds a call, and
 * every default of every CLI call went through here (docs/startup.md). */
static const char *range_text(char *out, size_t n, const field *f)
{
    if (!has_range(f))
        out[0] = '\0';
    else if (f->type == F_DURATION)
        snprintf(out, n, " in %.15gs..%.15gs", f->min / 1000, f->max / 1000);
    else
        snprintf(out, n, " in %.15g..%.15g", f->min, f->max);
    return out;
}

/* "'text'" for a scalar, "a list" / "a mapping" otherwise: three %s */
#define FOUND(n) (n)->kind == Y_SCALAR ? "'" : "", (n)->kind == Y_SCALAR ? (n)->s : ykind_name(n), \
                 (n)->kind == Y_SCALAR ? "'" : ""

static void enum_expect(buf *b, const char *const *names)
{
    for (size_t i = 0; names[i]; i++) buf_printf(b, "%s%s", i ? ", " : "", names[i]);
}

static void parse_str_into(schema_ctx *c, const field *f, const ynode *n, char **dst)
{
    if (n->kind != Y_SCALAR) {
        schema_error(c, n, "%s: expected a string, found %s", f->key, ykind_name(n));
        return;
    }
    if (text_has_control(n->s, f->flags & FL_TEXT)) {
        schema_error(c, n, "%s: control character in string (not allowed in anything that can reach an argv, a unit file or a log)",
                     f->key);
        return;
    }
    char *v = xstrdup(n->s);
    if (f->flags & FL_ENVEXP) {
        char *e = expand_vars(v);
        free(v);
        v = e;
    }
    if (f->flags & FL_PATH) {
        char *e = expand_home(v);
        free(v);
        v = e;
    }
    free(*dst);
    *dst = v;
}

/* an integer, or -1 for "auto" where the key takes it */
static void parse_v_int(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    char rng[64]; /* the range, written only when an error needs it */
    int64_t v;
    if (n->kind == Y_SCALAR && (f->flags & FL_NULLABLE_INT) && !strcmp(n->s, "auto")) {
        *AT(obj, f->off, int64_t) = -1;
        return;
    }
    if (n->kind != Y_SCALAR || parse_int64(n->s, &v)) {
        schema_error(c, n, "%s: expected an integer%s, found %s%s%s", f->key, range_text(rng, sizeof rng, f),
                     FOUND(n));
        return;
    }
    if (has_range(f) && (v < f->min || v > f->max)) {
        schema_error(c, n, "%s: %s is out of range: expected an integer%s", f->key, n->s,
                     range_text(rng, sizeof rng, f));
        return;
    }
    *AT(obj, f->off, int64_t) = v;
}

/* a number */
static void parse_v_float(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    char rng[64]; /* the range, written only when an error needs it */
    double v;
    if (n->kind != Y_SCALAR || !is_num_text(n->s, &v)) {
        schema_error(c, n, "%s: expected a number%s, found %s%s%s", f->key, range_text(rng, sizeof rng, f),
                     FOUND(n));
        return;
    }
    if (has_range(f) && (v < f->min || v > f->max)) {
        schema_error(c, n, "%s: %s is out of range: expected a number%s", f->key, n->s,
                     range_text(rng, sizeof rng, f));
        return;
    }
    *AT(obj, f->off, double) = v;
}

/* true or false (and pydantic's lax 1/0), or auto for a tri-state */
static void parse_v_bool(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    int b = yscalar_bool(n);
    if (b < 0 && n->kind == Y_SCALAR) {
        /* pydantic's lax mode, which the Python project relied on */
        if (!strcmp(n->s, "true") || !strcmp(n->s, "1")) b = 1;
        else if (!strcmp(n->s, "false") || !strcmp(n->s, "0")) b = 0;
        else if (f->type == F_TRI && !strcmp(n->s, "auto")) {
            *AT(obj, f->off, tri) = TRI_UNSET;
            return;
        }
    }
    if (b < 0) {
        schema_error(c, n, "%s: expected %s, found %s%s%s", f->key,
                     f->type == F_TRI ? "true, false or auto" : "true or false (yes/no/on/off)", FOUND(n));
        return;
    }
    if (f->type == F_BOOL)
        *AT(obj, f->off, bool) = b;
    else
        *AT(obj, f->off, tri) = b ? TRI_ON : TRI_OFF;
}

/* a duration: seconds, or a number with ms, s, m or h */
static void parse_v_duration(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    char rng[64]; /* the range, written only when an error needs it */
    int64_t v;
    if (n->kind != Y_SCALAR || parse_duration_ms(n->s, &v)) {
        schema_error(c, n, "%s: expected a duration (seconds, or a number with ms, s, m or h)%s, found %s%s%s",
                     f->key, range_text(rng, sizeof rng, f), FOUND(n));
        return;
    }
    if (has_range(f) && (v < f->min || v > f->max)) {
        schema_error(c, n, "%s: %s is out of range: expected a duration%s", f->key, n->s,
                     range_text(rng, sizeof rng, f));
        return;
    }
    *AT(obj, f->off, int64_t) = v;
}

/* one of the names (did-you-mean on a near miss) */
static void parse_v_enum(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    if (n->kind == Y_SCALAR) {
        for (int i = 0; f->names[i]; i++) {
            if (!strcmp(n->s, f->names[i])) {
                *AT(obj, f->off, int) = i;
                return;
            }
        }
    }
    buf b = BUF_INIT;
    enum_expect(&b, f->names);
    size_t cnt = 0;
    while (f->names[cnt]) cnt++;
    const char *dym = n->kind == Y_SCALAR ? schema_did_you_mean(n->s, f->names, cnt) : NULL;
    schema_error(c, n, "%s: expected one of %s, found %s%s%s%s%s%s", f->key, b.p, FOUND(n),
                 dym ? " (did you mean '" : "", dym ? dym : "", dym ? "'?)" : "");
    buf_release(&b);
}

/* a list of strings */
static void parse_v_strv(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    strv *sv = AT(obj, f->off, strv);
    if (n->kind != Y_SEQ) {
        schema_error(c, n, "%s: expected a list of strings, found %s", f->key, ykind_name(n));
        return;
    }
    strv_release(sv);
    for (size_t i = 0; i < n->n; i++) {
        const ynode *it = n->items[i];
        if (it->kind != Y_SCALAR || yscalar_is_null(it)) {
            schema_error(c, it, "%s[%zu]: expected a string, found %s", f->key, i, ykind_name(it));
            continue;
        }
        if (text_has_control(it->s, false)) {
            schema_error(c, it, "%s[%zu]: control character in string", f->key, i);
            continue;
        }
        strv_push(sv, it->s);
    }
}

/* a mapping of environment variable names to strings */
static void parse_v_env(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    kvlist *kl = AT(obj, f->off, kvlist);
    if (n->kind != Y_MAP) {
        schema_error(c, n, "%s: expected a mapping of NAME: value, found %s", f->key, ykind_name(n));
        return;
    }
    for (size_t i = 0; i < n->npairs; i++) {
        const ynode *k = n->pairs[i].key, *v = n->pairs[i].val;
        bool okname = (isalpha((unsigned char)k->s[0]) || k->s[0] == '_');
        for (const char *p = k->s; *p && okname; p++)
            if (!isalnum((unsigned char)*p) && *p != '_') okname = false;
        if (!okname) {
            schema_error(c, k, "%s: '%s' is not a valid environment variable name", f->key, k->s);
            continue;
        }
        if (v->kind != Y_SCALAR) {
            schema_error(c, v, "%s.%s: expected a string, found %s", f->key, k->s, ykind_name(v));
            continue;
        }
        if (text_has_control(v->s, false)) {
            schema_error(c, v, "%s.%s: control character in string", f->key, k->s);
            continue;
        }
        const char *val = v->s;
        int b = yscalar_bool(v);
        if (b >= 0) val = b ? "true" : "false"; /* what PyYAML + str() gives, lowercased */
        kvlist_set(kl, k->s, yscalar_is_null(v) ? "" : val, ypos(c->file, k));
    }
}

/* a nested mapping, parsed with the section's own table */
static void parse_v_section(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    if (n->kind != Y_MAP) {
        schema_error(c, n, "%s: expected a mapping, found %s", f->key, ykind_name(n));
        return;
    }
    char saved[sizeof c->subject];
    memcpy(saved, c->subject, sizeof saved);
    size_t l = strlen(c->subject);
    snprintf(c->subject + l, sizeof c->subject - l, "%s%s", l ? ": " : "", f->key);
    schema_parse(c, f->sub, n, obj);
    memcpy(c->subject, saved, sizeof saved);
}

void schema_parse_value(schema_ctx *c, const field *f, const ynode *n, void *obj)
{
    if (f->flags & FL_IGNORED)
        schema_warn(c, n, "key '%s' is accepted but gpumod does not act on it%s%s", f->key,
                    f->doc ? ": " : "", f->doc ? f->doc : "");

    if (f->type != F_CUSTOM && yscalar_is_null(n)) {
        /* null: keep the default (Python's Optional[...] = None) */
        if ((f->type == F_INT || f->type == F_DURATION) && (f->flags & FL_NULLABLE_INT))
            *AT(obj, f->off, int64_t) = -1;
        return;
    }

    switch (f->type) {
    case F_STR: parse_str_into(c, f, n, AT(obj, f->off, char *)); break;
    case F_INT: parse_v_int(c, f, n, obj); break;
    case F_FLOAT: parse_v_float(c, f, n, obj); break;
    case F_BOOL:
    case F_TRI: parse_v_bool(c, f, n, obj); break;
    case F_DURATION: parse_v_duration(c, f, n, obj); break;
    case F_ENUM: parse_v_enum(c, f, n, obj); break;
    case F_STRV: parse_v_strv(c, f, n, obj); break;
    case F_ENV: parse_v_env(c, f, n, obj); break;
    case F_SECTION: parse_v_section(c, f, n, obj); break;
    case F_CUSTOM: f->parse(c, f, n, obj); break;
    }
}

static const field *find_field(const field *tab, const char *key)
{
    for (const field *f = tab; f->key; f++)
        if (!strcmp(f->key, key)) return f;
    return NULL;
}

void schema_parse(schema_ctx *c, const field *tab, const ynode *map, void *obj)
{
    if (!map || map->kind != Y_MAP) {
        schema_error(c, map, "expected a mapping of keys, found %s", ykind_name(map));
        return;
    }
    for (size_t i = 0; i < map->npairs; i++) {
        const ynode *k = map->pairs[i].key;
        const field *f = find_field(tab, k->s);
        if (!f) {
            const char *cands[128];
            size_t nc = 0;
            for (const field *g = tab; g->key && nc < 128; g++) cands[nc++] = g->key;
            const char *dym = schema_did_you_mean(k->s, cands, nc);
            if (dym)
                schema_error(c, k, "unknown key '%s' (did you mean '%s'?)", k->s, dym);
            else
                schema_error(c, k, "unknown key '%s'", k->s);
            continue;
        }
        schema_parse_value(c, f, map->pairs[i].val, obj);
    }
    for (const field *f = tab; f->key; f++) {
        if (!(f->flags & FL_REQUIRED)) continue;
        const ynode *v = ymap_get(map, f->key);
        if (!v || yscalar_is_null(v)) schema_error(c, map, "required key '%s' is missing", f->key);
    }
}

static void default_one(const field *f, void *obj)
{
    if (f->type == F_SECTION) {
        schema_defaults(f->sub, obj);
        return;
    }
    if (f->type == F_TRI && !f->deflt) *AT(obj, f->off, tri) = TRI_UNSET;
    if (!f->deflt || f->type == F_CUSTOM) return;
    /* Defaults are plain scalars: parse them as the scalar node a YAML file
     * would give, without running libyaml (every CLI call pays this). */
    diags d = {0};
    schema_ctx c = {"<default>", &d, "", false};
    ynode n = {.kind = Y_SCALAR, .line = 1, .col = 1, .plain = true, .s = (char *)f->deflt,
               .len = strlen(f->deflt)};
    field g = *f;
    g.flags &= ~(unsigned)FL_IGNORED;
    schema_parse_value(&c, &g, &n, obj);
    if (d.errors) {
        /* A default the parser rejects is a programming error. */
        fprintf(stderr, "gpumod: bad default for '%s': %s\n", f->key, d.v[0].msg);
        abort();
    }
    diags_release(&d);
}

void schema_defaults(const field *tab, void *obj)
{
    for (const field *f = tab; f->key; f++) default_one(f, obj);
}

void schema_release(const field *tab, void *obj)
{
    for (const field *f = tab; f->key; f++) {
        switch (f->type) {
        case F_STR:
            free(*AT(obj, f->off, char *));
            *AT(obj, f->off, char *) = NULL;
            break;
        case F_STRV: strv_release(AT(obj, f->off, strv)); break;
        case F_ENV: kvlist_release(AT(obj, f->off, kvlist)); break;
        case F_SECTION: schema_release(f->sub, obj); break;
        default: break;
        }
    }
}

static bool plain_safe(const char *s)
{
    if (!*s) return false;
    if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0])) return false;
    if (strstr(s, ": ") || strstr(s, " #") || s[strlen(s) - 1] == ' ' || s[strlen(s) - 1] == ':') return false;
    if (text_has_control(s, false)) return false;
    static const char *const reserved[] = {"yes", "no", "on", "off", "true", "false", "null", "~", NULL};
    for (size_t i = 0; reserved[i]; i++)
        if (!strcasecmp(s, reserved[i])) return false;
    double d;
    if (is_num_text(s, &d)) return false;
    return true;
}

static void text_str(buf *out, const char *s)
{
    if (!s)
        buf_adds(out, "null");
    else if (plain_safe(s))
        buf_adds(out, s);
    else
        buf_json_str(out, s); /* a JSON string is a valid YAML double-quoted scalar */
}

void schema_show_strv(buf *out, const strv *v, bool json)
{
    buf_addc(out, '[');
    for (size_t i = 0; i < v->n; i++) {
        if (i) buf_adds(out, json ? "," : ", ");
        buf_json_str(out, v->v[i]);
    }
    buf_addc(out, ']');
}

void schema_show_kvlist(buf *out, const kvlist *kl, bool json, int indent)
{
    if (json || !kl->n) {
        buf_addc(out, '{');
        for (size_t i = 0; i < kl->n; i++) {
            if (i) buf_addc(out, ',');
            buf_json_str(out, kl->v[i].key);
            buf_addc(out, ':');
            buf_json_str(out, kl->v[i].val);
        }
        buf_addc(out, '}');
        return;
    }
    for (size_t i = 0; i < kl->n; i++) {
        buf_printf(out, "\n%*s%s: ", indent + 2, "", kl->v[i].key);
        text_str(out, kl->v[i].val);
    }
}

static void show_value_text(buf *out, const field *f, const void *obj, int indent)
{
    switch (f->type) {
    case F_STR: text_str(out, *CAT(obj, f->off, char *)); break;
    case F_INT: {
        int64_t v = *CAT(obj, f->off, int64_t);
        if (v < 0 && (f->flags & FL_NULLABLE_INT))
            buf_adds(out, "null");
        else
            buf_printf(out, "%lld", (long long)v);
        break;
    }
    case F_FLOAT: buf_printf(out, "%g", *CAT(obj, f->off, double)); break;
    case F_BOOL: buf_adds(out, *CAT(obj, f->off, bool) ? "true" : "false"); break;
    case F_TRI: {
        tri t = *CAT(obj, f->off, tri);
        buf_adds(out, t == TRI_UNSET ? "auto" : t ? "true" : "false");
        break;
    }
    case F_DURATION: dur_exact(out, *CAT(obj, f->off, int64_t)); break;
    case F_ENUM: {
        int v = *CAT(obj, f->off, int);
        buf_adds(out, v < 0 ? "null" : f->names[v]);
        break;
    }
    case F_STRV: schema_show_strv(out, CAT(obj, f->off, strv), false); break;
    case F_ENV: schema_show_kvlist(out, CAT(obj, f->off, kvlist), false, indent); break;
    case F_SECTION:
        buf_addc(out, '\n');
        schema_show_text(out, f->sub, obj, indent + 2);
        if (out->len && out->p[out->len - 1] == '\n') out->len--, out->p[out->len] = '\0';
        break;
    case F_CUSTOM:
        if (f->show) f->show(out, f, obj, false);
        break;
    }
}

void schema_show_text(buf *out, const field *tab, const void *obj, int indent)
{
    for (const field *f = tab; f->key; f++) {
        buf_printf(out, "%*s%s:", indent, "", f->key);
        size_t at = out->len;
        buf_addc(out, ' ');
        show_value_text(out, f, obj, indent);
        if (out->len > at + 1 && out->p[at + 1] == '\n') { /* a nested block: no trailing blank */
            memmove(out->p + at, out->p + at + 1, out->len - at);
            out->len--;
        }
        buf_addc(out, '\n');
    }
}

static void show_value_json(buf *out, const field *f, const void *obj)
{
    switch (f->type) {
    case F_STR: {
        const char *s = *CAT(obj, f->off, char *);
        if (s)
            buf_json_str(out, s);
        else
            buf_adds(out, "null");
        break;
    }
    case F_INT: {
        int64_t v = *CAT(obj, f->off, int64_t);
        if (v < 0 && (f->flags & FL_NULLABLE_INT))
            buf_adds(out, "null");
        else
            buf_printf(out, "%lld", (long long)v);
        break;
    }
    case F_FLOAT: buf_printf(out, "%.15g", *CAT(obj, f->off, double)); break;
    case F_BOOL: buf_adds(out, *CAT(obj, f->off, bool) ? "true" : "false"); break;
    case F_TRI: {
        tri t = *CAT(obj, f->off, tri);
        buf_adds(out, t == TRI_UNSET ? "null" : t ? "true" : "false");
        break;
    }
    case F_DURATION: {
        int64_t v = *CAT(obj, f->off, int64_t);
        if (v < 0)
            buf_adds(out, "null");
        else
            buf_printf(out, "%lld", (long long)v);
        break;
    }
    case F_ENUM: {
        int v = *CAT(obj, f->off, int);
        if (v < 0)
            buf_adds(out, "null");
        else
            buf_json_str(out, f->names[v]);
        break;
    }
    case F_STRV: schema_show_strv(out, CAT(obj, f->off, strv), true); break;
    case F_ENV: schema_show_kvlist(out, CAT(obj, f->off, kvlist), true, 0); break;
    case F_SECTION: schema_show_json(out, f->sub, obj); break;
    case F_CUSTOM:
        if (f->show)
            f->show(out, f, obj, true);
        else
            buf_adds(out, "null");
        break;
    }
}

void schema_show_json(buf *out, const field *tab, const void *obj)
{
    buf_addc(out, '{');
    for (const field *f = tab; f->key; f++) {
        if (f != tab) buf_addc(out, ',');
        /* durations are *_ms in JSON */
        if (f->type == F_DURATION) {
            char k[96];
            snprintf(k, sizeof k, "%s_ms", f->key);
            buf_json_str(out, k);
        } else {
            buf_json_str(out, f->key);
        }
        buf_addc(out, ':');
        show_value_json(out, f, obj);
    }
    buf_addc(out, '}');
}

void schema_md_text(buf *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|') buf_addc(out, '\\');
        buf_addc(out, *s);
    }
}

void schema_doc_markdown(buf *out, const field *tab, const char *prefix)
{
    for (const field *f = tab; f->key; f++) {
        char key[128];
        snprintf(key, sizeof key, "%s%s", prefix, f->key);
        if (f->type == F_SECTION) {
            char p2[160];
            snprintf(p2, sizeof p2, "%s.", key);
            schema_doc_markdown(out, f->sub, p2);
            continue;
        }
        char rng[64];
        range_text(rng, sizeof rng, f);
        buf_printf(out, "| `%s` | %s", key, ftype_name(f));
        if (f->type == F_ENUM) {
            buf_addc(out, ' ');
            for (size_t i = 0; f->names[i]; i++) buf_printf(out, "%s`%s`", i ? ", " : "", f->names[i]);
        }
        buf_printf(out, "%s | %s | %s", rng, f->deflt ? f->deflt : (f->flags & FL_REQUIRED) ? "required" : "—",
                   (f->flags & FL_IGNORED) ? "**accepted, not acted on (warning).** " : "");
        schema_md_text(out, f->doc);
        buf_adds(out, " |\n");
    }
}
