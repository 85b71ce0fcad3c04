/* xmlcheck.h - a small XML well-formedness check for the unit tests of
 * generated SVG (test_svg, test_breport).  tests/e2e/t80-bench-svg.sh
 * parses the same documents with python3's XML parser; this one runs
 * wherever the unit tests do.  Header-only. */
#ifndef GPUMOD_XMLCHECK_H
#define GPUMOD_XMLCHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A small XML well-formedness check: every tag closed in order, every
 * '&' one of the five entities, no '<' inside attribute values, no raw
 * control bytes.  Returns NULL when fine, else what is wrong. */
static inline const char *xml_check(const char *s)
{
    static char why[160];
    char stack[64][32];
    int depth = 0, roots = 0;
    const char *p = s;
    if (strncmp(p, "<?xml", 5) == 0) p = strstr(p, "?>") + 2;
    while (*p) {
        if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t' && *p != '\r') return "control byte";
        if (*p == '&') {
            static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            bool ok = false;
            for (size_t i = 0; i < 5; i++) ok |= strncmp(p, ents[i], strlen(ents[i])) == 0;
            if (!ok) return "bad entity";
            p++;
            continue;
        }
        if (*p != '<') {
            if (depth == 0 && *p != '\n' && *p != ' ') return "text outside the root";
            p++;
            continue;
        }
        const char *e = p + 1;
        char quote = 0;
        for (; *e && (quote || *e != '>'); e++) {
            if (quote && *e == '<') return "'<' in an attribute";
            if (*e == '"' || *e == '\'') quote = quote == *e ? 0 : quote ? quote : *e;
        }
        if (!*e) return "unterminated tag";
        char name[32] = {0};
        bool closing = p[1] == '/';
        const char *n0 = p + 1 + closing;
        size_t nl = strcspn(n0, " />\n");
        if (nl == 0 || nl >= sizeof name) return "bad tag name";
        memcpy(name, n0, nl);
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], name) != 0) {
                snprintf(why, sizeof why, "</%s> closes <%s>", name, depth ? stack[depth - 1] : "");
                return why;
            }
            depth--;
        } else if (e[-1] != '/') {
            if (depth == 0) roots++;
            if (depth == 64) return "too deep";
            strcpy(stack[depth++], name);
        }
        p = e + 1;
    }
    if (depth) return "unclosed element";
    if (roots != 1) return "not exactly one root";
    return NULL;
}

#endif
