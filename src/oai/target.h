/* target.h (oai) - what a helper talks to: an http(s) URL, or a service
 * id / model name resolved through the daemon's route table to the
 * router; and the server's identity (flavor, build, model path, context
 * size, config hash).  bench measures it, eval asks it questions.
 *
 * Router targets go through the router because that is the path every
 * client takes; the server's own endpoints (/metrics, /tokenize, /props)
 * are reached through /upstream/ID/.  The API key is a header only: it is
 * never printed and never lands in a document. */
#ifndef GPUMOD_OAI_TARGET_H
#define GPUMOD_OAI_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct btarget {
    char *spec;          /* as given: a service id, a model name or a URL */
    char *via;           /* "router" or "url" */
    char *service;       /* the service id through the router, else NULL */
    char *base_url;      /* http(s)://host:port (no trailing slash) */
    char *model;         /* the "model" sent */
    char *endpoint;      /* "/v1/chat/completions" (default) or "/v1/completions" */
    char *metrics_url;   /* where /metrics is scraped (router: /upstream/ID/metrics), or NULL */
    char *tokenize_url;  /* /tokenize (router: /upstream/ID/tokenize), or NULL */
    char *props_url;     /* where /props is read (router: /upstream/ID/props) */
    char *flavor;        /* "llamacpp", "vllm" or "unknown" */
    char *build;         /* server build (/props build_info, /version, system_fingerprint), or NULL */
    char *config_hash;   /* the service's preset hash (router targets), or NULL */
    char *auth_header;   /* "Authorization: Bearer ..." or NULL (never printed) */
    cJSON *identity;     /* what /props or /v1/models said that identifies it: build_info,
                          * model_path, total_slots, n_ctx (llama), max_model_len, version (vLLM),
                          * model_id, owned_by */
} btarget;

/* How to resolve a target. */
typedef struct btarget_opts {
    const char *who;         /* "bench" or "eval": the prefix of error texts */
    const char *target;      /* a URL, a service id or a model name */
    const char *model;       /* --model or NULL */
    const char *api_key_env; /* --api-key-env or NULL (URL: OPENAI_API_KEY, router: router.api_keys_env) */
    bool completions;        /* endpoint /v1/completions instead of chat */
    double timeout_s;        /* the most the start of a service through the router may take */
} btarget_opts;

/* Resolve o->target.  0, or the exit code (1 unreachable or failed, 2
 * usage, 3 no daemon) with err. */
int btarget_resolve(btarget *t, const btarget_opts *o, char *err, size_t errlen);
void btarget_release(btarget *t);
/* The headers of every request (auth), NULL-terminated; borrowed from t. */
const char *const *btarget_headers(const btarget *t);
/* {spec, via, service, base_url, model, endpoint, flavor, build,
 * config_hash, identity}.  Caller frees. */
cJSON *btarget_json(const btarget *t);
/* The context size the server reports: /props n_ctx (llama-server: per
 * slot) or /v1/models max_model_len (vLLM); -1 when it says none. */
long btarget_ctx(const btarget *t);

#endif
