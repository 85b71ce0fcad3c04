/* sanitize.h - what the MCP server sends is text a model reads and a
 * client may show in a terminal: every string (and member name) leaves
 * without control characters.  Removed: C0 controls but newline and tab,
 * DEL, C1 controls (U+0080..U+009F), a terminal escape sequence whole
 * (ESC [ ... final byte, ESC ] ... BEL or ESC \), and the bidirectional
 * overrides and isolates (U+202A..U+202E, U+2066..U+2069) that make text
 * read other than it is; invalid UTF-8 becomes U+FFFD.  Nothing else
 * changes (secrets are redacted before, by util/redact.h).  Pure. */
#ifndef GPUMOD_MCP_SANITIZE_H
#define GPUMOD_MCP_SANITIZE_H

#include <cjson/cJSON.h>

/* A clean copy of s (caller frees). */
char *sanitize_text(const char *s);

/* Every string value and member name of v, in place. */
void sanitize_json(cJSON *v);

#endif
