/* redact.h - hide secret values in argv and environment vectors before
 * they are shown (`config show`, logs, API answers).  The placeholder is
 * the literal "<redacted>". */
#ifndef GPUMOD_REDACT_H
#define GPUMOD_REDACT_H

#include <stdbool.h>

#include "util/strv.h"

#define REDACTED "<redacted>"

/* Whether a flag or variable name (leading dashes ignored, any case) names
 * a secret: one of its words ('-', '_' and '.' separate words) contains
 * SECRET, PASSWORD, PASSWD or CREDENTIAL, ends in KEY or KEYS, ends in
 * TOKEN, or is AUTH / AUTHORIZATION.  "--api-key", "HF_TOKEN",
 * "GPUMOD_API_KEYS", "DB_PASSWD" are secret; "--tokenizer",
 * "--max-num-batched-tokens", "--cache-type-k" are not. */
bool redact_is_secret_name(const char *name);

/* In place: "--api-key X" -> "--api-key <redacted>", "--api-key=X" ->
 * "--api-key=<redacted>", and an environment-style word "HF_TOKEN=X" (as
 * after docker's -e) -> "HF_TOKEN=<redacted>". */
void redact_argv(strv *argv);

/* In place, for KEY=VALUE entries: a secret KEY keeps its name. */
void redact_env(strv *env);

#endif
