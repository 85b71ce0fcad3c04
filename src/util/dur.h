/* dur.h - durations as text, the two ways gpumod writes them: exactly, in
 * the configuration's own syntax ("90s", "5m", "1500ms"; read back to the
 * same ms), and for people ("3m12s", "410ms", "2h05m", "3d04h": rounded to
 * what a reader needs). */
#ifndef GPUMOD_DUR_H
#define GPUMOD_DUR_H

#include <stdint.h>

#include "util/buf.h"

/* The largest whole unit (h, m, s, ms) that writes ms exactly; "null"
 * for a negative ms (unset). */
void dur_exact(buf *out, int64_t ms);
/* Rounded for people; a negative ms reads as 0. */
void dur_human(buf *out, int64_t ms);

#endif
