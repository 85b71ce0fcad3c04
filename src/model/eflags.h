/* eflags.h - the estimator's flags as llama-server spells them, parsed in
 * one place for every command that takes them (`model inspect`,
 * `simulate service`, `model fit`, `preset new`):
 *   --ctx/-c N  --parallel N  --cache-type-k/-ctk T  --cache-type-v/-ctv T
 *   --ngl/-ngl N|all  --n-cpu-moe N  --flash-attn/-fa on|off|auto
 * each as "--flag VALUE" or "--flag=VALUE". */
#ifndef GPUMOD_MODEL_EFLAGS_H
#define GPUMOD_MODEL_EFLAGS_H

#include <stddef.h>

#include "model/estimate.h"

enum {
    EST_GIVEN_CTX = 1,
    EST_GIVEN_PARALLEL = 2,
    EST_GIVEN_CTK = 4,
    EST_GIVEN_CTV = 8,
    EST_GIVEN_NGL = 16,
    EST_GIVEN_NCMOE = 32,
    EST_GIVEN_FA = 64
};

/* 1 when argv[*i] was one of the flags (*i advanced past its value, ep and
 * *given updated), 0 when it is not one, -1 with err ("--ctx: expected an
 * integer in 1..16777216, found 'x'") when its value is wrong. */
int est_flag_parse(int argc, char **argv, int *i, est_params *ep, unsigned *given, char *err,
                   size_t errlen);

#endif
