/* docfile.h (oai) - a helper's documents on disk: results written to a
 * file or stdout, output paths checked before a run, a JSON document read
 * back with the line and column of a mistake.  bench and eval alike. */
#ifndef GPUMOD_OAI_DOCFILE_H
#define GPUMOD_OAI_DOCFILE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "util/buf.h"

/* b to path ("-": stdout).  0, or -1 with err ("cannot write the WHAT to
 * 'PATH': reason"). */
int docfile_write(const char *path, const buf *b, const char *what, char *err, size_t errlen);
/* Can path be written?  Opened for appending (an existing file is not
 * emptied) and removed again when it did not exist; "-" and NULL pass.
 * 0, or -1 with err ("OPT 'PATH': cannot write there: reason"). */
int docfile_writable(const char *opt, const char *path, char *err, size_t errlen);
/* The file parsed (caller frees), or NULL with err ("cannot read 'PATH':
 * reason", "'PATH': not valid JSON at line L, column C (byte N)"). */
cJSON *docfile_read(const char *path, char *err, size_t errlen);

/* A new result document with the members every helper's document begins
 * with: schema, kind, started (RFC 3339 of started_unix_ms), finished
 * (null), gpumod_version and argv ("gpumod", tool, then argv[1..argc)).
 * The caller adds the rest and frees it. */
cJSON *docfile_new(const char *schema, const char *kind, const char *tool, int64_t started_unix_ms, int argc,
                   char **argv);

/* key: v, or null when v is not finite (NaN: not measured). */
void docfile_num(cJSON *o, const char *key, double v);

#endif
