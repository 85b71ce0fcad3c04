/* quality.h (tune) - the quality constraint through gpumod eval: a suite
 * run against the engine's port (this helper run as gpumod-eval, never a
 * shell), and eval's own paired comparison of two results. */
#ifndef GPUMOD_TUNE_QUALITY_H
#define GPUMOD_TUNE_QUALITY_H

#include <stddef.h>

#include "tune/measure.h"

/* 0 with the result document at out_json, or -1 with err. */
/* cancel (may be NULL): when it turns non-zero the eval is killed. */
int tune_eval_run(const tune_load *l, const char *suite, const char *out_json, const volatile int *cancel, char *err,
                  size_t errlen);
/* eval compare A B: 0 B is no worse (summary in msg), 1 worse (msg says
 * how), -1 the comparison failed (msg says why). */
int tune_eval_compare(const char *a, const char *b, char *msg, size_t msglen);

#endif
