/* rate.h - the per-session limit on mutating tool calls: at most `max`
 * in any window of `window_ms` (a sliding window of the calls' times).
 * One session is one `gpumod mcp` process (one stdio client), so each
 * client has its own bucket.  Pure: the caller gives the clock. */
#ifndef GPUMOD_MCP_RATE_H
#define GPUMOD_MCP_RATE_H

#include <stdbool.h>
#include <stdint.h>

#define RATE_MAX 1000

typedef struct rate_limit {
    int max; /* 0: no limit */
    int64_t window_ms;
    int64_t at[RATE_MAX]; /* a ring of the admitted calls' times */
    int n, head;
} rate_limit;

void rate_init(rate_limit *r, int max, int64_t window_ms);
/* true, and the call counted, when a call at now_ms is within the limit;
 * else false with *retry_ms the wait until one would be. */
bool rate_take(rate_limit *r, int64_t now_ms, int64_t *retry_ms);

#endif
