/* api_events.h - the event stream of the control API (docs/api.md,
 * GET /events?follow=1), hooked into api.c's GET /events, its abort and
 * shutdown paths, and the server's on_drain. */
#ifndef GPUMOD_API_EVENTS_H
#define GPUMOD_API_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/api.h"

/* Answer c with a stream of the events after since_id (of service when
 * not NULL, of the kinds in the store_event_query.kinds mask, 0: all):
 * the stored ones, then each as it is recorded.  The query has been
 * validated; d->st is open. */
void api_events_follow(gpumodd *d, srv_conn *c, int64_t since_id, const char *service, unsigned kinds);
/* c went away: true when it was an event stream (now ended). */
bool api_events_abort(gpumodd *d, srv_conn *c);
/* srv_opts.on_drain: a stream catching up goes on. */
void api_events_drain(gpumodd *d, srv_conn *c);
/* End every stream with its last line (shutdown). */
void api_events_close(gpumodd *d);

#endif
