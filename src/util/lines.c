/* lines.c - a streamed body cut into whole lines (see lines.h). */
#include "util/lines.h"

#include <string.h>

size_t lines_feed(buf *acc, const char *p, size_t n, size_t max, lines_fn fn, void *ud)
{
    buf_add(acc, p, n);
    size_t done = 0, count = 0;
    for (char *nl; (nl = memchr(acc->p + done, '\n', acc->len - done));
         done = (size_t)(nl - acc->p) + 1) {
        fn(ud, acc->p + done, (size_t)(nl - acc->p) - done);
        count++;
    }
    memmove(acc->p, acc->p + done, acc->len - done);
    acc->len -= done;
    if (acc->cap) acc->p[acc->len] = '\0';
    if (max && acc->len > max) buf_clear(acc);
    return count;
}
