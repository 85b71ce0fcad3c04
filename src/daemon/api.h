/* api.h - the control API (docs/api.md): the routes on the daemon's Unix
 * socket and what they read (supervisor, host monitor, watchdog, store,
 * config).  The daemon owns everything in `gpumodd`; the API borrows it
 * and swaps the config on reload. */
#ifndef GPUMOD_API_H
#define GPUMOD_API_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "daemon/hostmon.h"
#include "daemon/supervisor.h"
#include "daemon/watchdog.h"
#include "net/server.h"
#include "store/db.h"
#include "util/buf.h"

struct api_follow;
struct api_evstream;
struct swx; /* src/daemon/switch.h */
struct router; /* src/router/router.h */
struct tunelease; /* src/daemon/tunelease.h */
struct rmodels;   /* src/daemon/rmodels.h */

typedef struct gpumodd {
    uv_loop_t *loop;
    config *cfg;        /* the configuration in force; reload replaces it whole */
    config_paths paths; /* what serve was given, for reload (strings owned here) */
    sup *sup;
    hostmon *hm;
    watchdog *wd;
    store *st;
    srv *srv;
    char *socket_path, *state_dir, *log_dir; /* fixed for the daemon's life */
    const char *runner;                      /* "spawn" */
    int64_t started_unix_ms, started_mono_ms;
    bool shutting_down;
    struct api_follow *follows; /* open `logs?follow=1` streams */
    struct api_evstream *evstreams; /* open `events?follow=1` streams (api_events.c) */
    bool snap_pending;          /* a background snapshot for status is being taken */
    struct swx *sw;             /* the mode-switch executor; NULL until reconcile is done */
    struct router *router;      /* the router (listening or not); NULL until reconcile is done */
    struct tunelease *tl;       /* the tune lease (tunelease.h); NULL until reconcile is done */
    struct rmodels *rm;         /* router-mode models (rmodels.h); NULL until reconcile is done */
} gpumodd;

/* srv_opts.on_request / on_abort (ud = the gpumodd). */
void api_request(srv_conn *c, const http_msg *m, const view *body, void *ud);
void api_abort(srv_conn *c, void *ud);

/* Request bodies: POST /results up to API_RESULTS_MAX_BODY, every other
 * route up to API_MAX_BODY, decided per request from its head:
 * srv_opts.on_head = api_head answers a Content-Length over the route's
 * limit 413 naming the limit before the body is read, and streams a
 * chunked body into a gather that answers 413 as soon as its count passes
 * the limit (api_body, ud the gpumodd), then hands the whole body to
 * api_request.  srv_opts.limits.max_body is API_SERVER_MAX_BODY, so high
 * that the server's own generic 413 never comes first. */
#define API_MAX_BODY (1u << 20)
#define API_RESULTS_MAX_BODY (16u << 20)
#define API_SERVER_MAX_BODY UINT64_MAX
srv_mode api_head(srv_conn *c, const http_msg *m, void *ud);
void api_body(srv_conn *c, const view *chunk, bool last, void *ud);

/* Reload the configuration (POST /reload, SIGHUP): parse into a new
 * config; on errors keep the old one.  *status is 200 or 422; out gets
 * the JSON answer ({"ok","changed","presets","modes","warnings"} or the
 * error with every diagnostic).  origin ("api", "signal") goes into the
 * `reload` event. */
void api_reload(gpumodd *d, const char *origin, buf *out, int *status);

/* An event as the JSON object of docs/api.md. */
void api_event_json(buf *b, const store_event *e);

/* Have the host monitor take a snapshot in the background when the last
 * one is older than max_age_ms (status never waits for NVML). */
void api_refresh_snapshot(gpumodd *d, int64_t max_age_ms);

/* The running set: the services starting, ready or unhealthy, at most
 * max ids (borrowed until the next loop turn) into ids; how many. */
size_t api_running_set(gpumodd *d, const char **ids, size_t max);
/* The mode whose service set is ids[0..n): its id, "none" when n is 0,
 * else NULL (no mode has exactly that set). */
const char *api_current_mode(gpumodd *d, const char **ids, size_t n);

/* End every follow stream, of logs and of events (shutdown). */
void api_close_follows(gpumodd *d);

#endif
