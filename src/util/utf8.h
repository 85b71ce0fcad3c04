/* utf8.h - text that came from someone else (a model file, the Hub's
 * JSON, a file name) made safe to show on a terminal or in a YAML
 * comment: valid UTF-8, no control character, no line or paragraph
 * separator, no reordering mark, no non-character. */
#ifndef GPUMOD_UTF8_H
#define GPUMOD_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The code point of the UTF-8 sequence at p and its length (1..4), or 0
 * when it is not valid (overlong, a surrogate, past U+10FFFF, cut). */
size_t utf8_next(const unsigned char *p, uint32_t *cp);
/* C0 and C1 controls, DEL, U+2028/2029, the BOM, the bidi embeddings,
 * overrides and isolates, and the non-characters (U+FDD0..FDEF, U+xFFFE,
 * U+xFFFF: libyaml refuses them anywhere in a document) */
bool utf8_unsafe(uint32_t c);
/* s with every unsafe code point and every invalid byte as '?'
 * (malloc'd; NULL reads as ""). */
char *utf8_clean(const char *s);
/* true when s is valid UTF-8 with no unsafe code point */
bool utf8_safe(const char *s);

#endif
