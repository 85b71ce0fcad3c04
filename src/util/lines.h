/* lines.h - a streamed body cut into whole lines: what every follower of
 * the daemon's streams does with each chunk (`gpumod events -f`, the
 * TUI's event and log panes, the MCP server's subscriptions). */
#ifndef GPUMOD_UTIL_LINES_H
#define GPUMOD_UTIL_LINES_H

#include <stddef.h>

#include "util/buf.h"

typedef void (*lines_fn)(void *ud, const char *line, size_t len);

/* Append the n bytes at p to acc and call fn for each whole line in it
 * (without its '\n'); the partial last line stays in acc.  A partial line
 * longer than max bytes is dropped (max 0: no bound).  Returns how many
 * lines were handed to fn. */
size_t lines_feed(buf *acc, const char *p, size_t n, size_t max, lines_fn fn, void *ud);

#endif
