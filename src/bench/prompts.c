/* prompts.c - what bench sends: synthetic prompts of an exact token
 * count, JSONL prompt files, and the request bodies.
 *
 * Synthetic text is a stream of common words drawn from the seed, so a
 * run is reproducible and the text tokenizes like prose.  Its length is
 * found in words by asking the server's own tokenizer (/tokenize) a few
 * times: a proportional first guess, then a bisection on the word count
 * (as vLLM's benchmark does since PR #44708), never by a client-side
 * tokenizer.  The chat template adds tokens on top; the caller reads the
 * final count from the first response's usage.  Each request gets a
 * fixed-width number in front ("[00000042] ") so that a server's prompt
 * cache cannot turn a load run into a cache benchmark. */
#include "bench/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bstats.h"
#include "util/buf.h"
#include "util/errf.h"

static const char *const words[] = {
    "the",     "time",   "people", "way",    "water",  "world",  "house",   "light",  "number", "river",
    "mountain", "city",  "garden", "story",  "music",  "paper",  "window",  "morning", "evening", "road",
    "field",   "stone",  "forest", "island", "winter", "summer", "market",  "letter", "table",  "bridge",
    "silver",  "green",  "quiet",  "simple", "early",  "small",  "bright",  "open",   "careful", "distant",
    "and",     "of",     "to",     "in",     "with",   "from",   "under",   "over",   "after",  "before",
    "walks",   "finds",  "builds", "keeps",  "reads",  "writes", "carries", "follows", "brings", "turns",
    "slowly",  "often",  "again",  "together",
};
#define N_WORDS (sizeof words / sizeof words[0])

static void words_append(buf *b, uint64_t *st, size_t m)
{
    for (size_t i = 0; i < m; i++) {
        uint64_t r = brng_next(st);
        if (b->len) buf_addc(b, (i % 13 == 12) ? '\n' : ' ');
        buf_adds(b, words[r % N_WORDS]);
        if (i % 13 == 11) buf_addc(b, '.');
    }
}

char *bprompt_words(uint64_t seed, size_t m)
{
    buf b = BUF_INIT;
    uint64_t st = seed ^ 0x9e3779b97f4a7c15ull;
    words_append(&b, &st, m);
    return buf_detach(&b);
}

static char *with_prefix(const char *prefix, uint64_t seed, size_t m)
{
    char *w = bprompt_words(seed, m);
    char *s = xasprintf("%s%s", prefix ? prefix : "", w);
    free(w);
    return s;
}

char *bprompt_synth(const char *prefix, long n_tokens, uint64_t seed, btok_fn tok, void *ud, long *got,
                    bool *exact, char *err, size_t errlen)
{
    if (n_tokens < 1) n_tokens = 1;
    if (!tok) {
        /* about 4 characters a token: words until the length is reached */
        size_t want = (size_t)n_tokens * 4, plen = prefix ? strlen(prefix) : 0;
        buf b = BUF_INIT;
        uint64_t st = seed ^ 0x9e3779b97f4a7c15ull;
        while (b.len + plen < want) words_append(&b, &st, 1);
        char *s = xasprintf("%s%s", prefix ? prefix : "", b.p);
        buf_release(&b);
        *got = n_tokens;
        *exact = false;
        return s;
    }
    /* f(m) = tokens of prefix + m words: nondecreasing in m.  Find the
     * largest m with f(m) <= n. */
    long n0 = 0;
    char *s = with_prefix(prefix, seed, 0);
    int rc = tok(ud, s, &n0, err, errlen);
    free(s);
    if (rc) return NULL;
    if (n0 >= n_tokens) {
        *got = n0;
        *exact = n0 == n_tokens;
        return with_prefix(prefix, seed, 0);
    }
    size_t lo = 0, hi = 0; /* f(lo) <= n; f(hi) > n once known (hi 0: unknown) */
    long flo = n0;
    size_t m = (size_t)(n_tokens - n0); /* a first guess: a word a token */
    for (int calls = 0; calls < 40; calls++) {
        long f = 0;
        s = with_prefix(prefix, seed, m);
        rc = tok(ud, s, &f, err, errlen);
        free(s);
        if (rc) return NULL;
        if (f == n_tokens) {
            *got = f;
            *exact = true;
            return with_prefix(prefix, seed, m);
        }
        if (f < n_tokens) {
            lo = m;
            flo = f;
        } else {
            hi = m;
        }
        if (hi && hi - lo <= 1) break;
        size_t next;
        if (!hi) {
            /* proportional growth from what a word cost so far */
            double per = (double)(f - n0) / (double)(m ? m : 1);
            if (per <= 0) per = 1;
            next = m + (size_t)((double)(n_tokens - f) / per) + 1;
            if (next <= m) next = m + 1;
        } else if (f < n_tokens && m == lo) {
            double per = (double)(f - n0) / (double)(m ? m : 1);
            if (per <= 0) per = 1;
            next = m + (size_t)((double)(n_tokens - f) / per + 0.5);
            if (next <= lo) next = lo + 1;
            if (next >= hi) next = lo + (hi - lo) / 2;
        } else {
            double per = (double)(f - n0) / (double)(m ? m : 1);
            if (per <= 0) per = 1;
            size_t back = (size_t)((double)(f - n_tokens) / per + 0.5);
            next = m > back ? m - back : lo;
            if (next <= lo || next >= hi) next = lo + (hi - lo) / 2;
        }
        m = next;
    }
    *got = flo;
    *exact = flo == n_tokens;
    return with_prefix(prefix, seed, lo);
}

void bprompt_prefix(char *out, size_t n, uint64_t i)
{
    snprintf(out, n, "[%08" PRIu64 "] ", i % 100000000u);
}

/* ---- JSONL --------------------------------------------------------------- */

static bool messages_ok(const cJSON *m, char *why, size_t n)
{
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) == 0) {
        snprintf(why, n, "\"messages\" must be a non-empty array");
        return false;
    }
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, m) {
        if (!cJSON_IsObject(x) || !cJSON_IsString(cJSON_GetObjectItem(x, "role"))) {
            snprintf(why, n, "messages[%d] must be an object with a string \"role\"", i);
            return false;
        }
        const cJSON *c = cJSON_GetObjectItem(x, "content");
        if (!cJSON_IsString(c) && !cJSON_IsArray(c)) {
            snprintf(why, n, "messages[%d] must have \"content\" (a string or an array of parts)", i);
            return false;
        }
        i++;
    }
    return true;
}

int bprompts_load_jsonl(bprompts *out, const char *path, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        errf(err, errlen, "--prompts '%s': cannot open: %s", path, strerror(errno));
        return -1;
    }
    buf errs = BUF_INIT;
    size_t cap = 0, bad = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    long lineno = 0;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        size_t l = (size_t)len;
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
            line[--l] = 0;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) continue;
        char why[200] = "";
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(p, &end, true);
        bprompt bp = {NULL, NULL, -1};
        if (!j) {
            snprintf(why, sizeof why, "not JSON (at byte %ld): expected one object per line",
                     (long)(end ? end - line : cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - line : 0) + 1);
        } else if (!cJSON_IsObject(j)) {
            snprintf(why, sizeof why, "expected an object {\"prompt\": ...} or {\"messages\": [...]}");
        } else {
            const cJSON *pr = cJSON_GetObjectItem(j, "prompt"), *ms = cJSON_GetObjectItem(j, "messages");
            const cJSON *mt = cJSON_GetObjectItem(j, "max_tokens");
            if (pr && ms)
                snprintf(why, sizeof why, "has both \"prompt\" and \"messages\": expected one of them");
            else if (pr && !cJSON_IsString(pr))
                snprintf(why, sizeof why, "\"prompt\" must be a string");
            else if (!pr && !ms)
                snprintf(why, sizeof why, "expected \"prompt\" (a string) or \"messages\" (an array)");
            else if (ms && !messages_ok(ms, why, sizeof why))
                ;
            else if (mt && (!cJSON_IsNumber(mt) || mt->valuedouble < 1 || mt->valuedouble != (double)(long)mt->valuedouble ||
                            mt->valuedouble > 1e9))
                snprintf(why, sizeof why, "\"max_tokens\" must be a positive integer");
            else {
                if (pr) bp.text = xstrdup(pr->valuestring);
                if (ms) bp.messages = cJSON_Duplicate(ms, true);
                if (mt) bp.max_tokens = (long)mt->valuedouble;
            }
        }
        cJSON_Delete(j);
        if (why[0]) {
            bad++;
            if (bad <= 20) buf_printf(&errs, "%s%s:%ld: %s", errs.len ? "\n" : "", path, lineno, why);
            continue;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            out->v = xrealloc(out->v, cap * sizeof *out->v);
        }
        out->v[out->n++] = bp;
    }
    int rerr = ferror(f);
    fclose(f);
    free(line);
    if (bad > 20) buf_printf(&errs, "\n%s: %zu more bad lines", path, bad - 20);
    if (!bad && rerr) buf_printf(&errs, "--prompts '%s': read error", path);
    if (!bad && !rerr && out->n == 0) buf_printf(&errs, "--prompts '%s': no prompt in the file (expected one JSON object per line)", path);
    if (errs.len) {
        errf(err, errlen, "%s", errs.p);
        buf_release(&errs);
        bprompts_release(out);
        return -1;
    }
    buf_release(&errs);
    return 0;
}

void bprompts_release(bprompts *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].text);
        cJSON_Delete(p->v[i].messages);
    }
    free(p->v);
    memset(p, 0, sizeof *p);
}

/* ---- bodies -------------------------------------------------------------- */

char *bbody_json(const bbody_opts *o, const char *prefix, const bprompt *p)
{
    cJSON *j = cJSON_CreateObject();
    if (o->model) cJSON_AddStringToObject(j, "model", o->model);
    const char *pre = prefix ? prefix : "";
    if (o->chat) {
        cJSON *ms;
        if (p->messages) {
            ms = cJSON_Duplicate(p->messages, true);
            cJSON *first = cJSON_GetArrayItem(ms, 0);
            cJSON *c = cJSON_GetObjectItem(first, "content");
            if (*pre && cJSON_IsString(c)) {
                char *s = xasprintf("%s%s", pre, c->valuestring);
                cJSON_ReplaceItemInObject(first, "content", cJSON_CreateString(s));
                free(s);
            }
        } else {
            ms = cJSON_CreateArray();
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "role", "user");
            char *s = xasprintf("%s%s", pre, p->text ? p->text : "");
            cJSON_AddStringToObject(m, "content", s);
            free(s);
            cJSON_AddItemToArray(ms, m);
        }
        cJSON_AddItemToObject(j, "messages", ms);
    } else {
        buf t = BUF_INIT;
        buf_adds(&t, pre);
        if (p->text) {
            buf_adds(&t, p->text);
        } else if (p->messages) { /* completions: the contents, one per line */
            const cJSON *m;
            cJSON_ArrayForEach(m, p->messages) {
                const cJSON *c = cJSON_GetObjectItem(m, "content");
                if (cJSON_IsString(c)) buf_printf(&t, "%s\n", c->valuestring);
            }
        }
        cJSON_AddStringToObject(j, "prompt", t.p);
        buf_release(&t);
    }
    cJSON_AddNumberToObject(j, "max_tokens", (double)(p->max_tokens > 0 ? p->max_tokens : o->max_tokens));
    cJSON_AddTrueToObject(j, "stream");
    cJSON *so = cJSON_AddObjectToObject(j, "stream_options");
    cJSON_AddTrueToObject(so, "include_usage");
    cJSON_AddTrueToObject(so, "continuous_usage_stats");
    cJSON_AddTrueToObject(j, "ignore_eos");
    cJSON_AddNumberToObject(j, "temperature", 0);
    if (o->llamacpp) cJSON_AddTrueToObject(j, "timings_per_token");
    if (o->cache_prompt >= 0) cJSON_AddBoolToObject(j, "cache_prompt", o->cache_prompt != 0);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* ---- the server's tokenizer ---------------------------------------------- */

int bprompt_tokenize_http(void *ud, const char *text, long *n, char *err, size_t errlen)
{
    const btarget *t = ud;
    if (!t->tokenize_url) {
        errf(err, errlen, "the server has no /tokenize");
        return -1;
    }
    cJSON *j = cJSON_CreateObject();
    if (t->flavor && !strcmp(t->flavor, "vllm")) {
        if (t->model) cJSON_AddStringToObject(j, "model", t->model);
        cJSON_AddStringToObject(j, "prompt", text);
    } else {
        cJSON_AddStringToObject(j, "content", text);
    }
    char *body = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    bfetch f;
    int rc = bfetch_do(t->tokenize_url, btarget_headers(t), body, 30000, &f);
    free(body);
    if (rc) {
        errf(err, errlen, "%s", f.err);
        bfetch_release(&f);
        return -1;
    }
    if (f.status != 200) {
        errf(err, errlen, "POST %s: HTTP %d", t->tokenize_url, f.status);
        bfetch_release(&f);
        return -1;
    }
    cJSON *r = cJSON_Parse(f.body.p);
    bfetch_release(&f);
    const cJSON *toks = cJSON_GetObjectItem(r, "tokens"), *cnt = cJSON_GetObjectItem(r, "count");
    if (cJSON_IsNumber(cnt)) {
        *n = (long)cnt->valuedouble;
    } else if (cJSON_IsArray(toks)) {
        *n = cJSON_GetArraySize(toks);
    } else {
        cJSON_Delete(r);
        errf(err, errlen, "POST %s: expected {\"tokens\": [...]} in the reply", t->tokenize_url);
        return -1;
    }
    cJSON_Delete(r);
    return 0;
}

bool bprompt_has_tokenizer(btarget *t)
{
    long n = 0;
    char err[256];
    if (t->tokenize_url && bprompt_tokenize_http(t, "hello world", &n, err, sizeof err) == 0 && n > 0) return true;
    free(t->tokenize_url);
    t->tokenize_url = NULL;
    return false;
}
