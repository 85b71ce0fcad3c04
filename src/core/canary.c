/* canary.c - see canary.h. */
#include "core/canary.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* fakellm answers these (tests/fakes/fakellm/answer.c); keep them in step */
const canary_probe canary_builtin[CANARY_BUILTIN_N] = {
    {"What is 17 + 25? Reply with the number only.", "42"},
    {"Repeat this exactly, with nothing else: gpumod-canary-7f3a", "gpumod-canary-7f3a"},
    {"What is the capital of France? Answer with one word.", "Paris"},
};

const char *const canary_embed_inputs[2] = {"The cat sat on the mat.", "Quarterly revenue rose by four percent."};

void canary_chat_body(const char *prompt, int64_t max_tokens, buf *out)
{
    buf_adds(out, "{\"messages\":[{\"role\":\"user\",\"content\":");
    buf_json_str(out, prompt);
    buf_printf(out,
               "}],\"max_tokens\":%lld,\"temperature\":0,\"stream\":false,"
               "\"chat_template_kwargs\":{\"enable_thinking\":false}}",
               (long long)(max_tokens > 0 ? max_tokens : CANARY_MAX_TOKENS_DEFAULT));
}

void canary_embed_body(buf *out)
{
    buf_adds(out, "{\"input\":[");
    buf_json_str(out, canary_embed_inputs[0]);
    buf_addc(out, ',');
    buf_json_str(out, canary_embed_inputs[1]);
    buf_adds(out, "]}");
}

const char *canary_after_thinking(const char *content)
{
    const char *last = NULL;
    for (const char *p = content; (p = strstr(p, "</think>")) != NULL; p += 8) last = p + 8;
    return last ? last : content;
}

/* s, cut to fit and on one line (control characters as spaces). */
static void sample_of(const char *s, char *out, size_t outlen)
{
    size_t n = 0;
    for (; *s && n + 4 < outlen; s++) out[n++] = (unsigned char)*s < 0x20 ? ' ' : *s;
    if (*s) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = 0;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n)) return true;
    return n == 0;
}

static bool has_alnum(const char *s)
{
    for (; *s; s++)
        if (isalnum((unsigned char)*s)) return true;
    return false;
}

void canary_judge_text(const char *content, const char *expect, canary_verdict *out)
{
    memset(out, 0, sizeof *out);
    const char *ans = canary_after_thinking(content ? content : "");
    while (isspace((unsigned char)*ans)) ans++;
    sample_of(ans, out->sample, sizeof out->sample);
    if (!*ans) {
        snprintf(out->why, sizeof out->why, "%s",
                 content && *content ? "the answer is empty once its thinking is stripped" : "the answer is empty");
        return;
    }
    if (expect && !contains_nocase(ans, expect)) {
        snprintf(out->why, sizeof out->why, "expected '%s' in the answer, got '%.120s'", expect, out->sample);
        return;
    }
    if (!expect && !has_alnum(ans)) {
        snprintf(out->why, sizeof out->why, "the answer has no letter or digit: '%.120s'", out->sample);
        return;
    }
    out->ok = true;
}

static bool all_finite(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

static bool same(const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

void canary_judge_vectors(const double *a, size_t na, const double *b, size_t nb, canary_verdict *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->sample, sizeof out->sample, "%zu and %zu values", na, nb);
    if (!na || !nb) {
        snprintf(out->why, sizeof out->why, "an embedding is empty (%zu and %zu values)", na, nb);
    } else if (na != nb) {
        snprintf(out->why, sizeof out->why, "the two embeddings differ in length (%zu and %zu values)", na, nb);
    } else if (!all_finite(a, na) || !all_finite(b, nb)) {
        snprintf(out->why, sizeof out->why, "an embedding holds a value that is not finite");
    } else if (same(a, b, na)) {
        snprintf(out->why, sizeof out->why, "two different inputs gave the same embedding (%zu values)", na);
    } else {
        out->ok = true;
    }
}
