/* utf8.c - see utf8.h. */
#include "util/utf8.h"

#include "util/buf.h"

size_t utf8_next(const unsigned char *p, uint32_t *cp)
{
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n = p[0] < 0x80             ? 1
               : (p[0] & 0xe0) == 0xc0 ? 2
               : (p[0] & 0xf0) == 0xe0 ? 3
               : (p[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (!n) return 0;
    uint32_t c = n == 1 ? p[0] : p[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return n;
}

bool utf8_unsafe(uint32_t c)
{
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029 || c == 0xfeff ||
           c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069) || (c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe;
}

char *utf8_clean(const char *s)
{
    buf b = BUF_INIT;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t c;
        size_t n = utf8_next(p, &c);
        if (!n || utf8_unsafe(c))
            buf_addc(&b, '?');
        else
            buf_add(&b, p, n);
        p += n ? n : 1;
    }
    if (!b.p) buf_adds(&b, "");
    return buf_detach(&b);
}

bool utf8_safe(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c;
        size_t n = utf8_next(p, &c);
        if (!n || utf8_unsafe(c)) return false;
        p += n;
    }
    return true;
}
