/* speed.c - fakellm's speed model: FAKELLM_SPEED and FAKELLM_SPEED_NOISE.
 *
 * `gpumod tune` (issue 18) searches flags and environment for the fastest
 * setting, and its tests need an engine whose speed is a known function
 * of exactly those: this file turns a spec such as
 *
 *   base=100; threads=8:+20,16:-5; cache_type_k=q8_0:-15%; env.X=1:+6.25
 *
 * into tokens/s once at start, from the argv main.c parsed (fk_flag) and
 * the environment:  (base + the matching absolute terms) * the product of
 * (1 + pct/100) over the matching percent terms.  Noise is drawn per
 * request from a hash of FAKELLM_SEED and the prompt's text, never from a
 * clock, so the same prompt and seed give the same speed in any order,
 * at any load and across restarts.  gen.c paces tokens at that rate and
 * reports llama-server's `timings` computed from it, not measured: a busy
 * test machine cannot move the figure a tune test compares.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakellm.h"

#define SPEED_DEFAULT_BASE 100.0
#define NOISE_FLOOR 0.1 /* a noisy draw never goes below 10 % of the speed */

static struct {
    bool on;
    double tps;     /* the resolved speed */
    double noise;   /* relative sigma */
    uint64_t seed;
    buf why;        /* "base 100; threads=8 +20" for the log line */
} S;

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

static bool parse_num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* "10" and "10.0", "0.9" and "0.90" are the same value */
static bool same_value(const char *given, const char *want)
{
    double a, b;
    if (strcmp(given, want) == 0)
        return true;
    return parse_num(given, &a) && parse_num(want, &b) && a == b;
}

/* What the term's key names: a flag of the mode's table or env.NAME.
 * *val is what this process was given (NULL: not given). */
static int key_value(const char *key, const char **val, char *err, size_t errlen, const char *term)
{
    if (strncmp(key, "env.", 4) == 0) {
        if (!key[4])
            return fk_fail(err, errlen, "FAKELLM_SPEED: term '%s': env. needs a variable name", term);
        *val = getenv(key + 4);
        return 0;
    }
    if (fk_flag(key, val) < 0)
        return fk_fail(err, errlen, "FAKELLM_SPEED: term '%s': '%s' is no flag of %s (write it as "
                    "llama-server / vllm spell it, without dashes: threads, cache_type_k, max_num_seqs)",
                    term, key, fk.cfg.mode == FK_VLLM ? "vllm serve" : "llama-server");
    return 0;
}

/* One "VALUE:DELTA" alternative; a delta is [+-]N or [+-]N%.  VALUE is
 * what precedes the last ':' (a value may hold one). */
static int parse_alt(char *alt, char **value, double *delta, bool *pct, char *err, size_t errlen,
                     const char *term)
{
    char *shown = xstrdup(trim(alt));
    char *colon = strrchr(alt, ':');
    int rc = 0;
    if (colon) {
        *colon = '\0';
        *value = trim(alt);
        char *d = trim(colon + 1);
        size_t n = strlen(d);
        *pct = n && d[n - 1] == '%';
        if (*pct)
            d[n - 1] = '\0';
        if (!**value || !parse_num(d, delta))
            colon = NULL;
    }
    if (!colon)
        rc = fk_fail(err, errlen, "FAKELLM_SPEED: term '%s': '%s' is not VALUE:DELTA (e.g. 8:+20 or q8_0:-15%%)",
                  term, shown);
    free(shown);
    return rc;
}

/* One "KEY=V:D,V:D" term: adds what matches to *abs / *mul. */
static int apply_term(char *term, double *base, double *abs, double *mul, char *err, size_t errlen)
{
    char *copy = xstrdup(term); /* the term as written, for messages */
    int rc = -1;
    char *eq = strchr(term, '=');
    if (!eq) {
        fk_fail(err, errlen, "FAKELLM_SPEED: term '%s': expected KEY=VALUE:DELTA,... or base=N", copy);
        goto out;
    }
    *eq = '\0';
    char *key = trim(term), *rest = eq + 1;
    if (strcmp(key, "base") == 0) {
        if (!parse_num(trim(rest), base) || *base <= 0) {
            fk_fail(err, errlen, "FAKELLM_SPEED: term '%s': base must be a number above 0", copy);
            goto out;
        }
        rc = 0;
        goto out;
    }
    const char *given = NULL;
    if (key_value(key, &given, err, errlen, copy) < 0)
        goto out;
    if (!*trim(rest)) {
        fk_fail(err, errlen, "FAKELLM_SPEED: term '%s': no VALUE:DELTA after '='", copy);
        goto out;
    }
    char *save = NULL;
    for (char *alt = strtok_r(rest, ",", &save); alt; alt = strtok_r(NULL, ",", &save)) {
        char *value = NULL;
        double delta = 0;
        bool pct = false;
        if (parse_alt(alt, &value, &delta, &pct, err, errlen, copy) < 0)
            goto out;
        if (!given || !same_value(given, value))
            continue;
        if (pct)
            *mul *= 1 + delta / 100;
        else
            *abs += delta;
        buf_printf(&S.why, "; %s=%s %+g%s", key, value, delta, pct ? "%" : "");
    }
    rc = 0;
out:
    free(copy);
    return rc;
}

static int parse_spec(const char *spec, char *err, size_t errlen)
{
    double base = SPEED_DEFAULT_BASE, abs = 0, mul = 1;
    char *s = xstrdup(spec), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(s, ";", &save); t && rc == 0; t = strtok_r(NULL, ";", &save)) {
        t = trim(t);
        if (*t)
            rc = apply_term(t, &base, &abs, &mul, err, errlen);
    }
    free(s);
    if (rc < 0)
        return -1;
    S.tps = (base + abs) * mul;
    buf b = BUF_INIT;
    buf_printf(&b, "base %g%s", base, S.why.p ? S.why.p : "");
    buf_release(&S.why);
    S.why = b;
    if (!(S.tps > 0))
        return fk_fail(err, errlen, "FAKELLM_SPEED='%s': resolves to %g tokens/s here (%s): it must be above 0",
                    spec, S.tps, S.why.p);
    return 0;
}

int speed_init(char *err, size_t errlen)
{
    buf_init(&S.why);
    const char *spec = getenv("FAKELLM_SPEED");
    const char *noise = getenv("FAKELLM_SPEED_NOISE");
    const char *seed = getenv("FAKELLM_SEED");
    if (seed && *seed) /* answer.c has checked it */
        S.seed = (uint64_t)strtoll(seed, NULL, 10);
    if (noise && *noise && (!parse_num(noise, &S.noise) || S.noise < 0 || S.noise >= 1))
        return fk_fail(err, errlen, "FAKELLM_SPEED_NOISE='%s': expected a number from 0 to below 1 "
                    "(the relative standard deviation)", noise);
    S.tps = SPEED_DEFAULT_BASE; /* without a spec: what llama-bench mode reports */
    if (!spec || !*spec)
        return 0;
    if (parse_spec(spec, err, errlen) < 0)
        return -1;
    S.on = true;
    return 0;
}

void speed_release(void)
{
    buf_release(&S.why);
}

bool speed_on(void)
{
    return S.on;
}

void speed_log(void)
{
    if (S.on)
        fk_log('I', "srv:speed", "%.3f tokens/s from FAKELLM_SPEED (%s), noise %g, seed %lld", S.tps,
               S.why.p, S.noise, (long long)S.seed);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A uniform in (0, 1), never 0 (Box-Muller takes its log). */
static double unit(uint64_t x)
{
    return ((double)(x >> 11) + 0.5) / (double)(1ull << 53);
}

double speed_for(const char *prompt)
{
    if (S.noise <= 0)
        return S.tps;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 of the prompt */
    for (const unsigned char *p = (const unsigned char *)prompt; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    uint64_t x = mix64(h ^ mix64(S.seed ^ 0x5bee0dull));
    double u1 = unit(x), u2 = unit(mix64(x ^ 0x2545f4914f6cdd1dull));
    double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
    double r = S.tps * (1 + S.noise * z);
    return r < S.tps * NOISE_FLOOR ? S.tps * NOISE_FLOOR : r;
}
