/* flags.h - which flags a binary accepts, read from its own --help, for
 * `config check`: an argv flag the binary does not list is reported
 * before a start fails on it.
 *
 * The help text is cached per binary (absolute path, size and mtime, and
 * the help arguments), so a rebuilt binary is read again and an unchanged
 * one never is. */
#ifndef GPUMOD_FLAGS_H
#define GPUMOD_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/strv.h"

typedef struct flags_query {
    const char *binary;           /* as configured: a name looked up in $PATH, or a path */
    const char *const *help_args; /* NULL-terminated; NULL: {"--help"}
                                     (see driver_help_args()) */
    const char *cache_dir;        /* created when missing; NULL: no cache */
    int64_t timeout_ms;           /* for running the binary; 0: 10 s */
} flags_query;

/* The flags a help text lists.  "removed" holds the ones it lists only to
 * say they are gone ("the argument has been removed"): llama-server keeps
 * --draft-max there, and such a flag makes it exit at start-up. */
typedef struct flagset {
    strv known;
    strv removed;
} flagset;

#define FLAGSET_INIT                                                                               \
    {                                                                                              \
        STRV_INIT, STRV_INIT                                                                       \
    }

/* The help text of q->binary, from the cache or by running it (and then
 * caching it).  *from_cache (may be NULL) says which.  Returns 0, or -1
 * with err set: binary not found, timed out, non-zero exit, a text that
 * lists no flag.  Failures are not cached. */
int flags_help(const flags_query *q, buf *text, bool *from_cache, char *err, size_t errlen);

/* Parse a help text: option lines start with '-' after at most six
 * blanks; their option column (up to the first gap of two blanks not
 * after a comma) is split at blanks, commas and '/' into flag words
 * (-x, -ngl, --ctx-size, --no-jinja); "=" ends a word too. */
void flags_parse(const char *help, flagset *fs);
void flagset_release(flagset *fs);

/* The flag words of argv (argv[0] skipped; a word starting with '-' that
 * is not a number; "--x=v" counts as "--x"; nothing after "--") that fs
 * does not know, each once, in argv order: removed ones go to removed when
 * it is not NULL, everything else (and then removed ones) to unknown. */
void flags_unknown(const flagset *fs, const strv *argv, strv *unknown, strv *removed);

/* flags_help + flags_parse + flags_unknown.  0, or -1 with err set. */
int flags_check(const flags_query *q, const strv *argv, strv *unknown, strv *removed, char *err,
                size_t errlen);

#endif
