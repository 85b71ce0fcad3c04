/* sanitize.c - control characters out of what the MCP server sends
 * (see sanitize.h). */
#include "mcp/sanitize.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

/* Length of the UTF-8 sequence at s and its code point, or 0 when it is
 * not valid (overlong, a surrogate, past U+10FFFF, cut short). */
static size_t u8_decode(const unsigned char *s, uint32_t *cp)
{
    if (s[0] < 0x80) return *cp = s[0], 1;
    size_t n = (s[0] & 0xE0) == 0xC0   ? 2
               : (s[0] & 0xF0) == 0xE0 ? 3
               : (s[0] & 0xF8) == 0xF0 ? 4
                                       : 0;
    if (!n) return 0;
    uint32_t c = s[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return n;
}

/* Bytes of the escape sequence starting with ESC at s (ESC itself at
 * least): CSI up to its final byte, OSC / DCS up to BEL or ST, else ESC
 * and the byte after it. */
static size_t escape_len(const unsigned char *s)
{
    size_t i = 1;
    if (s[1] == '[') {
        for (i = 2; s[i] && !(s[i] >= 0x40 && s[i] <= 0x7E); i++) {
        }
        return s[i] ? i + 1 : i;
    }
    if (s[1] == ']' || s[1] == 'P') {
        for (i = 2; s[i] && s[i] != 0x07 && !(s[i] == 0x1B && s[i + 1] == '\\'); i++) {
        }
        return !s[i] ? i : s[i] == 0x07 ? i + 1 : i + 2;
    }
    return s[1] ? 2 : 1;
}

static bool dropped(uint32_t c)
{
    if (c == '\n' || c == '\t') return false;
    return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) ||
           (c >= 0x2066 && c <= 0x2069);
}

char *sanitize_text(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    buf b = BUF_INIT;
    while (*s) {
        if (*s == 0x1B) {
            s += escape_len(s);
            continue;
        }
        uint32_t c;
        size_t n = u8_decode(s, &c);
        if (!n) {
            buf_add(&b, "\xEF\xBF\xBD", 3);
            s++;
            continue;
        }
        if (!dropped(c)) buf_add(&b, (const char *)s, n);
        s += n;
    }
    return buf_detach(&b);
}

static bool clean(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p >= 0x7F) return false;
    return true;
}

void sanitize_json(cJSON *v)
{
    for (; v; v = v->next) {
        if (v->string && !clean(v->string)) {
            char *c = sanitize_text(v->string);
            if (!(v->type & cJSON_StringIsConst)) free(v->string);
            v->type &= ~cJSON_StringIsConst;
            v->string = c;
        }
        if (cJSON_IsString(v) && v->valuestring && !clean(v->valuestring)) {
            char *c = sanitize_text(v->valuestring);
            free(v->valuestring);
            v->valuestring = c;
        }
        if (v->child) sanitize_json(v->child);
    }
}
