/* answer.c - what fakellm answers when it knows the answer: the solver
 * for the canary's kind of question, scripted answers, a seeded error
 * rate, and thinking.  tests/fakes/README.md ("Known answers") is the
 * contract; gen.c turns the text into tokens.
 *
 * The point is known truth for gpumod's canary and `eval`: a question
 * with one right answer gets it (or, at FAKELLM_ERROR_RATE, a wrong one
 * that never contains it), decided by a hash of the seed and the prompt
 * alone, so that concurrency, order and timing change nothing.  Every
 * prompt this file does not recognise keeps the fixed sentence that the
 * benchmarks count on.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakellm.h"

struct script_line {
    char *match;
    char *answer; /* NULL for an error line */
    int error;    /* HTTP status, 0 for an answer */
    int line;
};

static struct {
    char *file;
    struct script_line *v;
    size_t n;
    double error_rate;
    uint64_t seed;
    enum fk_think think;
} A;

/* ---- the environment and the script ------------------------------------ */

/* One JSONL line; -1 with "FILE:LINE: why" in err. */
static int script_parse_line(const char *text, int lineno, char *err, size_t errlen)
{
    cJSON *j = cJSON_Parse(text);
    int rc = -1;
    if (!cJSON_IsObject(j)) {
        fk_fail(err, errlen, "%s:%d: not a JSON object", A.file, lineno);
        goto out;
    }
    cJSON *it;
    cJSON_ArrayForEach(it, j) {
        const char *k = it->string;
        if (strcmp(k, "match") && strcmp(k, "answer") && strcmp(k, "error") && strcmp(k, "empty")) {
            fk_fail(err, errlen, "%s:%d: unknown key '%s' (match, answer, error, empty)", A.file, lineno, k);
            goto out;
        }
    }
    cJSON *m = cJSON_GetObjectItem(j, "match"), *a = cJSON_GetObjectItem(j, "answer"),
          *e = cJSON_GetObjectItem(j, "error"), *em = cJSON_GetObjectItem(j, "empty");
    if (!cJSON_IsString(m)) {
        fk_fail(err, errlen, "%s:%d: \"match\" must be a string", A.file, lineno);
        goto out;
    }
    if (a && !cJSON_IsString(a)) {
        fk_fail(err, errlen, "%s:%d: \"answer\" must be a string", A.file, lineno);
        goto out;
    }
    if (em && !cJSON_IsTrue(em)) {
        fk_fail(err, errlen, "%s:%d: \"empty\" can only be true", A.file, lineno);
        goto out;
    }
    if (e && (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 400 ||
              e->valuedouble > 599)) {
        fk_fail(err, errlen, "%s:%d: \"error\" must be an HTTP status from 400 to 599", A.file, lineno);
        goto out;
    }
    if (!!a + !!e + !!em != 1) {
        fk_fail(err, errlen, "%s:%d: give exactly one of \"answer\", \"error\" or \"empty\": true", A.file, lineno);
        goto out;
    }
    A.v = xrealloc(A.v, (A.n + 1) * sizeof *A.v);
    struct script_line *s = &A.v[A.n++];
    s->match = xstrdup(m->valuestring);
    s->answer = e ? NULL : xstrdup(a ? a->valuestring : "");
    s->error = e ? (int)e->valuedouble : 0;
    s->line = lineno;
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}

static int script_load(const char *path, char *err, size_t errlen)
{
    A.file = xstrdup(path);
    FILE *f = fopen(path, "r");
    if (!f)
        return fk_fail(err, errlen, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)n)) {
            rc = fk_fail(err, errlen, "%s:%d: a NUL byte", path, lineno);
            break;
        }
        const char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p || *p == '#')
            continue; /* blank lines and # comments */
        rc = script_parse_line(p, lineno, err, errlen);
    }
    if (rc == 0 && ferror(f))
        rc = fk_fail(err, errlen, "%s: %s", path, strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

int answer_init(char *err, size_t errlen)
{
    const char *s = getenv("FAKELLM_ERROR_RATE");
    if (s && *s) {
        char *end;
        errno = 0;
        A.error_rate = strtod(s, &end);
        if (errno || *end || !(A.error_rate >= 0 && A.error_rate <= 1))
            return fk_fail(err, errlen, "FAKELLM_ERROR_RATE='%s': expected a number from 0 to 1", s);
    }
    s = getenv("FAKELLM_SEED");
    if (s && *s) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || *end)
            return fk_fail(err, errlen, "FAKELLM_SEED='%s': expected an integer", s);
        A.seed = (uint64_t)v;
    }
    s = getenv("FAKELLM_THINK");
    if (!s || !*s || strcmp(s, "0") == 0)
        A.think = FK_THINK_OFF;
    else if (strcmp(s, "content") == 0 || strcmp(s, "1") == 0)
        A.think = FK_THINK_CONTENT;
    else if (strcmp(s, "field") == 0)
        A.think = FK_THINK_FIELD;
    else
        return fk_fail(err, errlen, "FAKELLM_THINK='%s': expected content, field or 0", s);
    s = getenv("FAKELLM_SCRIPT");
    if (s && *s && script_load(s, err, errlen) < 0)
        return -1;
    return 0;
}

void answer_release(void)
{
    for (size_t i = 0; i < A.n; i++) {
        free(A.v[i].match);
        free(A.v[i].answer);
    }
    free(A.v);
    free(A.file);
    memset(&A, 0, sizeof A);
}

size_t answer_script_count(void) { return A.n; }

/* ---- the solver ---------------------------------------------------------- */

static const char *skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* An optionally signed decimal integer; NULL if there is none or it
 * overflows. */
static const char *parse_int(const char *p, long long *out)
{
    const char *q = p;
    if (*q == '-' || *q == '+')
        q++;
    if (!isdigit((unsigned char)*q))
        return NULL;
    char *end;
    errno = 0;
    *out = strtoll(p, &end, 10);
    return errno ? NULL : end;
}

/* "A op B?" after "what is": the result, or false. */
static bool solve_arith(const char *p, buf *out)
{
    long long a, b, r;
    p = parse_int(skip_blank(p), &a);
    if (!p)
        return false;
    p = skip_blank(p);
    char op = *p;
    if (op != '+' && op != '-' && op != '*' && op != 'x' && op != 'X')
        return false;
    p = parse_int(skip_blank(p + 1), &b);
    if (!p)
        return false;
    if (*skip_blank(p) != '?')
        return false;
    bool ovf = op == '+' ? __builtin_add_overflow(a, b, &r)
             : op == '-' ? __builtin_sub_overflow(a, b, &r)
                         : __builtin_mul_overflow(a, b, &r);
    if (ovf)
        return false;
    buf_printf(out, "%lld", r);
    return true;
}

static const char *const CAPITALS[][2] = {
    {"France", "Paris"}, {"Japan", "Tokyo"},   {"Italy", "Rome"},    {"Germany", "Berlin"},
    {"Spain", "Madrid"}, {"Canada", "Ottawa"}, {"Egypt", "Cairo"},   {"Kenya", "Nairobi"},
    {"Peru", "Lima"},    {"Norway", "Oslo"},
};

/* "the capital of COUNTRY?" after "what is" */
static bool solve_capital(const char *p, buf *out)
{
    static const char pre[] = "the capital of ";
    p = skip_blank(p);
    if (strncasecmp(p, pre, sizeof pre - 1) != 0)
        return false;
    p = skip_blank(p + sizeof pre - 1);
    const char *q = strchr(p, '?');
    if (!q)
        return false;
    size_t n = (size_t)(q - p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < sizeof CAPITALS / sizeof CAPITALS[0]; i++)
        if (strlen(CAPITALS[i][0]) == n && strncasecmp(p, CAPITALS[i][0], n) == 0) {
            buf_adds(out, CAPITALS[i][1]);
            return true;
        }
    return false;
}

/* The canary's three kinds of question; true with the answer in out. */
static bool solve(const char *text, buf *out)
{
    static const char echo[] = "repeat this exactly, with nothing else:";
    const char *p = strcasestr(text, echo);
    if (p) {
        p += sizeof echo - 1;
        if (*p == ' ')
            p++;
        size_t n = strcspn(p, "\n");
        if (n && p[n - 1] == '\r')
            n--;
        buf_add(out, p, n);
        return true;
    }
    for (p = text; (p = strcasestr(p, "what is")) != NULL; p++) {
        const char *q = p + 7;
        if (*q != ' ' && *q != '\t')
            continue;
        if (solve_arith(q, out) || solve_capital(q, out))
            return true;
    }
    return false;
}

/* ---- the error rate ------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static bool decide_wrong(const char *prompt, bool has_seed, int64_t req_seed)
{
    if (A.error_rate <= 0)
        return false;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 of the prompt */
    for (const unsigned char *p = (const unsigned char *)prompt; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    uint64_t x = mix64(h ^ mix64(A.seed ^ 0x5eedull));
    if (has_seed)
        x = mix64(x ^ mix64((uint64_t)req_seed ^ 0x7e9ull));
    double u = (double)(x >> 11) / (double)(1ull << 53);
    return u < A.error_rate;
}

/* A wrong answer that never contains the right one (ASCII case ignored):
 * an integer becomes a larger integer, any other text a fixed word. */
static char *wrong_answer(const char *right)
{
    char *end;
    errno = 0;
    long long v = strtoll(right, &end, 10);
    if (*right && !isspace((unsigned char)*right) && !*end && !errno) {
        for (long long d = 1; d < 1000; d++) {
            long long w;
            if (__builtin_add_overflow(v, d, &w))
                break;
            char *s = xasprintf("%lld", w);
            if (!strcasestr(s, right))
                return s;
            free(s);
        }
    }
    static const char *const words[] = {"wrong-answer", "incorrect", "nope", "zzz"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcasestr(words[i], right))
            return xstrdup(words[i]);
    /* right is short and shares letters with all of those: one character
     * it does not contain cannot contain it */
    for (const char *c = "0123456789qjkvwxyz"; *c; c++)
        if (!strchr(right, *c) && !strchr(right, toupper((unsigned char)*c)))
            return xasprintf("%c", *c);
    return xstrdup("wrong-answer");
}

/* ---- the request --------------------------------------------------------- */

/* The text a question is looked for in: the last user message (its
 * string, or the text of its parts joined by newlines), or the
 * completion's prompt (an array's strings joined by newlines). */
static void question_text(enum gen_api api, cJSON *body, buf *out)
{
    cJSON *x;
    if (api != GEN_CHAT) {
        cJSON *p = cJSON_GetObjectItem(body, "prompt");
        if (cJSON_IsString(p)) {
            buf_adds(out, p->valuestring);
            return;
        }
        cJSON *arr = cJSON_IsArray(p) ? p : NULL;
        cJSON_ArrayForEach(x, arr) {
            if (cJSON_IsString(x)) {
                if (out->len)
                    buf_addc(out, '\n');
                buf_adds(out, x->valuestring);
            }
        }
        return;
    }
    cJSON *last = NULL;
    cJSON *msgs = cJSON_GetObjectItem(body, "messages");
    cJSON_ArrayForEach(x, msgs) {
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(x, "role"));
        if (role && strcmp(role, "user") == 0)
            last = x;
    }
    cJSON *c = last ? cJSON_GetObjectItem(last, "content") : NULL;
    if (cJSON_IsString(c)) {
        buf_adds(out, c->valuestring);
        return;
    }
    cJSON *parts = cJSON_IsArray(c) ? c : NULL;
    cJSON_ArrayForEach(x, parts) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(x, "text"));
        if (t) {
            if (out->len)
                buf_addc(out, '\n');
            buf_adds(out, t);
        }
    }
}

static bool thinking_wanted(enum gen_api api, cJSON *body)
{
    if (A.think == FK_THINK_OFF || api != GEN_CHAT)
        return false;
    cJSON *kw = cJSON_GetObjectItem(body, "chat_template_kwargs");
    return !cJSON_IsFalse(cJSON_GetObjectItem(kw, "enable_thinking"));
}

void answer_for(enum gen_api api, cJSON *body, struct fk_answer *a)
{
    memset(a, 0, sizeof *a);
    if (fk.env.garbage)
        return; /* garbage wins over everything: the sentence's counts, no meaning */
    buf q = BUF_INIT, out = BUF_INIT;
    question_text(api, body, &q);
    bool from_script = false;
    for (size_t i = 0; i < A.n; i++) {
        if (!strstr(q.p, A.v[i].match))
            continue;
        a->where = xasprintf("%s:%d", A.file, A.v[i].line);
        if (A.v[i].error) {
            a->error = A.v[i].error;
            goto out;
        }
        buf_adds(&out, A.v[i].answer);
        from_script = true;
        break;
    }
    a->known = from_script || solve(q.p, &out);
    if (a->known) {
        a->text = buf_detach(&out);
        cJSON *seed = cJSON_GetObjectItem(body, "seed");
        /* an empty scripted answer is already a failure: it stays empty */
        if (*a->text && decide_wrong(q.p, cJSON_IsNumber(seed), cJSON_IsNumber(seed) ? (int64_t)seed->valuedouble : 0)) {
            a->right = a->text;
            a->text = wrong_answer(a->right);
        }
    }
    if (thinking_wanted(api, body)) {
        const char *right = a->right ? a->right : a->text;
        a->reasoning = a->known && *right
            ? xasprintf("The user asks a question with a known answer. I think it is %s, so I answer with that alone.", right)
            : a->known ? xstrdup("The user asks a question with a known answer. I answer with that alone.")
                       : xstrdup("The user did not ask a question I know the answer to. I will tell the usual story.");
        a->think = A.think;
    }
out:
    buf_release(&q);
    buf_release(&out);
}

void answer_release_one(struct fk_answer *a)
{
    free(a->where);
    free(a->text);
    free(a->right);
    free(a->reasoning);
    memset(a, 0, sizeof *a);
}
