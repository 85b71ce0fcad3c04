/* keepalive.c - keep_alive values and members, engines' activity counters
 * (keepalive.h).
 *
 * The body walk relies on the body being one valid JSON object (modelscan
 * checked it before): it only finds where each top-level member starts and
 * ends, it does not validate again. */
#include "router/keepalive.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KA_ACCEPTED                                                                                \
    "expected a number of seconds or a duration string such as \"5m\", \"1h30m\", \"10s\", "       \
    "\"300ms\" (0 unloads the model after this request, a negative value keeps it loaded)"

/* ---- values ---- */

static int ka_fail(char *err, size_t errlen, const char *v, size_t n, bool str, const char *why)
{
    int show = n > 40 ? 40 : (int)n;
    snprintf(err, errlen, "keep_alive %s%.*s%s%s: %s; " KA_ACCEPTED, str ? "\"" : "", show, v,
             n > 40 ? "..." : "", str ? "\"" : "", why);
    return -1;
}

static int ka_result(double ms, int64_t *out)
{
    if (ms < 0) {
        *out = KA_KEEP;
    } else if (ms == 0) {
        *out = 0;
    } else if (!(ms <= (double)KA_MAX_MS)) {
        return -1;
    } else {
        *out = ms < 1 ? 1 : (int64_t)llround(ms);
    }
    return 0;
}

/* A unit of a Go duration at p (at most n bytes): its milliseconds and length, or 0. */
static size_t unit_at(const char *p, size_t n, double *ms)
{
    static const struct {
        const char *u;
        double ms;
    } units[] = {{"ns", 1e-6}, {"us", 1e-3}, {"\xc2\xb5s", 1e-3}, {"\xce\xbcs", 1e-3},
                 {"ms", 1},    {"s", 1e3},   {"m", 6e4},          {"h", 3.6e6}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t l = strlen(units[i].u);
        if (l <= n && !memcmp(p, units[i].u, l)) {
            *ms = units[i].ms;
            return l;
        }
    }
    return 0;
}

/* Go's time.ParseDuration, in milliseconds. */
static int parse_duration(const char *v, size_t n, double *out, const char **why)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (v[i] == '-' || v[i] == '+')) neg = v[i++] == '-';
    if (i == n) {
        *why = "an empty duration";
        return -1;
    }
    if (n - i == 1 && v[i] == '0') {
        *out = 0;
        return 0;
    }
    double total = 0;
    while (i < n) {
        size_t s = i;
        double num = 0, scale = 1;
        bool digits = false, dot = false;
        for (; i < n && ((v[i] >= '0' && v[i] <= '9') || (v[i] == '.' && !dot)); i++) {
            if (v[i] == '.') {
                dot = true;
                continue;
            }
            digits = true;
            if (dot) scale /= 10;
            num = num * 10 + (v[i] - '0');
        }
        if (!digits || i == s) {
            *why = "not a duration";
            return -1;
        }
        double ums;
        size_t ul = unit_at(v + i, n - i, &ums);
        if (!ul) {
            *why = i == n ? "a duration string needs a unit (ms, s, m, h)" : "an unknown unit";
            return -1;
        }
        i += ul;
        total += num * scale * ums;
    }
    *out = neg ? -total : total;
    return 0;
}

int ka_parse(const char *v, size_t n, bool is_string, int64_t *ms, char *err, size_t errlen)
{
    double val = 0;
    if (is_string) {
        const char *why = NULL;
        if (parse_duration(v, n, &val, &why)) return ka_fail(err, errlen, v, n, true, why);
    } else {
        char tmp[64];
        if (!n || n >= sizeof tmp) return ka_fail(err, errlen, v, n, false, "not a number");
        memcpy(tmp, v, n);
        tmp[n] = 0;
        char *end;
        val = strtod(tmp, &end) * 1000.0;
        if (*end) return ka_fail(err, errlen, v, n, false, "not a number");
    }
    if (ka_result(val, ms))
        return ka_fail(err, errlen, v, n, is_string, "too long (at most 100 years)");
    return 0;
}

/* ---- the member ---- */

static size_t skip_ws(const char *p, size_t n, size_t i)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

/* p[i] is '"': the index after the closing quote. */
static size_t skip_string(const char *p, size_t n, size_t i)
{
    for (i++; i < n && p[i] != '"'; i++)
        if (p[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

static size_t skip_value(const char *p, size_t n, size_t i)
{
    if (i < n && p[i] == '"') return skip_string(p, n, i);
    if (i < n && (p[i] == '{' || p[i] == '[')) {
        int depth = 0;
        for (; i < n; i++) {
            if (p[i] == '"') {
                i = skip_string(p, n, i) - 1;
            } else if (p[i] == '{' || p[i] == '[') {
                depth++;
            } else if ((p[i] == '}' || p[i] == ']') && --depth == 0) {
                return i + 1;
            }
        }
        return n;
    }
    while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' && p[i] != '\t' &&
           p[i] != '\n' && p[i] != '\r')
        i++;
    return i;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The string token [s, e) (quotes included) unescaped into out (ASCII
 * escapes only; anything else makes it no match): its length, or -1. */
static int unescape(const char *p, size_t s, size_t e, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = s + 1; i + 1 < e; i++) {
        char c = p[i];
        if (c == '\\' && i + 2 < e) {
            char x = p[++i];
            if (x == 'u' && i + 4 < e) {
                int v = 0;
                for (int d = 1; d <= 4; d++) {
                    int h = hexval(p[i + d]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0x80 || v == 0) return -1;
                c = (char)v;
                i += 4;
            } else {
                c = x == 'n'   ? '\n'
                    : x == 't' ? '\t'
                    : x == 'r' ? '\r'
                    : x == 'b' ? '\b'
                    : x == 'f' ? '\f'
                               : x;
            }
        }
        if (k + 1 >= cap) return -1;
        out[k++] = c;
    }
    out[k] = 0;
    return (int)k;
}

static int member_value(const char *p, size_t vs, size_t ve, ka_member *out, char *err,
                        size_t errlen)
{
    char v[128];
    out->present = true;
    if (ve - vs == 4 && !memcmp(p + vs, "null", 4)) return 0;
    if (p[vs] == '"') {
        int l = unescape(p, vs, ve, v, sizeof v);
        if (l < 0) return ka_fail(err, errlen, p + vs + 1, ve - vs - 2, true, "not a duration");
        if (ka_parse(v, (size_t)l, true, &out->ms, err, errlen)) return -1;
    } else if (p[vs] == '-' || (p[vs] >= '0' && p[vs] <= '9')) {
        if (ka_parse(p + vs, ve - vs, false, &out->ms, err, errlen)) return -1;
    } else {
        const char *t = p[vs] == '{' ? "an object" : p[vs] == '[' ? "an array" : "a boolean";
        snprintf(err, errlen, "keep_alive is %s; " KA_ACCEPTED, t);
        return -1;
    }
    out->found = true;
    return 0;
}

int ka_find(const char *p, size_t n, ka_member *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t i = 0;
    if (n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) i = 3;
    i = skip_ws(p, n, i);
    if (i >= n || p[i] != '{') return 0;
    size_t prev_end = 0; /* after the previous member's value; 0: none */
    i = skip_ws(p, n, i + 1);
    while (i < n && p[i] == '"') {
        size_t ks = i, ke = skip_string(p, n, i);
        i = skip_ws(p, n, ke);
        if (i < n && p[i] == ':') i++;
        size_t vs = skip_ws(p, n, i), ve = skip_value(p, n, vs);
        char key[16];
        if (vs < n && unescape(p, ks, ke, key, sizeof key) >= 0 && !strcmp(key, "keep_alive")) {
            if (out->present) {
                snprintf(err, errlen, "keep_alive is given twice; give it once");
                return -1;
            }
            if (member_value(p, vs, ve, out, err, errlen)) return -1;
            size_t after = skip_ws(p, n, ve);
            if (after < n && p[after] == ',') {
                out->cut_start = ks;
                out->cut_end = skip_ws(p, n, after + 1);
            } else {
                out->cut_start = prev_end ? prev_end : ks;
                out->cut_end = ve;
            }
        }
        prev_end = ve;
        i = skip_ws(p, n, ve);
        if (i < n && p[i] == ',')
            i = skip_ws(p, n, i + 1);
        else
            break;
    }
    return 0;
}

/* ---- engines' counters ---- */

static int name_in(const char *p, size_t n, const char *const *names)
{
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == n && !memcmp(p, names[i], n)) return 1;
    return 0;
}

void engine_activity_parse(const char *text, size_t len, engine_activity *out)
{
    static const char *const totals[] = {"vllm:request_success_total",
                                         "vllm:prompt_tokens_total",
                                         "vllm:generation_tokens_total",
                                         "llamacpp:prompt_tokens_total",
                                         "llamacpp:tokens_predicted_total",
                                         "llamacpp:n_decode_total",
                                         NULL};
    static const char *const gauges[] = {"vllm:num_requests_running", "vllm:num_requests_waiting",
                                         "llamacpp:requests_processing",
                                         "llamacpp:requests_deferred", NULL};
    memset(out, 0, sizeof *out);
    size_t i = 0;
    while (i < len) {
        size_t ls = i, le = i;
        while (le < len && text[le] != '\n')
            le++;
        i = le + 1;
        if (ls == le || text[ls] == '#') continue;
        size_t ne = ls;
        while (ne < le && text[ne] != '{' && text[ne] != ' ' && text[ne] != '\t')
            ne++;
        int kind = name_in(text + ls, ne - ls, totals)   ? 1
                   : name_in(text + ls, ne - ls, gauges) ? 2
                                                         : 0;
        if (!kind) continue;
        size_t v = ne;
        if (v < le && text[v] == '{') {
            for (v++; v < le && text[v] != '}'; v++)
                if (text[v] == '"') {
                    for (v++; v < le && text[v] != '"'; v++)
                        if (text[v] == '\\') v++;
                }
            v++;
        }
        while (v < le && (text[v] == ' ' || text[v] == '\t'))
            v++;
        char tmp[64];
        size_t vl = 0;
        while (v + vl < le && text[v + vl] != ' ' && text[v + vl] != '\r' && vl + 1 < sizeof tmp)
            vl++;
        memcpy(tmp, text + v, vl);
        tmp[vl] = 0;
        char *end;
        double d = strtod(tmp, &end);
        if (!vl || *end || !isfinite(d)) continue;
        if (kind == 1)
            out->total += d;
        else
            out->busy += d;
        out->n++;
    }
}
