/* argsplit.h - split a Python-project `extra_args` string into argv words.
 *
 * Rules (documented in docs/configuration.md): words are separated by
 * blanks (space, tab, newline); '...' keeps everything literally; "..."
 * keeps everything but lets \" and \\ escape; outside quotes a backslash
 * takes the next character literally.  There is no expansion of any kind:
 * $VAR, ~, globs, ; | & and backquotes are ordinary characters, because
 * nothing ever runs a shell.  An unterminated quote or a trailing
 * backslash is an error. */
#ifndef GPUMOD_ARGSPLIT_H
#define GPUMOD_ARGSPLIT_H

#include <stddef.h>

#include "util/strv.h"

/* Appends the words to out.  Returns 0, or -1 with err set (out keeps
 * whatever was appended before the error). */
int argsplit(const char *s, strv *out, char *err, size_t errlen);

#endif
