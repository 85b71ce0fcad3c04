/* bserver.c - a server's /metrics before and after a run (bserver.h).
 *
 * The parser takes the Prometheus text format (0.0.4) line by line:
 * name, optional {labels}, value, optional timestamp.  It stops at the
 * first malformed line with "line N: expected ..." and keeps every sample
 * before it: a scrape cut short by a dying server still says what it
 * said.  Labels are stored re-escaped in one canonical string, in the
 * order written, so two scrapes of one series compare with strcmp.
 *
 * The deltas use only counters, reset-checked series by series: a
 * counter that went down (or a series that vanished) means the server
 * restarted between the scrapes, and then no delta is given at all
 * rather than a wrong one.  Gauges come from the "after" scrape. */
#include "bench/bserver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/errf.h"

void bscrape_release(bscrape *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->s[i].name);
        free(s->s[i].labels);
    }
    free(s->s);
    s->s = NULL;
    s->n = s->cap = 0;
}

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* One sample line being read: the cursor, what it has read so far (owned
 * until add_sample takes it) and where an error goes. */
typedef struct mline {
    const char *p, *end;
    size_t lineno;
    char *name;
    buf labels; /* canonical: key="value",... re-escaped, in the order written */
    char *err;
    size_t errlen;
} mline;

/* The metric name.  0, or -1 with err set. */
static int parse_name(mline *l)
{
    const char *n0 = l->p;
    if (l->p == l->end || !name_start(*l->p)) {
        errf(l->err, l->errlen, "metrics line %zu: expected a metric name", l->lineno);
        return -1;
    }
    while (l->p < l->end && name_char(*l->p))
        l->p++;
    l->name = xstrndup(n0, (size_t)(l->p - n0));
    l->p = skip_ws(l->p, l->end);
    return 0;
}

/* A label's quoted value, the cursor on its opening '"', appended to the
 * labels still escaped.  0 with the cursor on the closing '"', or -1. */
static int parse_label_value(mline *l, const char *k0, size_t klen)
{
    const char *p = l->p + 1, *end = l->end;
    for (;;) {
        if (p == end) {
            errf(l->err, l->errlen,
                 "metrics line %zu: expected '\"' to close the value of label '%.*s' of '%s'",
                 l->lineno, (int)klen, k0, l->name);
            return -1;
        }
        if (*p == '"') break;
        if (*p == '\\') {
            if (p + 1 == end || (p[1] != '\\' && p[1] != '"' && p[1] != 'n')) {
                errf(l->err, l->errlen,
                     "metrics line %zu: expected \\\\, \\\" or \\n in the value of label "
                     "'%.*s' of '%s'",
                     l->lineno, (int)klen, k0, l->name);
                return -1;
            }
            buf_add(&l->labels, p, 2); /* kept escaped: canonical */
            p += 2;
            continue;
        }
        buf_addc(&l->labels, *p++);
    }
    l->p = p;
    return 0;
}

/* One key="value" and the ',' after it, if any.  0, or -1 with err set. */
static int parse_label(mline *l)
{
    const char *k0 = l->p, *end = l->end;
    if (!name_start(*l->p) || *l->p == ':') {
        errf(l->err, l->errlen, "metrics line %zu: expected a label name or '}' in '%s'", l->lineno,
             l->name);
        return -1;
    }
    while (l->p < end && name_char(*l->p) && *l->p != ':')
        l->p++;
    size_t klen = (size_t)(l->p - k0);
    l->p = skip_ws(l->p, end);
    if (l->p == end || *l->p != '=') {
        errf(l->err, l->errlen, "metrics line %zu: expected '=' after label '%.*s' of '%s'",
             l->lineno, (int)klen, k0, l->name);
        return -1;
    }
    l->p = skip_ws(l->p + 1, end);
    if (l->p == end || *l->p != '"') {
        errf(l->err, l->errlen,
             "metrics line %zu: expected '\"' to open the value of label '%.*s' of '%s'", l->lineno,
             (int)klen, k0, l->name);
        return -1;
    }
    if (l->labels.len) buf_addc(&l->labels, ',');
    buf_add(&l->labels, k0, klen);
    buf_adds(&l->labels, "=\"");
    if (parse_label_value(l, k0, klen) < 0) return -1;
    buf_addc(&l->labels, '"');
    l->p = skip_ws(l->p + 1, end);
    if (l->p < end && *l->p == ',')
        l->p = skip_ws(l->p + 1, end);
    else if (l->p < end && *l->p != '}') {
        errf(l->err, l->errlen, "metrics line %zu: expected ',' or '}' after label '%.*s' of '%s'",
             l->lineno, (int)klen, k0, l->name);
        return -1;
    }
    return 0;
}

/* The optional {labels}.  0, or -1 with err set. */
static int parse_labels(mline *l)
{
    if (l->p == l->end || *l->p != '{') return 0;
    l->p = skip_ws(l->p + 1, l->end);
    while (l->p < l->end && *l->p != '}')
        if (parse_label(l) < 0) return -1;
    if (l->p == l->end) {
        errf(l->err, l->errlen, "metrics line %zu: expected '}' to close the labels of '%s'",
             l->lineno, l->name);
        return -1;
    }
    l->p = skip_ws(l->p + 1, l->end);
    return 0;
}

/* The value: a float, NaN, +Inf, -Inf.  0, or -1 with err set. */
static int parse_value(mline *l, double *v)
{
    const char *v0 = l->p;
    while (l->p < l->end && *l->p != ' ' && *l->p != '\t')
        l->p++;
    char vbuf[64];
    size_t vlen = (size_t)(l->p - v0);
    char *vend = NULL;
    *v = 0;
    if (vlen && vlen < sizeof vbuf) {
        memcpy(vbuf, v0, vlen);
        vbuf[vlen] = 0;
        *v = strtod(vbuf, &vend);
    }
    if (!vlen || vlen >= sizeof vbuf || vend != vbuf + vlen) {
        errf(l->err, l->errlen, "metrics line %zu: expected a number after '%s%s%s%s', got '%.*s'",
             l->lineno, l->name, l->labels.len ? "{" : "", l->labels.p, l->labels.len ? "}" : "",
             (int)(vlen > 40 ? 40 : vlen), v0);
        return -1;
    }
    return 0;
}

/* An optional timestamp (integer milliseconds), ignored, then the end of
 * the line.  0, or -1 with err set. */
static int parse_timestamp(mline *l)
{
    const char *p = skip_ws(l->p, l->end), *end = l->end;
    if (p == end) return 0;
    const char *t0 = p;
    if (*p == '-' || *p == '+') p++;
    const char *d0 = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p == d0 || skip_ws(p, end) != end) {
        errf(l->err, l->errlen,
             "metrics line %zu: expected an integer timestamp or the end of the line after "
             "the value of '%s', got '%.*s'",
             l->lineno, l->name, (int)(end - t0 > 40 ? 40 : end - t0), t0);
        return -1;
    }
    return 0;
}

/* Append the sample; it takes the name and the labels. */
static void add_sample(bscrape *out, mline *l, double v)
{
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->s = xrealloc(out->s, out->cap * sizeof *out->s);
    }
    out->s[out->n].name = l->name;
    out->s[out->n].labels = buf_detach(&l->labels);
    out->s[out->n].value = v;
    out->n++;
}

/* One sample line [p, end).  0, or -1 with err saying what was expected. */
static int parse_line(const char *p, const char *end, bscrape *out, char *err, size_t errlen,
                      size_t lineno)
{
    mline l = {
        .p = p, .end = end, .lineno = lineno, .labels = BUF_INIT, .err = err, .errlen = errlen};
    double v;
    if (parse_name(&l) < 0) return -1;
    if (parse_labels(&l) < 0 || parse_value(&l, &v) < 0 || parse_timestamp(&l) < 0) {
        free(l.name);
        buf_release(&l.labels);
        return -1;
    }
    add_sample(out, &l, v);
    return 0;
}

int bscrape_parse(bscrape *out, const char *text, size_t len, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *p = text, *end = text + len;
    size_t lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if (le > p && le[-1] == '\r')
            le--;
        const char *s = skip_ws(p, le);
        if (s < le && *s != '#' && parse_line(s, le, out, err, errlen, lineno) < 0)
            return -1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

double bscrape_sum(const bscrape *s, const char *name)
{
    double sum = 0;
    bool any = false;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->s[i].name, name) == 0) {
            sum += s->s[i].value;
            any = true;
        }
    return any ? sum : NAN;
}

/* Whether canonical labels hold key="value" (value unescaped). */
static bool has_label(const char *l, const char *key, const char *value)
{
    size_t klen = strlen(key);
    while (*l) {
        const char *eq = strchr(l, '=');
        if (!eq)
            return false;
        bool kmatch = (size_t)(eq - l) == klen && memcmp(l, key, klen) == 0;
        const char *p = eq + 2, *want = value; /* past =" */
        bool vmatch = kmatch;
        while (*p && *p != '"') {
            char c = *p;
            if (c == '\\') {
                c = p[1] == 'n' ? '\n' : p[1];
                p++;
            }
            if (vmatch && *want == c)
                want++;
            else
                vmatch = false;
            p++;
        }
        if (vmatch && !*want)
            return true;
        l = *p ? p + 1 : p;
        if (*l == ',')
            l++;
    }
    return false;
}

double bscrape_label(const bscrape *s, const char *name, const char *key, const char *value)
{
    double sum = 0;
    bool any = false;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->s[i].name, name) == 0 && has_label(s->s[i].labels, key, value)) {
            sum += s->s[i].value;
            any = true;
        }
    return any ? sum : NAN;
}

static const bsample *find(const bscrape *s, const char *name, const char *labels)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->s[i].name, name) == 0 && strcmp(s->s[i].labels, labels) == 0)
            return &s->s[i];
    return NULL;
}

/* Any series of counter `name` that went down or vanished. */
static bool went_down(const bscrape *before, const bscrape *after, const char *name)
{
    for (size_t i = 0; i < before->n; i++) {
        const bsample *b = &before->s[i];
        if (strcmp(b->name, name) != 0)
            continue;
        const bsample *a = find(after, name, b->labels);
        if (!a || a->value < b->value)
            return true;
    }
    return false;
}

struct ctx {
    const bscrape *before, *after;
    char prefix[16];
    bool reset;
};

/* The delta of a counter (summed over label sets); NaN when the "after"
 * scrape lacks it.  A series new since "before" counts from 0. */
static double delta(struct ctx *c, const char *suffix)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s", c->prefix, suffix);
    if (went_down(c->before, c->after, name))
        c->reset = true;
    double a = bscrape_sum(c->after, name), b = bscrape_sum(c->before, name);
    if (isnan(a))
        return NAN;
    return a - (isnan(b) ? 0 : b);
}

static double gauge(struct ctx *c, const char *suffix)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s", c->prefix, suffix);
    return bscrape_sum(c->after, name);
}

static double ratio(double a, double b)
{
    return isnan(a) || isnan(b) || b <= 0 ? NAN : a / b;
}

static bool has_prefix(const bscrape *s, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < s->n; i++)
        if (strncmp(s->s[i].name, prefix, n) == 0)
            return true;
    return false;
}

static void spec(struct ctx *c, bserver_delta *out)
{
    out->drafts = delta(c, "spec_decode_num_drafts_total");
    out->draft_tokens = delta(c, "spec_decode_num_draft_tokens_total");
    out->accepted = delta(c, "spec_decode_num_accepted_tokens_total");
    out->spec = !isnan(out->drafts) && !isnan(out->draft_tokens) && !isnan(out->accepted) &&
                (out->drafts > 0 || out->draft_tokens > 0);
    if (!out->spec)
        return;
    out->acceptance_rate = ratio(out->accepted, out->draft_tokens);
    out->acceptance_length = out->drafts > 0 ? 1 + out->accepted / out->drafts : NAN;
    char name[128];
    snprintf(name, sizeof name, "%sspec_decode_num_accepted_tokens_per_pos_total", c->prefix);
    if (went_down(c->before, c->after, name))
        c->reset = true;
    for (int p = 0; p < BSERVER_MAX_POS; p++) {
        char pos[16];
        snprintf(pos, sizeof pos, "%d", p);
        double a = bscrape_label(c->after, name, "position", pos);
        if (isnan(a))
            break;
        double b = bscrape_label(c->before, name, "position", pos);
        out->per_pos[p] = ratio(a - (isnan(b) ? 0 : b), out->drafts);
        out->n_pos = p + 1;
    }
}

void bserver_delta_compute(const bscrape *before, const bscrape *after, bserver_delta *out)
{
    memset(out, 0, sizeof *out);
    double *nan_fields[] = {&out->prompt_tokens, &out->predicted_tokens, &out->prompt_s, &out->predicted_s,
                            &out->n_decode, &out->prefill_tps, &out->decode_tps, &out->tokens_per_decode,
                            &out->busy_slots_per_decode, &out->requests_deferred, &out->requests_running,
                            &out->requests_waiting, &out->kv_cache_usage, &out->requests_success,
                            &out->drafts, &out->draft_tokens, &out->accepted, &out->acceptance_rate,
                            &out->acceptance_length};
    for (size_t i = 0; i < sizeof nan_fields / sizeof *nan_fields; i++)
        *nan_fields[i] = NAN;
    for (int p = 0; p < BSERVER_MAX_POS; p++)
        out->per_pos[p] = NAN;
    struct ctx c = {before, after, "", false};
    if (has_prefix(after, "llamacpp:")) {
        out->flavor = "llamacpp";
        snprintf(c.prefix, sizeof c.prefix, "llamacpp:");
        out->prompt_tokens = delta(&c, "prompt_tokens_total");
        out->prompt_s = delta(&c, "prompt_seconds_total");
        out->predicted_tokens = delta(&c, "tokens_predicted_total");
        out->predicted_s = delta(&c, "tokens_predicted_seconds_total");
        out->n_decode = delta(&c, "n_decode_total");
        out->prefill_tps = ratio(out->prompt_tokens, out->prompt_s);
        out->decode_tps = ratio(out->predicted_tokens, out->predicted_s);
        out->tokens_per_decode = ratio(out->predicted_tokens, out->n_decode);
        out->busy_slots_per_decode = gauge(&c, "n_busy_slots_per_decode");
        out->requests_deferred = gauge(&c, "requests_deferred");
        out->requests_running = gauge(&c, "requests_processing");
    } else if (has_prefix(after, "vllm:")) {
        out->flavor = "vllm";
        snprintf(c.prefix, sizeof c.prefix, "vllm:");
        out->prompt_tokens = delta(&c, "prompt_tokens_total");
        out->predicted_tokens = delta(&c, "generation_tokens_total");
        out->requests_success = delta(&c, "request_success_total");
        out->requests_running = gauge(&c, "num_requests_running");
        out->requests_waiting = gauge(&c, "num_requests_waiting");
        out->kv_cache_usage = gauge(&c, "kv_cache_usage_perc");
        if (isnan(out->kv_cache_usage)) /* before vLLM 0.10 */
            out->kv_cache_usage = gauge(&c, "gpu_cache_usage_perc");
    } else {
        out->flavor = "unknown";
        return;
    }
    spec(&c, out);
    out->reset = c.reset;
    if (c.reset) {
        /* every counter-derived figure is void; the gauges still hold */
        double *d[] = {&out->prompt_tokens, &out->predicted_tokens, &out->prompt_s, &out->predicted_s,
                       &out->n_decode, &out->prefill_tps, &out->decode_tps, &out->tokens_per_decode,
                       &out->requests_success, &out->drafts, &out->draft_tokens, &out->accepted,
                       &out->acceptance_rate, &out->acceptance_length};
        for (size_t i = 0; i < sizeof d / sizeof *d; i++)
            *d[i] = NAN;
        for (int p = 0; p < BSERVER_MAX_POS; p++)
            out->per_pos[p] = NAN;
        out->n_pos = 0;
        out->spec = false;
    }
}
