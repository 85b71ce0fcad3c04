/* promtext.c - Prometheus text exposition: a writer that validates names,
 * escapes values and keeps the family rules (HELP and TYPE once, samples
 * together, counters named *_total), and fixed-bucket histograms.  A sticky
 * error instead of a return code per call keeps the /metrics handler a
 * straight list of calls.  See promtext.h. */
#include "router/promtext.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {"counter", "gauge", "histogram", "untyped"};

int prom_hist_init(prom_hist *h, const double *bounds, size_t n_bounds)
{
    memset(h, 0, sizeof *h);
    if (n_bounds > PROM_HIST_MAX) return -1;
    for (size_t i = 0; i < n_bounds; i++)
        if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1])) return -1;
    h->bounds = bounds;
    h->n_bounds = n_bounds;
    return 0;
}

void prom_hist_observe(prom_hist *h, double v)
{
    if (isnan(v)) return;
    size_t lo = 0, hi = h->n_bounds; /* first bound >= v */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->bounds[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    h->counts[lo]++;
    h->count++;
    h->sum += v;
}

bool prom_metric_name_ok(const char *s)
{
    if (!s || !*s || (s[0] == '_' && s[1] == '_')) return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(p > s && c >= '0' && c <= '9')) return false;
    }
    return true;
}

bool prom_label_name_ok(const char *s)
{
    return prom_metric_name_ok(s) && !strchr(s, ':');
}

void prom_escape_value(buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            buf_adds(out, "\\\\");
        else if (*s == '"')
            buf_adds(out, "\\\"");
        else if (*s == '\n')
            buf_adds(out, "\\n");
        else
            buf_addc(out, *s);
    }
}

static void escape_help(buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            buf_adds(out, "\\\\");
        else if (*s == '\n')
            buf_adds(out, "\\n");
        else
            buf_addc(out, *s);
    }
}

void prom_format_double(buf *out, double v)
{
    if (isnan(v)) {
        buf_adds(out, "NaN");
        return;
    }
    if (isinf(v)) {
        buf_adds(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == floor(v) && fabs(v) <= 9007199254740992.0) { /* 2^53: exact */
        buf_printf(out, "%.0f", v == 0 ? 0.0 : v);        /* no "-0" */
        return;
    }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    buf_adds(out, tmp);
}

static int failf(prom_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(prom_writer *w, const char *fmt, ...)
{
    if (w->err[0]) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
    return -1;
}

void prom_init(prom_writer *w, buf *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    buf_init(&w->seen);
}

void prom_release(prom_writer *w)
{
    buf_release(&w->seen);
}

const char *prom_error(const prom_writer *w)
{
    return w->err[0] ? w->err : NULL;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

int prom_family(prom_writer *w, const char *name, prom_type type, const char *help)
{
    if (w->err[0]) return -1;
    if ((unsigned)type > PROM_UNTYPED)
        return failf(w, "metric '%s': unknown type %d", name, (int)type);
    if (!prom_metric_name_ok(name) || strlen(name) >= sizeof w->family)
        return failf(w,
                     "metric name '%s' is not valid: expected [a-zA-Z_:][a-zA-Z0-9_:]*, "
                     "shorter than %zu bytes, no '__' prefix",
                     name, sizeof w->family);
    if (type == PROM_COUNTER && !ends_with(name, "_total"))
        return failf(w, "counter '%s': the name must end in '_total'", name);
    if (type == PROM_HISTOGRAM &&
        (ends_with(name, "_bucket") || ends_with(name, "_sum") || ends_with(name, "_count")))
        return failf(w, "histogram '%s': the name must not end in _bucket, _sum or _count", name);
    if (!help || !help[0]) return failf(w, "metric '%s': no help text", name);
    char key[sizeof w->family + 2];
    snprintf(key, sizeof key, "\n%s\n", name);
    if (w->seen.len && strstr(w->seen.p, key))
        return failf(w, "metric '%s': a second family of that name (its samples must be together)",
                     name);
    buf_adds(&w->seen, key + (w->seen.len ? 1 : 0));
    snprintf(w->family, sizeof w->family, "%s", name);
    w->type = type;
    buf_printf(w->out, "# HELP %s ", name);
    escape_help(w->out, help);
    buf_printf(w->out, "\n# TYPE %s %s\n", name, type_names[type]);
    return 0;
}

static int check_labels(prom_writer *w, const prom_label *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!prom_label_name_ok(l[i].name))
            return failf(w,
                         "metric '%s': label name '%s' is not valid: expected "
                         "[a-zA-Z_][a-zA-Z0-9_]*, no '__' prefix",
                         w->family, l[i].name ? l[i].name : "");
        if (!l[i].value)
            return failf(w, "metric '%s': label '%s' has no value", w->family, l[i].name);
        if (w->type == PROM_HISTOGRAM && !strcmp(l[i].name, "le"))
            return failf(w, "histogram '%s': label 'le' is reserved for the buckets", w->family);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(l[i].name, l[j].name))
                return failf(w, "metric '%s': label '%s' given twice", w->family, l[i].name);
    }
    return 0;
}

/* name{labels[,le="..."]} value */
static void line(prom_writer *w, const char *suffix, const prom_label *l, size_t n, const char *le,
                 double v)
{
    buf_printf(w->out, "%s%s", w->family, suffix);
    if (n || le) {
        buf_addc(w->out, '{');
        for (size_t i = 0; i < n; i++) {
            buf_printf(w->out, "%s%s=\"", i ? "," : "", l[i].name);
            prom_escape_value(w->out, l[i].value);
            buf_addc(w->out, '"');
        }
        if (le) buf_printf(w->out, "%sle=\"%s\"", n ? "," : "", le);
        buf_addc(w->out, '}');
    }
    buf_addc(w->out, ' ');
    prom_format_double(w->out, v);
    buf_addc(w->out, '\n');
}

int prom_sample(prom_writer *w, const prom_label *labels, size_t n, double value)
{
    if (w->err[0]) return -1;
    if (!w->family[0]) return failf(w, "a sample before any family");
    if (w->type == PROM_HISTOGRAM)
        return failf(w, "histogram '%s': samples come from prom_histogram", w->family);
    if (check_labels(w, labels, n) < 0) return -1;
    if (w->type == PROM_COUNTER && (value < 0 || isnan(value)))
        return failf(w, "counter '%s': value must be >= 0", w->family);
    line(w, "", labels, n, NULL, value);
    return 0;
}

int prom_histogram(prom_writer *w, const prom_label *labels, size_t n, const prom_hist *h)
{
    if (w->err[0]) return -1;
    if (!w->family[0] || w->type != PROM_HISTOGRAM)
        return failf(w, "metric '%s': a histogram sample in a family of another type", w->family);
    if (check_labels(w, labels, n) < 0) return -1;
    uint64_t cum = 0;
    buf le = BUF_INIT;
    for (size_t i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        buf_clear(&le);
        prom_format_double(&le, h->bounds[i]);
        line(w, "_bucket", labels, n, le.p, (double)cum);
    }
    buf_release(&le);
    line(w, "_bucket", labels, n, "+Inf", (double)h->count);
    line(w, "_sum", labels, n, NULL, h->sum);
    line(w, "_count", labels, n, NULL, (double)h->count);
    return 0;
}
