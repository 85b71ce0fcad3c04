/* argsplit.c - shell-like word splitting with no expansion (see header). */
#include "util/argsplit.h"
#include "util/buf.h"

#include <stdbool.h>
#include <stdio.h>

int argsplit(const char *s, strv *out, char *err, size_t errlen)
{
    buf w = BUF_INIT;
    bool inword = false;
    const char *p = s;

    while (*p) {
        char c = *p;
        if (c == ' ' || c == '\t' || c == '\n') {
            if (inword) {
                strv_push_own(out, buf_detach(&w));
                inword = false;
            }
            p++;
        } else if (c == '\'') {
            const char *start = p;
            inword = true;
            for (p++; *p && *p != '\''; p++) buf_addc(&w, *p);
            if (!*p) {
                snprintf(err, errlen, "unterminated single quote at offset %td", start - s);
                buf_release(&w);
                return -1;
            }
            p++;
        } else if (c == '"') {
            const char *start = p;
            inword = true;
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
                buf_addc(&w, *p);
            }
            if (!*p) {
                snprintf(err, errlen, "unterminated double quote at offset %td", start - s);
                buf_release(&w);
                return -1;
            }
            p++;
        } else if (c == '\\') {
            if (!p[1]) {
                snprintf(err, errlen, "trailing backslash at offset %td", p - s);
                buf_release(&w);
                return -1;
            }
            inword = true;
            buf_addc(&w, p[1]);
            p += 2;
        } else {
            inword = true;
            buf_addc(&w, c);
            p++;
        }
    }
    if (inword) strv_push_own(out, buf_detach(&w));
    buf_release(&w);
    return 0;
}
