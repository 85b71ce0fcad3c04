/* rint.h - what the router's files share (router.c: listener, endpoints,
 * table, drain; relay.c: one request's relay; remote.c: base URLs, DNS
 * and the per-service upstream pool).  Not a public contract. */
#ifndef GPUMOD_ROUTER_INT_H
#define GPUMOD_ROUTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/lifecycle.h"
#include "router/modelscan.h"
#include "router/route.h"
#include "router/activate.h"
#include "router/rmetrics.h"
#include "router/router.h"
#include "router/upstream.h"
#include "util/strv.h"

#define ROUTER_BODY_BUDGET ((size_t)256 << 20) /* body bytes held across every request until its upstream starts */
#define ROUTER_DNS_TIMEOUT_MS 5000
#define ROUTER_DNS_TTL_MS 60000
#define ROUTER_LIST_MAX ((size_t)1 << 20) /* a router-mode service's GET /models answer */

typedef struct relay relay;
typedef struct router router;
typedef struct gai_op gai_op;

/* One configured service as the router sees it.  Reference counted: a
 * relay holds its service across a reload that drops it. */
typedef struct rsvc {
    int refs;
    router *rt;
    bool live; /* still in the configuration */
    char *id;
    svc_state state; /* from the supervisor's state events */
    bool remote, https, router_mode;
    char *host;   /* local: the address to connect to; remote: base_url's host */
    int port;
    char *prefix; /* remote: base_url's path without a trailing '/' ("" for none) */
    char *auth;   /* remote: the Authorization value ("Bearer ..."), NULL without a key */
    char *key_env;
    char *conf_err;         /* why this service cannot be reached as configured (a bad base_url or key), or NULL */
    upstream_pool *pool;
    char *pool_ip;          /* the address the pool connects to */
    int64_t pool_expires;   /* remote with a DNS name: clock_mono_ms when to resolve again */
    gai_op *gai;            /* a resolution in flight */
    relay *waiting;         /* relays waiting for the resolution */
    bool draining;
    relay *inflight;        /* relays whose upstream request is started */
    size_t n_inflight;
    relay *parked;          /* new requests held while it drains */
    upstream_req *listing;  /* GET /models of a router-mode service in flight */
    relay *listwait;        /* relays waiting for that list to know which model to send */
    size_t n_waiting;       /* relays waiting for its list or a gated model load (idle.c: busy) */
    buf list_body;
    bool list_over;         /* the answer passed ROUTER_LIST_MAX: dropped */
    /* idle unload (idle.c) */
    int64_t idle_last_ms;   /* clock_mono_ms of the last activity: a request forwarded or ended, a
                               counter that grew, ready */
    bool ka_set;            /* a request's keep_alive overrides the idle timeout (until it leaves) */
    int64_t ka_ms;          /* that keep_alive: 0 unload when idle, KA_KEEP never, > 0 the timeout */
    struct idle_op *idle_op; /* the sleep in flight: new requests park until it ends */
    upstream_req *mreq;     /* GET /metrics in flight */
    buf mbody;
    bool m_over, m_confirm, m_known, m_none;
    int m_status;
    int m_fails; /* /metrics reads that failed in a row (an error, a 5xx, too big, too slow) */
    int64_t m_t0_ms, m_read_ms;
    double m_total;
} rsvc;

struct router {
    uv_loop_t *loop;
    router_host h; /* what the daemon lends (rhost.h) */
    char *state_dir, *listen_override;
    bool no_router, insecure;
    const config *cfg;
    srv *srv;
    int port;
    rmetrics *rm;
    activator *act;
    route_table table;
    rsvc **svcs; /* parallel to cfg->presets and the table's services */
    size_t n_svcs;
    char *stored_default; /* `gpumod route default` (persisted), or NULL */
    strv keys;            /* API keys; empty: none required */
    strv cors;
    size_t max_body, body_held;
    relay *all; /* every request being answered */
    /* drain */
    bool draining;
    uint64_t drain_ticket;
    uv_timer_t drain_timer;
    bool drain_timer_init;
    /* idle unload */
    uv_timer_t idle_timer, idle_kick;
    bool idle_init;
    /* close */
    bool closing;
    int pending;
    void (*close_cb)(void *ud);
    void *close_ud;
    int64_t started_unix_s;
};

/* The endpoints the relay serves. */
typedef enum rep {
    EP_CHAT,
    EP_COMPLETIONS,
    EP_EMBEDDINGS,
    EP_RERANK,
    EP_RESPONSES,
    EP_MESSAGES, /* Anthropic: errors in its shape */
    EP_UPSTREAM, /* /upstream/{service}/{path}: no body scan */
} rep;

/* ---- router.c ---- */
/* An answer of the router's own (JSON body), with CORS fields for an
 * allowed origin and Retry-After when retry_after_s > 0. */
void router_respond(router *rt, srv_conn *c, const http_msg *m, int status, const char *ctype, const char *body,
                    size_t len, int retry_after_s);
/* The error JSON: OpenAI's {"error":{"message","type","code"}} or, for
 * anthropic, {"type":"error","error":{"type","message"}}. */
void router_error_json(buf *b, bool anthropic, int status, const char *code, const char *message);
/* The allowed origin of this request, or NULL (no CORS fields). */
const char *router_cors_origin(router *rt, const http_msg *m, size_t *len);
/* Who and what, taken when the request began (the connection and its
 * head may be gone when the line is written). */
typedef struct access_info {
    char peer[64];
    char method[16];
    char path[200]; /* without the query */
} access_info;
void access_info_fill(access_info *a, srv_conn *c, const http_msg *m);
void router_access_log(router *rt, const access_info *a, const char *model, const char *service, int status,
                       uint64_t in, uint64_t out, int64_t ttfb_us, int64_t dur_us, bool aborted);
rsvc *router_svc_find(router *rt, const char *id);
void rsvc_ref(rsvc *s);
void rsvc_unref(rsvc *s);
/* Ask a router-mode service for its models again (GET /models); the
 * relays on s->listwait are redispatched when the answer comes. */
void rsvc_list_fetch(router *rt, rsvc *s);
/* A relay started or finished its upstream request for s. */
void router_inflight_changed(router *rt, rsvc *s);

/* ---- idle.c ---- */
/* Start the 1 s idle check (router_new) / close it and forget every sleep
 * in flight (router_close; cb-counted like the drain timer). */
void idle_init(router *rt);
void idle_close(router *rt, void (*closed)(uv_handle_t *h));
/* s's activity now (a request forwarded or ended). */
void idle_touch(rsvc *s);
/* A request ended on s: a keep_alive 0 unloads it once nothing runs. */
void idle_request_ended(router *rt, rsvc *s);
/* A state event for s (ready: a new run, its counters unknown; down or
 * sleeping: a keep_alive override ends). */
void idle_on_state(router *rt, rsvc *s, svc_state st);
/* The idle timeout in force for s: -1 never, 0 at once, else ms. */
int64_t idle_timeout_of(router *rt, const rsvc *s);

/* ---- relay.c ---- */
void relay_begin(router *rt, srv_conn *c, const http_msg *m, rep ep, rsvc *svc, const char *target);
void relay_body(relay *x, const view *chunk, bool last);
void relay_client_gone(relay *x);
void relay_client_drained(relay *x);
/* End a request now (drain deadline, shutdown): status/code/message when
 * no response has started, else an SSE error event or a closed
 * connection. */
void relay_kill(relay *x, int status, const char *code, const char *message);
/* A parked or DNS-waiting relay may go on (its service's drain ended, the
 * address is known). */
void relay_redispatch(relay *x);
/* The relay's links for rsvc's lists. */
relay *relay_next(relay *x);
void relay_list_add(relay **head, relay *x);
void relay_list_del(relay **head, relay *x);

/* ---- remote.c ---- */
/* Fill s's endpoint from a preset: 0, or -1 with err (a bad base_url). */
int rsvc_endpoint(rsvc *s, const preset *p, char *err, size_t errlen);
/* The pool for s now: 1 ready (*out), 0 a resolution started (x waits on
 * s->waiting and is redispatched), -1 with err. */
int rsvc_pool(router *rt, rsvc *s, relay *x, upstream_pool **out, char *err, size_t errlen);
/* Drop the pool (reload changed the endpoint, shutdown). */
void rsvc_pool_drop(router *rt, rsvc *s);
/* Cancel a resolution in flight (its waiters must be gone). */
void rsvc_gai_abandon(rsvc *s);
/* The endpoint changed or the service was dropped: a resolution in
 * flight is abandoned and its waiters go on afresh (redispatched: a new
 * lookup of the new host, or their error), or are failed when fail_msg is
 * given. */
void rsvc_endpoint_changed(rsvc *s, const char *fail_msg);
/* The upstream target for a client target on s: the remote's prefix
 * replaces a leading "/v1". Caller frees. */
char *rsvc_target(const rsvc *s, const char *target, size_t len);
/* Whether a client field is passed on to s (a remote never gets the
 * client's Authorization or x-api-key; a local engine does not either when
 * the router's API keys are configured: the router consumed them). */
bool rsvc_forward_field(const rsvc *s, const http_field *f);

#endif
