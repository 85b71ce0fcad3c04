/* space.c (tune) - the menu and its variants (space.h). */
#include "tune/space.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool key_ok(const char *k, bool env)
{
    if (!*k || (!isalpha((unsigned char)*k) && *k != '_')) return false;
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') return false;
    return env || strlen(k) <= 64;
}

static bool value_ok(const char *v)
{
    if (!*v || strlen(v) > 256) return false;
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return false;
    return true;
}

/* the values of "a,b,c" into d->values; -1 with err on an empty or
 * repeated one */
static int split_values(tune_dim *d, const char *list, const char *arg, char *err, size_t errlen)
{
    char *tmp = xstrdup(list), *save = NULL;
    int rc = 0;
    for (char *v = strtok_r(tmp, ",", &save); v && !rc; v = strtok_r(NULL, ",", &save)) {
        if (!value_ok(v)) {
            snprintf(err, errlen, "'%s': the value '%s' must be 1 to 256 printable characters", arg, v);
            rc = -1;
        } else if (strv_find(&d->values, v) >= 0) {
            snprintf(err, errlen, "'%s': the value '%s' is given twice", arg, v);
            rc = -1;
        } else if (d->values.n == TUNE_MAX_VALUES) {
            snprintf(err, errlen, "'%s': more than %d values", arg, TUNE_MAX_VALUES);
            rc = -1;
        } else {
            strv_push(&d->values, v);
        }
    }
    free(tmp);
    if (!rc && (!d->values.n || list[strlen(list) - 1] == ',' || strstr(list, ",,") || list[0] == ',')) {
        snprintf(err, errlen, "'%s': expected KEY=V1,V2,... with no empty value", arg);
        rc = -1;
    }
    return rc;
}

int space_add(tune_space *s, const char *arg, bool env, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        snprintf(err, errlen, "'%s': expected %s=V1,V2,...", arg, env ? "NAME" : "KEY");
        return -1;
    }
    char *key = xstrndup(arg, (size_t)(eq - arg));
    int rc = -1;
    if (!key_ok(key, env)) {
        snprintf(err, errlen, "'%s': '%s' is not a %s (letters, digits and _, not starting with a digit)", arg,
                 key, env ? "variable name" : "preset key");
    } else if (s->n == TUNE_MAX_DIMS) {
        snprintf(err, errlen, "'%s': more than %d dimensions", arg, TUNE_MAX_DIMS);
    } else {
        rc = 0;
        for (size_t i = 0; i < s->n && !rc; i++) {
            if (s->dims[i].env == env && !strcmp(s->dims[i].key, key)) {
                snprintf(err, errlen, "'%s': %s '%s' is given twice (give its values once, V1,V2,...)", arg,
                         env ? "variable" : "key", key);
                rc = -1;
            }
        }
    }
    if (rc) {
        free(key);
        return -1;
    }
    tune_dim *d = &s->dims[s->n];
    memset(d, 0, sizeof *d);
    d->key = key;
    d->env = env;
    if (split_values(d, eq + 1, arg, err, errlen)) {
        free(d->key);
        strv_release(&d->values);
        return -1;
    }
    s->n++;
    return 0;
}

void space_release(tune_space *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->dims[i].key);
        strv_release(&s->dims[i].values);
    }
    s->n = 0;
}

tune_variant variant_base(void)
{
    tune_variant v;
    for (size_t i = 0; i < TUNE_MAX_DIMS; i++) v.idx[i] = -1;
    return v;
}

bool variant_eq(const tune_variant *a, const tune_variant *b)
{
    return !memcmp(a->idx, b->idx, sizeof a->idx);
}

bool variant_is_base(const tune_variant *v)
{
    for (size_t i = 0; i < TUNE_MAX_DIMS; i++)
        if (v->idx[i] >= 0) return false;
    return true;
}

size_t variant_changes(const tune_space *s, const tune_variant *v)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) n += v->idx[i] >= 0;
    return n;
}

static const char *val_of(const tune_space *s, const tune_variant *v, size_t i)
{
    return s->dims[i].values.v[v->idx[i]];
}

void variant_label(const tune_space *s, const tune_variant *v, buf *var, buf *val)
{
    if (variant_is_base(v)) {
        buf_adds(var, "baseline");
        buf_adds(val, "preset");
        return;
    }
    bool first = true;
    for (size_t i = 0; i < s->n; i++) {
        if (v->idx[i] < 0) continue;
        buf_printf(var, "%s%s%s", first ? "" : "+", s->dims[i].env ? "env." : "", s->dims[i].key);
        buf_printf(val, "%s%s", first ? "" : "+", val_of(s, v, i));
        first = false;
    }
}

/* a menu value as JSON: an integer or a finite number as a number,
 * true/false as a boolean, anything else a string */
static void json_value(buf *out, const char *t)
{
    char *end;
    double d = strtod(t, &end);
    bool num = *t && !*end && isfinite(d) && !isspace((unsigned char)*t) && strncasecmp(t, "0x", 2) &&
               !strchr(t, 'n') && !strchr(t, 'N');
    if (num)
        buf_adds(out, t);
    else if (!strcmp(t, "true") || !strcmp(t, "false"))
        buf_adds(out, t);
    else
        buf_json_str(out, t);
}

void variant_overrides_json(const tune_space *s, const tune_variant *v, buf *out)
{
    if (variant_is_base(v)) {
        buf_adds(out, "null");
        return;
    }
    buf_addc(out, '{');
    bool first = true, envs = false;
    for (size_t i = 0; i < s->n; i++) {
        if (v->idx[i] < 0) continue;
        if (s->dims[i].env) {
            envs = true;
            continue;
        }
        buf_adds(out, first ? "" : ",");
        buf_json_str(out, s->dims[i].key);
        buf_addc(out, ':');
        json_value(out, val_of(s, v, i));
        first = false;
    }
    if (envs) {
        buf_adds(out, first ? "\"env\":{" : ",\"env\":{");
        bool f2 = true;
        for (size_t i = 0; i < s->n; i++) {
            if (v->idx[i] < 0 || !s->dims[i].env) continue;
            buf_adds(out, f2 ? "" : ",");
            buf_json_str(out, s->dims[i].key);
            buf_addc(out, ':');
            buf_json_str(out, val_of(s, v, i));
            f2 = false;
        }
        buf_addc(out, '}');
    }
    buf_addc(out, '}');
}

void variant_key(const tune_space *s, const tune_variant *v, buf *out)
{
    bool first = true;
    for (size_t i = 0; i < s->n; i++) {
        if (v->idx[i] < 0) continue;
        buf_printf(out, "%s%s%s=%s", first ? "" : ";", s->dims[i].env ? "env." : "", s->dims[i].key,
                   val_of(s, v, i));
        first = false;
    }
    if (first) buf_adds(out, "baseline");
}

int variant_from_key(const tune_space *s, const char *k, tune_variant *out)
{
    tune_variant v = variant_base();
    buf b = BUF_INIT;
    /* every variant of the space is enumerable only in the grid; search
     * one dimension at a time instead: each "key=value" names its index */
    char *tmp = xstrdup(k), *save = NULL;
    int rc = 0;
    if (strcmp(k, "baseline")) {
        for (char *it = strtok_r(tmp, ";", &save); it && !rc; it = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(it, '=');
            rc = -1;
            if (!eq) break;
            *eq = 0;
            bool env = !strncmp(it, "env.", 4);
            const char *key = env ? it + 4 : it;
            for (size_t i = 0; i < s->n; i++) {
                if (s->dims[i].env != env || strcmp(s->dims[i].key, key)) continue;
                int j = strv_find(&s->dims[i].values, eq + 1);
                if (j >= 0) {
                    v.idx[i] = j;
                    rc = 0;
                }
            }
        }
    }
    free(tmp);
    buf_release(&b);
    if (!rc) *out = v;
    return rc;
}

size_t space_grid_size(const tune_space *s)
{
    if (!s->n) return 0;
    size_t n = 1;
    for (size_t i = 0; i < s->n; i++) {
        if (n > (size_t)-1 / s->dims[i].values.n) return (size_t)-1;
        n *= s->dims[i].values.n;
    }
    return n;
}

size_t space_grid(const tune_space *s, tune_variant *out, size_t max)
{
    if (!s->n) return 0;
    tune_variant v = variant_base();
    for (size_t i = 0; i < s->n; i++) v.idx[i] = 0;
    size_t k = 0;
    while (k < max) {
        out[k++] = v;
        size_t i = s->n;
        while (i > 0) { /* the odometer: the last dimension turns fastest */
            i--;
            if ((size_t)++v.idx[i] < s->dims[i].values.n) break;
            v.idx[i] = 0;
            if (i == 0) return k;
        }
    }
    return k;
}
