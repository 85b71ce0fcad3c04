/* evwait.h - waiting for something the daemon does on its event stream
 * (GET /events?follow=1), not by polling: the caller's check runs when
 * the stream has opened (what happened before is in the state it reads),
 * after each event the stream brings, after each tick without one, and
 * when the stream ends (a restarted daemon, a slow reader); the wait ends
 * when the check says done.  A daemon without the stream (an older one)
 * is checked every 50 ms instead.  The CLI waits with it; so will the
 * TUI and the MCP server. */
#ifndef GPUMOD_EVWAIT_H
#define GPUMOD_EVWAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* Read what the caller waits for and decide: true when done (the caller
 * keeps its own result).  ended: the reason of the stream's last line
 * when the daemon ended the stream ("shutting_down", "slow_reader",
 * "error"; docs/api.md), else NULL. */
typedef bool (*evwait_check)(void *ud, const char *ended);

/* query: the stream's filters ("service=chat", "kind=switch.phase"; may
 * be ""); tick_ms: the longest wait without a check. */
void ev_wait(const config_paths *daemon, const char *query, int64_t tick_ms, evwait_check check, void *ud);

#endif
