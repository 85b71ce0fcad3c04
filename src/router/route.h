/* route.h (core) - which service a request's "model" names.  Pure: no
 * I/O, no clock; a lookup allocates nothing.
 *
 * The table holds every routable name (docs/interfaces.md "Model names"):
 *   hard names: service ids and aliases, unique across the configuration
 *               (the config loader refuses a clash, and so does
 *               route_table_init); a hard name always wins;
 *   soft names: each service's model_id, and the names a llama.cpp
 *               router-mode service lists (GET /models, supplied when the
 *               service is READY with route_table_set_listed).  Soft names
 *               may be shared: the running service is preferred, then the
 *               one in the current mode; anything else is a 409 listing the
 *               candidates.
 * A soft name equal to some service's hard name is shadowed by it.
 * "default" is reserved (the config refuses it as an id or alias): it
 * names the router default, settings router.default or the last
 * `gpumod route default`.
 *
 * The engine must accept the model a request is sent with, so the name a
 * client used is not always the one forwarded (route_upstream): a local
 * engine serves its id, aliases and model_id (the drivers pass them all),
 * so only "default" becomes the id; a remote knows none of gpumod's names,
 * so its id, aliases and "default" become its model_id; a llama.cpp
 * router-mode service serves the models it lists, so a request naming
 * the service itself goes to its default_model, else its only model.
 *
 * Names match exactly, byte for byte: OpenAI model names and llama.cpp's
 * aliases are case-sensitive, and a case-folding match could pick a
 * different model than the one the backend would.
 *
 * The names are one array sorted by (name, service): a lookup is a binary
 * search, O(log n), and the answer points into the table (a 409's
 * candidates are a range of it).  The table is rebuilt when the config is
 * reloaded or a router-mode service's list changes, never per request.
 * Running and in-mode flags are kept per service by the router. */
#ifndef GPUMOD_CORE_ROUTE_H
#define GPUMOD_CORE_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef enum route_kind {
    ROUTE_ID,       /* the service id */
    ROUTE_ALIAS,    /* one of its aliases */
    ROUTE_MODEL_ID, /* its model_id */
    ROUTE_LISTED,   /* listed by a llama.cpp router-mode service */
    ROUTE_DEFAULT,  /* "default" -> the router default */
} route_kind;

extern const char *const route_kind_names[]; /* "id" "alias" "model_id" "listed" "default" */

/* What a service brings to the table; strings are borrowed until the
 * table is released (the config outlives it). */
typedef struct route_service {
    const char *id;
    const char *const *aliases; /* n_aliases entries */
    size_t n_aliases;
    const char *model_id; /* NULL: none */
    /* the model the engine is sent when a request names the service itself
     * (its id, an alias, "default"): a remote's model_id, a router-mode
     * service's default_model; NULL: see route_upstream */
    const char *upstream;
    bool router_mode; /* llama.cpp router mode: serves only what it lists */
    bool remote;      /* driver remote: knows none of gpumod's names */
} route_service;

typedef struct route_name {
    const char *name; /* borrowed (config) or owned by listed[] */
    size_t service;   /* index into the services given to init */
    route_kind kind;  /* the strongest way this service has this name */
} route_name;

typedef struct route_table {
    route_service *svc; /* copied array; strings borrowed */
    size_t n_svc;
    unsigned char *flags; /* per service: ROUTE_F_* */
    char ***listed;       /* per service: owned NULL-terminated names, or NULL */
    route_name *names;    /* sorted by (name, service) */
    size_t n_names;
    size_t def; /* the default's service index; SIZE_MAX: none */
} route_table;

#define ROUTE_F_RUNNING 1u /* up or coming up: the router's choice */
#define ROUTE_F_IN_MODE 2u /* part of the current mode */

typedef enum route_status {
    ROUTE_OK = 200,
    ROUTE_NOT_FOUND = 404,
    ROUTE_AMBIGUOUS = 409,
} route_status;

typedef struct route_result {
    route_status status;
    size_t service;  /* ROUTE_OK: index of the service */
    const char *id;  /* ROUTE_OK: its id (borrowed from the table) */
    route_kind kind; /* ROUTE_OK: how the name matched */
    bool no_default; /* ROUTE_NOT_FOUND for "default": none is set */
    /* ROUTE_AMBIGUOUS: the candidates are names[first .. first+count) */
    size_t first, count;
} route_result;

/* Build the table; 0, or -1 with err ("name 'x' is the id of 'a' and an
 * alias of 'b'", an empty name, "default").  def: the default service id
 * or NULL.  The table is empty but valid after a failure (release it). */
int route_table_init(route_table *t, const route_service *svc, size_t n, const char *def, char *err,
                     size_t errlen);
void route_table_release(route_table *t);

/* Replace the names a router-mode service lists (copied); n == 0 clears
 * them.  Names equal to a hard name are kept but shadowed. */
void route_table_set_listed(route_table *t, size_t service, const char *const *names, size_t n);
/* The router default: a service id or alias (NULL clears it).  0, or -1
 * with err when the name is not a service id or alias. */
int route_table_set_default(route_table *t, const char *name, char *err, size_t errlen);
void route_table_set_flags(route_table *t, size_t service, unsigned flags);
/* Index of the service with this id, or SIZE_MAX. */
size_t route_table_find_id(const route_table *t, const char *id);

/* Resolve a model name.  Allocates nothing; the result borrows from t. */
route_result route_resolve(const route_table *t, const char *name);

/* The model name a request resolved to (service, kind) is forwarded
 * with: 0 and *model NULL when the body goes as sent, 0 and *model set
 * (borrowed from t) when its model is replaced, -1 with err when the
 * service cannot tell which of its models is meant (a router-mode
 * service listing several models and no default_model, a remote without
 * model_id):
 *   service 'r' serves several models ('a', 'b') and sets no
 *   unit_vars.default_model: name one of them */
int route_upstream(const route_table *t, size_t service, route_kind kind, const char **model, buf *err);

/* The error message for a 404 or 409, appended to out (one line, the
 * names quoted and sorted, at most 64 listed then "and N more"):
 *   model 'x' not found; available: 'a', 'b', 'default'
 *   no default model is set: set router.default in gpumod.yaml or run 'gpumod route default
 * SERVICE' model 'x' is ambiguous: it is the model_id of 'a', 'b' and none of them is running or in
 * the current mode; name one of them */
void route_message(const route_table *t, const route_result *r, const char *name, buf *out);

#endif
