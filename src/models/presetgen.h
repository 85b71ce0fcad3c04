/* presetgen.h (models) - the text rules of `gpumod preset new`: what goes
 * into a YAML comment or onto the terminal, and how a value is quoted, so
 * that nothing read from a model file, a listing or an argument can end a
 * comment or a scalar and add a key of its own. */
#ifndef GPUMOD_MODELS_PRESETGEN_H
#define GPUMOD_MODELS_PRESETGEN_H

#include "util/buf.h"

/* Comments and the terminal get util/utf8.h's utf8_clean(). */

/* s appended to b as a YAML double-quoted scalar: \" \\ \n \t, \xNN for
 * the other control bytes (C0, DEL, C1), \uNNNN (\UNNNNNNNN) for the other
 * code points util/utf8.h calls unsafe.  0, or -1 (b unchanged) when s is not
 * valid UTF-8: no YAML scalar can hold it. */
int pn_yaml_quote(buf *b, const char *s);

#endif
