/* jstrict.h - the one strict reading of a JSON request body, for every
 * route of the control API (services, preflight, modes, route default,
 * results).  cJSON alone is looser than the router's scanner
 * (router/modelscan.h): it stops at a decoded NUL ({"mode":"none\u0000chat"}
 * read as "none", which plans the empty mode and stops everything), takes
 * what follows the value if asked not to mind, and keeps the first of two
 * equal keys.  Here, beyond cJSON's grammar:
 *
 *   - only JSON whitespace may follow the value;
 *   - a string may not hold U+0000 (escaped or raw) nor any raw control
 *     byte (RFC 8259 7: they must be escaped);
 *   - an object may not name a key twice (compared after unescaping, so
 *     "mod\u0065" and "mode" are the same key), at any depth;
 *   - nesting is bounded by cJSON (CJSON_NESTING_LIMIT).
 *
 * The error says what and where: "... at byte N" with the offset in the
 * body, or the key's path ($.a.b) for a duplicate. */
#ifndef GPUMOD_UTIL_JSTRICT_H
#define GPUMOD_UTIL_JSTRICT_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The tree (caller frees with cJSON_Delete), or NULL with err. */
cJSON *jstrict_parse(const char *p, size_t len, char *err, size_t errlen);

#endif
