/* router.h - the OpenAI-compatible endpoint in front of every service
 * (docs/router.md): a TCP listener on the daemon's loop, API keys, CORS,
 * the endpoints (/health, /v1/models, /metrics, the model-routed POSTs,
 * /upstream/{service}/...), activation on demand through the activator,
 * the streaming relay (src/router/relay.c), drain during a mode switch,
 * remote services (src/router/remote.c) and the access log.
 *
 * The router always exists while the daemon runs (it owns the route
 * table, the router default and the activator); it listens only when
 * router.enabled and not --no-router.  Everything on the daemon's loop. */
#ifndef GPUMOD_ROUTER_H
#define GPUMOD_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "config/config.h"
#include "net/server.h"
#include "store/db.h"
#include "router/activate.h"
#include "router/rhost.h"
#include "router/rmetrics.h"
#include "util/buf.h"

typedef struct router router;

typedef struct router_env {
    uv_loop_t *loop;
    router_host host;      /* what the daemon lends (rhost.h); its drain hooks are set on it */
    const char *state_dir; /* the router default is kept in <state_dir>/route-default */
    const char *listen;    /* --listen HOST:PORT, or NULL: router.listen */
    bool no_router;        /* --no-router: do not listen */
    bool insecure;         /* --insecure: a non-loopback listen without API keys is allowed */
} router_env;

/* Whether the router's listen address may be used: a non-loopback
 * address needs API keys (router.api_keys_env naming a non-empty
 * variable) unless insecure.  0, or -1 with err (the daemon exits 2).
 * listen NULL: set->router.listen. */
int router_check_listen(const settings *set, const char *listen, bool insecure, char *err, size_t errlen);

/* cfg borrowed until router_set_config replaces it.  env copied. */
router *router_new(const router_env *env, const config *cfg);
/* Listen (when enabled).  0, or -1 with err ("router: cannot listen on
 * 127.0.0.1:8010: address already in use"). */
int router_listen(router *r, char *err, size_t errlen);
/* The TCP port listened on, or -1. */
int router_port(const router *r);

/* A new configuration (reload): rebuilds the route table and the
 * activator's view.  Call before the old config is freed. */
void router_set_config(router *r, const config *cfg);

/* Every event the supervisor stores (state transitions feed the router's
 * view of each service, router-mode model lists, drain ends). */
void router_on_event(router *r, const store_event *e);

/* The router's activator and metrics, for the daemon's wiring (the
 * activator's event sink, the switch-end hook); owned by the router. */
activator *router_activator(router *r);
rmetrics *router_metrics(router *r);

/* Control API: GET|PUT /route/default, GET /route (the table). */
void router_api_default(router *r, srv_conn *c, const http_msg *m, const view *body);
void router_api_table(router *r, srv_conn *c);
/* GET /route/resolve?model=NAME: which service the router sends a request
 * naming NAME to, and the model the engine gets (the router's own
 * resolver, so bench and the CLI label what the router does). */
void router_api_resolve(router *r, srv_conn *c, const char *name);

/* Stop listening, answer every waiting request (503), end the streams,
 * close the pools; cb when everything is closed. */
void router_close(router *r, void (*cb)(void *ud), void *ud);
/* After router_close's cb (or when it never listened and was closed). */
void router_free(router *r);

#endif
