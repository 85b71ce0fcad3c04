/* link.h (tune) - what `gpumod tune` asks of the daemon, through the
 * control-API client only: the lease that keeps the host for the run
 * (POST /tune; renewed by a thread every ttl/3 while the run measures;
 * released by DELETE, which restores the host: docs/api.md "Tune"), a
 * restart of the service with a variant's overrides, the gate's dry run
 * for a variant (POST /preflight with overrides), the service, its log's
 * tail, the host. */
#ifndef GPUMOD_TUNE_LINK_H
#define GPUMOD_TUNE_LINK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"

typedef struct tlink {
    config_paths paths;
    const char *service;
    char *lease_id;
    int64_t ttl_ms;
    pthread_t hb;
    bool hb_running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *state;          /* the JSON sent with the next renewal (owned, under mu) */
    bool state_dirty;
    volatile bool stop;
    char lost[512];       /* set (under mu) when a renewal found the lease gone */
} tlink;

void tlink_init(tlink *l, const config_paths *paths, const char *service);
/* GET path: the JSON (caller deletes), or NULL with err. */
cJSON *tlink_get(tlink *l, const char *path, char *err, size_t errlen);
/* Take the lease with the run's state; the renewal thread starts.  0, or
 * -1 with err (a lease held already: its id and service in the text). */
int tlink_lease(tlink *l, bool allow_traffic, int64_t ttl_ms, const char *state, char *err, size_t errlen);
/* The state the next renewal carries (and one sent now). */
void tlink_save(tlink *l, const char *state);
/* The lease was found gone (expired: the daemon restored the host): the
 * reason, or NULL while it holds. */
const char *tlink_lost(tlink *l);
/* Stop renewing and DELETE the lease (the daemon restores the host).  0, or -1 with err. */
int tlink_release(tlink *l, char *err, size_t errlen);
void tlink_free(tlink *l);

typedef enum { TSTART_READY, TSTART_REFUSED, TSTART_FAILED, TSTART_CANARY, TSTART_ERROR } tstart_kind;
typedef struct tstart {
    tstart_kind kind;
    char msg[2048];   /* why not ready: the gate's reason, the log tail, the canary's report */
    double ms;        /* the restart's wall time */
    cJSON *svc;       /* the service when ready (caller deletes) */
} tstart;
/* Restart the service with overrides (JSON text, "null" for the preset)
 * and wait for the outcome (at most timeout_ms). */
void tlink_restart(tlink *l, const char *overrides, int64_t timeout_ms, tstart *out);
/* The gate's dry run for overrides: 1 admitted, 0 refused (*why set), -1
 * the daemon could not tell (*why set). */
int tlink_preflight(tlink *l, const char *overrides, char *why, size_t whylen);
/* The service's last n log lines (caller frees; "" when none). */
char *tlink_log_tail(tlink *l, int n);

#endif
