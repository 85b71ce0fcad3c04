/* url.h - the base URL of a remote service: http(s)://host[:port][/path],
 * parsed strictly (the config check and the router use the same rules).
 *
 * Accepted: scheme http or https (any case); host a DNS name (letters,
 * digits, '-', '.', '_'), an IPv4 literal or [IPv6]; port 1..65535 in
 * digits only (default 80/443); a path of visible ASCII.  Refused, with a
 * message saying which part is wrong: userinfo (user@host), a query or a
 * fragment, an empty host, a port with a sign, letters or out of range,
 * spaces or control characters. */
#ifndef GPUMOD_URL_H
#define GPUMOD_URL_H

#include "util/buf.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct url_base {
    bool https;
    char host[256]; /* without the brackets of an IPv6 literal */
    int port;
    char path[2048]; /* "" or "/..." without trailing '/' */
} url_base;

/* 0, or -1 with err ("base_url 'x': ...").  out may be partly filled on error. */
int url_base_parse(const char *u, url_base *out, char *err, size_t errlen);

/* Append s to out as a query value: unreserved bytes as they are, every
 * other byte %XX (so '/', '+' and ':' in a model name arrive unchanged). */
void url_query_escape(buf *out, const char *s);

#endif
