/* url.c - strict parsing of a remote service's base URL (url.h). */
#include "util/url.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int bad(char *err, size_t errlen, const char *u, const char *what)
{
    snprintf(err, errlen, "base_url '%s' %s (expected http(s)://host[:port][/path])", u, what);
    return -1;
}

int url_base_parse(const char *u, url_base *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *rest;
    if (!strncasecmp(u, "https://", 8)) {
        out->https = true;
        rest = u + 8;
    } else if (!strncasecmp(u, "http://", 7)) {
        rest = u + 7;
    } else {
        return bad(err, errlen, u, "must start with http:// or https://");
    }
    for (const char *q = u; *q; q++) {
        unsigned char ch = (unsigned char)*q;
        if (ch <= 0x20 || ch >= 0x7f) return bad(err, errlen, u, "contains a space, a control character or non-ASCII");
    }
    if (strchr(rest, '?')) return bad(err, errlen, u, "has a query ('?'): put parameters in requests, not the base URL");
    if (strchr(rest, '#')) return bad(err, errlen, u, "has a fragment ('#')");
    size_t alen = strcspn(rest, "/");
    const char *path = rest + alen;
    if (memchr(rest, '@', alen)) return bad(err, errlen, u, "has user information ('user@'): give keys with remote.api_key_env");
    if (alen == 0) return bad(err, errlen, u, "has no host");
    const char *port = NULL;
    size_t hlen;
    const char *h = rest;
    if (rest[0] == '[') {
        const char *close = memchr(rest, ']', alen);
        if (!close) return bad(err, errlen, u, "has an IPv6 literal without its ']'");
        h = rest + 1;
        hlen = (size_t)(close - h);
        if (close + 1 < rest + alen) {
            if (close[1] != ':') return bad(err, errlen, u, "has something other than ':PORT' after ']'");
            port = close + 2;
        }
        char tmp[64];
        unsigned char a[16];
        if (hlen == 0 || hlen >= sizeof tmp) return bad(err, errlen, u, "has an invalid IPv6 literal");
        memcpy(tmp, h, hlen);
        tmp[hlen] = '\0';
        if (inet_pton(AF_INET6, tmp, a) != 1) return bad(err, errlen, u, "has an invalid IPv6 literal");
    } else {
        const char *colon = memchr(rest, ':', alen);
        hlen = colon ? (size_t)(colon - rest) : alen;
        if (colon) port = colon + 1;
        if (hlen == 0) return bad(err, errlen, u, "has no host");
        for (size_t i = 0; i < hlen; i++) {
            char ch = h[i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                  ch == '.' || ch == '_'))
                return bad(err, errlen, u, "has a host with a character other than letters, digits, '-', '.', '_'");
        }
    }
    if (hlen >= sizeof out->host) return bad(err, errlen, u, "has a host name over 255 bytes");
    memcpy(out->host, h, hlen);
    out->host[hlen] = '\0';
    out->port = out->https ? 443 : 80;
    if (port) {
        size_t plen = (size_t)(rest + alen - port);
        long v = 0;
        if (plen == 0 || plen > 5) return bad(err, errlen, u, "has a port that is not 1..65535");
        for (size_t i = 0; i < plen; i++) {
            if (port[i] < '0' || port[i] > '9') return bad(err, errlen, u, "has a port that is not all digits");
            v = v * 10 + (port[i] - '0');
        }
        if (v < 1 || v > 65535) return bad(err, errlen, u, "has a port that is not 1..65535");
        out->port = (int)v;
    }
    size_t plen = strlen(path);
    while (plen && path[plen - 1] == '/') plen--;
    if (plen >= sizeof out->path) return bad(err, errlen, u, "has a path over 2 KiB");
    memcpy(out->path, path, plen);
    out->path[plen] = '\0';
    return 0;
}

void url_query_escape(buf *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p))
            buf_addc(out, (char)*p);
        else
            buf_printf(out, "%%%02X", *p);
}
