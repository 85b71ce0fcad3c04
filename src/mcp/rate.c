/* rate.c - a sliding-window limit on mutating calls (see rate.h). */
#include "mcp/rate.h"

#include <string.h>

void rate_init(rate_limit *r, int max, int64_t window_ms)
{
    memset(r, 0, sizeof *r);
    r->max = max < 0 ? 0 : max > RATE_MAX ? RATE_MAX : max;
    r->window_ms = window_ms;
}

bool rate_take(rate_limit *r, int64_t now_ms, int64_t *retry_ms)
{
    if (!r->max) return true;
    /* forget the calls that left the window (the oldest first) */
    while (r->n && now_ms - r->at[(r->head + RATE_MAX - r->n) % RATE_MAX] >= r->window_ms)
        r->n--;
    if (r->n >= r->max) {
        int64_t oldest = r->at[(r->head + RATE_MAX - r->n) % RATE_MAX];
        *retry_ms = oldest + r->window_ms - now_ms;
        return false;
    }
    r->at[r->head] = now_ms;
    r->head = (r->head + 1) % RATE_MAX;
    r->n++;
    return true;
}
