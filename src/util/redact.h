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

/* Free text (a service's log tail, a daemon log message, a process
 * cmdline, /logs output): returns a copy of the len bytes at text with
 * every secret value replaced by REDACTED, and nothing else changed:
 * newlines, tabs, control characters and invalid UTF-8 are copied as
 * they are, so the caller escapes for its own medium (the daemon's stderr
 * log escapes control characters; API messages keep real newlines).
 *
 * Works line by line ('\n'); within a line words are separated by
 * whitespace (space, \t, \r, \v, \f) or NUL, and every word is
 * checked, the first one included.  A value is hidden after a secret name
 * (see redact_is_secret_name) in these shapes:
 *   KEY=VAL  --flag=VAL  --flag VAL  key: val  key:val  'key': 'val'
 *   "key": "val"  key=['val']  Authorization: Bearer X  (and a bare
 *   "Bearer X" / "Basic X")
 * Quotes, brackets and a trailing ",;)]}" around a value are kept.  A
 * secret never spans lines, so a caller redacting a stream should pass
 * whole lines; a partial last line is redacted as it stands.
 *
 * Returns a NUL-terminated string the caller frees (never NULL; OOM
 * aborts).  *out_len (may be NULL) gets its length, which differs from
 * strlen only when the input held NUL bytes (they are kept).  Pure: no
 * state, safe to call from anywhere. */
char *redact_text(const char *text, size_t len, size_t *out_len);

#endif
