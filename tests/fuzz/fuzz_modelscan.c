/* fuzz_modelscan.c - libFuzzer target for the request body scanner
 * (src/router/modelscan.c), and the checks that the corpus replay
 * (replay_modelscan.c) #includes, so there is one definition of a correct
 * scan.
 *
 * Input: byte 0 is a control byte, the rest is the body.
 *   bit 0      a limit of half the body's length (the 413 path)
 *   bits 1..7  seed of the random split points
 *
 * The body is scanned three times: in one piece, one byte at a time and in
 * random pieces, each piece a fresh allocation of exactly its bytes (a read
 * past them is an ASan report).  The three results (status, found, model,
 * span, error code, offset and message) must be equal.  Then:
 *   - an error has a code and a message, its offset is inside the body;
 *   - found: the span lies inside the body, starts and ends with '"', and
 *     the model is NUL-terminated at model_len <= MODELSCAN_MAX_MODEL;
 *   - DONE: cJSON, where it accepts the body, agrees that it is an object
 *     whose "model" is that string (cJSON is laxer about numbers and
 *     stricter about lone surrogates, so only this direction is checked);
 *   - DONE: rewriting the model to "x" gives a body that scans as DONE
 *     with model "x", and a Content-Length delta that adds up. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "router/modelscan.h"

static char fz_why[1024];

static const char *fz_broke(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fz_broke(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fz_why, sizeof fz_why, fmt, ap);
    va_end(ap);
    return fz_why;
}

typedef struct ms_run {
    modelscan_status st;
    modelscan s;
} ms_run;

/* mode 0: one piece, 1: a byte at a time, 2: random pieces */
static void ms_scan(const char *body, size_t len, size_t limit, int mode, uint32_t seed, ms_run *r)
{
    modelscan_init(&r->s, limit);
    r->st = MODELSCAN_MORE;
    size_t at = 0;
    while (at < len && r->st != MODELSCAN_ERROR) {
        size_t step = len - at;
        if (mode == 1) step = 1;
        if (mode == 2) {
            seed = seed * 1103515245u + 12345u;
            step = 1 + (seed >> 16) % (step < 61 ? step : 61);
        }
        char *tmp = malloc(step);
        memcpy(tmp, body + at, step);
        r->st = modelscan_feed(&r->s, tmp, step);
        free(tmp);
        at += step;
    }
    if (r->st != MODELSCAN_ERROR) r->st = modelscan_finish(&r->s);
}

static const char *ms_same(const ms_run *a, const ms_run *b)
{
    if (a->st != b->st) return fz_broke("status %d vs %d", (int)a->st, (int)b->st);
    if (a->s.err.code != b->s.err.code || a->s.err.offset != b->s.err.offset ||
        strcmp(a->s.err.msg, b->s.err.msg))
        return fz_broke("error %d@%zu '%s' vs %d@%zu '%s'", (int)a->s.err.code, a->s.err.offset,
                        a->s.err.msg, (int)b->s.err.code, b->s.err.offset, b->s.err.msg);
    if (a->s.found != b->s.found) return fz_broke("found %d vs %d", a->s.found, b->s.found);
    if (a->s.found &&
        (a->s.model_len != b->s.model_len || memcmp(a->s.model, b->s.model, a->s.model_len) ||
         a->s.span_start != b->s.span_start || a->s.span_end != b->s.span_end))
        return fz_broke("model '%s' [%zu,%zu) vs '%s' [%zu,%zu)", a->s.model, a->s.span_start,
                        a->s.span_end, b->s.model, b->s.span_start, b->s.span_end);
    return NULL;
}

static const char *ms_check_one(const ms_run *r, const char *body, size_t len)
{
    const modelscan *s = &r->s;
    if (r->st == MODELSCAN_MORE) return fz_broke("MORE after finish");
    if (r->st == MODELSCAN_ERROR) {
        if (s->err.code == MODELSCAN_E_NONE || !s->err.msg[0])
            return fz_broke("error without a code or message");
        if (s->err.offset > len) return fz_broke("error offset %zu past %zu", s->err.offset, len);
    } else if (s->err.code != MODELSCAN_E_NONE) {
        return fz_broke("DONE with error code %d", (int)s->err.code);
    }
    if (r->st == MODELSCAN_DONE && !s->found) return fz_broke("DONE without a model");
    if (s->found) {
        if (s->span_start >= s->span_end || s->span_end > len || s->span_end - s->span_start < 2)
            return fz_broke("span [%zu,%zu) of %zu", s->span_start, s->span_end, len);
        if (body[s->span_start] != '"' || body[s->span_end - 1] != '"')
            return fz_broke("span [%zu,%zu) not a string token", s->span_start, s->span_end);
        if (s->model_len > MODELSCAN_MAX_MODEL || !s->model_len || s->model[s->model_len] ||
            strlen(s->model) != s->model_len)
            return fz_broke("model length %zu", s->model_len);
    }
    return NULL;
}

static const char *ms_check_json(const ms_run *r, const char *body, size_t len)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root) return NULL;
    const char *e = NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(root))
        e = fz_broke("DONE, cJSON says not an object");
    else if (!cJSON_IsString(m))
        e = fz_broke("DONE with '%s', cJSON finds no string model", r->s.model);
    else if (strcmp(m->valuestring, r->s.model))
        e = fz_broke("model '%s', cJSON says '%s'", r->s.model, m->valuestring);
    cJSON_Delete(root);
    return e;
}

static const char *ms_check_rewrite(const ms_run *r, const char *body, size_t len)
{
    buf out = BUF_INIT;
    int64_t delta = 0;
    const char *e = NULL;
    size_t cut = r->s.span_end + (len - r->s.span_end) / 2; /* the router has seen this much */
    if (modelscan_rewrite(&r->s, body, cut, "x", &out, &delta) < 0)
        return fz_broke("rewrite refused");
    buf_add(&out, body + cut, len - cut);
    if ((int64_t)out.len != (int64_t)len + delta) {
        e = fz_broke("rewrite: %zu bytes, expected %zu%+lld", out.len, len, (long long)delta);
    } else {
        ms_run again;
        ms_scan(out.p, out.len, 0, 0, 0, &again);
        if (again.st != MODELSCAN_DONE || strcmp(again.s.model, "x") ||
            again.s.span_start != r->s.span_start || again.s.span_end != r->s.span_start + 3)
            e = fz_broke("rewritten body: status %d model '%s' (%s)", (int)again.st, again.s.model,
                         again.s.err.msg);
    }
    buf_release(&out);
    return e;
}

/* the three scans of the last input (replay_modelscan.c reads the message) */
static ms_run runs[3];

/* NULL when the input passes every check; *status: the scan's result. */
static const char *modelscan_check_input(const uint8_t *data, size_t size, modelscan_status *status)
{
    if (status) *status = MODELSCAN_ERROR;
    if (!size) return NULL;
    int flags = data[0];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    size_t limit = (flags & 1) ? len / 2 : 0;
    static const char *names[3] = {"one piece", "byte at a time", "random pieces"};
    const char *e;
    for (int mode = 0; mode < 3; mode++) {
        ms_scan(body, len, limit, mode, (uint32_t)(flags >> 1) * 2654435761u, &runs[mode]);
        if ((e = ms_check_one(&runs[mode], body, len))) {
            char what[sizeof fz_why];
            snprintf(what, sizeof what, "%s", e);
            return fz_broke("%s: %s", names[mode], what);
        }
        if (mode && (e = ms_same(&runs[0], &runs[mode]))) {
            char what[sizeof fz_why];
            snprintf(what, sizeof what, "%s", e);
            return fz_broke("%s differs from one piece: %s", names[mode], what);
        }
    }
    if (limit && runs[0].st != MODELSCAN_ERROR)
        return fz_broke("a body over the limit was accepted");
    if (runs[0].st == MODELSCAN_DONE) {
        if ((e = ms_check_json(&runs[0], body, len))) return e;
        if ((e = ms_check_rewrite(&runs[0], body, len))) return e;
    }
    if (status) *status = runs[0].st;
    return NULL;
}

#ifndef FUZZ_MODELSCAN_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *err = modelscan_check_input(data, size, NULL);
    if (err) {
        fprintf(stderr, "fuzz_modelscan: %s\n", err);
        abort();
    }
    return 0;
}
#endif
