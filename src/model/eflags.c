/* eflags.c - the estimator's flags (see eflags.h). */
#include "model/eflags.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ggml_type.h"

static int opt_val(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n)) return 0;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n]) return 0;
    *val = *i + 1 < argc ? argv[++*i] : NULL;
    return 1;
}

static int int_arg(const char *opt, const char *val, int64_t lo, int64_t hi, int64_t *out,
                   char *err, size_t errlen)
{
    char *end;
    long long v = val ? strtoll(val, &end, 10) : 0;
    if (!val || !*val || *end || v < lo || v > hi) {
        snprintf(err, errlen, "%s: expected an integer in %lld..%lld, found '%s'", opt,
                 (long long)lo, (long long)hi, val ? val : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int cache_type(char which, const char *v, uint32_t *out, char *err, size_t errlen)
{
    int t = v ? ggml_type_by_name(v) : -1;
    if (t < 0) {
        snprintf(err, errlen,
                 "--cache-type-%c: unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_1, "
                 "iq4_nl, q5_0, q5_1)",
                 which, v ? v : "");
        return -1;
    }
    *out = (uint32_t)t;
    return 0;
}

static int flash_attn(const char *v, int *out, char *err, size_t errlen)
{
    if (v && !strcmp(v, "on"))
        *out = 1;
    else if (v && !strcmp(v, "off"))
        *out = 0;
    else if (v && !strcmp(v, "auto"))
        *out = -1;
    else {
        snprintf(err, errlen, "--flash-attn: expected on, off or auto, found '%s'", v ? v : "");
        return -1;
    }
    return 0;
}

int est_flag_parse(int argc, char **argv, int *i, est_params *ep, unsigned *given, char *err,
                   size_t errlen)
{
    const char *v;
    int64_t x;
    if (opt_val(argc, argv, i, "--ctx", &v) || opt_val(argc, argv, i, "-c", &v)) {
        if (int_arg("--ctx", v, 1, 16777216, &x, err, errlen)) return -1;
        ep->ctx = x;
        *given |= EST_GIVEN_CTX;
    } else if (opt_val(argc, argv, i, "--parallel", &v)) {
        if (int_arg("--parallel", v, 1, 4096, &x, err, errlen)) return -1;
        ep->parallel = x;
        *given |= EST_GIVEN_PARALLEL;
    } else if (opt_val(argc, argv, i, "--cache-type-k", &v) || opt_val(argc, argv, i, "-ctk", &v)) {
        if (cache_type('k', v, &ep->type_k, err, errlen)) return -1;
        *given |= EST_GIVEN_CTK;
    } else if (opt_val(argc, argv, i, "--cache-type-v", &v) || opt_val(argc, argv, i, "-ctv", &v)) {
        if (cache_type('v', v, &ep->type_v, err, errlen)) return -1;
        *given |= EST_GIVEN_CTV;
    } else if (opt_val(argc, argv, i, "--ngl", &v) || opt_val(argc, argv, i, "-ngl", &v)) {
        if (v && !strcmp(v, "all"))
            ep->ngl = -1;
        else if (int_arg("--ngl", v, -1, 100000, &x, err, errlen))
            return -1;
        else
            ep->ngl = x;
        *given |= EST_GIVEN_NGL;
    } else if (opt_val(argc, argv, i, "--n-cpu-moe", &v)) {
        if (int_arg("--n-cpu-moe", v, 0, 100000, &x, err, errlen)) return -1;
        ep->n_cpu_moe = x;
        *given |= EST_GIVEN_NCMOE;
    } else if (opt_val(argc, argv, i, "--flash-attn", &v) || opt_val(argc, argv, i, "-fa", &v)) {
        if (flash_attn(v, &ep->flash_attn, err, errlen)) return -1;
        *given |= EST_GIVEN_FA;
    } else {
        return 0;
    }
    return 1;
}
