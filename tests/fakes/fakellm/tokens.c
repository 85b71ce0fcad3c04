/* tokens.c - fakellm's one token rule, the text it "generates" and its
 * embeddings.
 *
 * The rule (tests/fakes/README.md repeats it): a token is a maximal run
 * of bytes that are not ASCII whitespace (space, \t, \n, \v, \f, \r).
 * "Hello,  world!\n" is 2 tokens; "" is 0.  A token's id is the 32-bit
 * FNV-1a hash of its bytes modulo 32000 (the vocabulary size).  Every
 * count fakellm reports - /tokenize, usage.prompt_tokens, timings, the
 * context check - goes through tok_each(), so a test can predict it
 * with `wc -w`.  The rule ignores chat templates and special tokens on
 * purpose: a count a test can compute beats a count that looks real.
 *
 * Generated text is the 16 words of SENTENCE, cycling; token k is word
 * k % 16 with a leading space except for k == 0, so the generated text
 * tokenizes back to exactly the number of tokens generated.
 */
#include <math.h>
#include <string.h>

#include "fakellm.h"

#define N_VOCAB 32000

static const char *const SENTENCE[FK_EOS_AFTER] = {
    "Once", "upon", "a", "time", "a", "small", "model", "loaded",
    "in", "the", "fake", "server", "and", "answered", "every", "request.",
};

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

void tok_each(const char *s, void (*fn)(const char *w, size_t n, void *arg), void *arg)
{
    while (*s) {
        while (*s && is_space(*s))
            s++;
        const char *w = s;
        while (*s && !is_space(*s))
            s++;
        if (s > w)
            fn(w, (size_t)(s - w), arg);
    }
}

static void count_one(const char *w, size_t n, void *arg)
{
    (*(size_t *)arg)++;
}

size_t tok_count(const char *s)
{
    size_t n = 0;
    tok_each(s, count_one, &n);
    return n;
}

uint32_t tok_id(const char *w, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)w[i];
        h *= 16777619u;
    }
    return h % N_VOCAB;
}

const char *tok_word(uint32_t id)
{
    for (size_t i = 0; i < FK_EOS_AFTER; i++)
        if (tok_id(SENTENCE[i], strlen(SENTENCE[i])) == id)
            return SENTENCE[i];
    return NULL;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Garbage is what a broken kernel emits: runs of punctuation and stray
 * letters.  It stays printable ASCII so that it is valid JSON and UTF-8
 * (the canary must judge the text, not choke on the bytes).  No digits
 * and only the letters q x z j: no run of it can contain a canary's
 * answer ("42", "Paris", "gpumod-canary-7f3a") or a capital. */
void tok_piece(buf *out, unsigned k, bool garbage, uint64_t *rng)
{
    if (garbage) {
        static const char junk[] = "!#$%&*+/<=>?@^_|~qxzjQXZJ";
        int n = 1 + (int)(xorshift(rng) % 4);
        for (int i = 0; i < n; i++)
            buf_addc(out, junk[xorshift(rng) % (sizeof junk - 1)]);
        return;
    }
    if (k)
        buf_addc(out, ' ');
    buf_adds(out, SENTENCE[k % FK_EOS_AFTER]);
}

struct emb_seed {
    uint64_t h;
};

static void hash_token(const char *w, size_t n, void *arg)
{
    struct emb_seed *e = arg;
    e->h = (e->h ^ tok_id(w, n)) * 0x100000001b3ull;
}

/* Same tokens -> same unit vector; different inputs almost surely give
 * different ones.  FAKELLM_GARBAGE: the zero vector for every input (the
 * right length and finite, but every input the same: what the embedding
 * canary must catch). */
void tok_embedding(const char *s, float *v, int dim)
{
    if (fk.env.garbage) {
        for (int i = 0; i < dim; i++)
            v[i] = 0;
        return;
    }
    struct emb_seed e = {0xcbf29ce484222325ull};
    tok_each(s, hash_token, &e);
    uint64_t rng = e.h;
    double norm = 0;
    for (int i = 0; i < dim; i++) {
        v[i] = (float)((double)(xorshift(&rng) >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
        norm += (double)v[i] * v[i];
    }
    norm = sqrt(norm);
    for (int i = 0; i < dim; i++)
        v[i] = (float)(v[i] / norm);
}
