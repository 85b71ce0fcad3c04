/* events.h - the subscriptions' thread: it follows the daemon's event
 * stream (GET /events?follow=1, resuming with since= the last id after
 * the stream ends) and sends notifications/resources/updated for each
 * subscribed resource an event changes.  A daemon that is down is tried
 * again every 0.5 s, backing off to 5 s; the session goes on meanwhile. */
#ifndef GPUMOD_MCP_EVENTS_H
#define GPUMOD_MCP_EVENTS_H

#include <pthread.h>

#include <cjson/cJSON.h>

#include "mcp/server.h"
#include "util/strv.h"

int mcp_events_start(mcp_server *s, pthread_t *th);

/* The resource URIs an event changes (pure; for the tests): status and
 * events always, services and services/ID for a service's event, the
 * modes (and every subscribed modes/ID, from subs) for a state, switch or
 * reload event. */
void mcp_event_uris(const cJSON *ev, const strv *subs, strv *out);

#endif
