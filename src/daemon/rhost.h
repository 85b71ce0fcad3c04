/* rhost.h - the table the daemon lends the router (router/rhost.h),
 * filled over its supervisor, mode switch and host monitor. */
#ifndef GPUMOD_DAEMON_RHOST_H
#define GPUMOD_DAEMON_RHOST_H

#include "daemon/api.h"
#include "router/rhost.h"

typedef struct rhost_glue rhost_glue;

/* h filled to reach g's parts (g->sw may be set later: each call looks).
 * The glue it points to is freed with rhost_free, after the router. */
rhost_glue *rhost_fill(router_host *h, gpumodd *g);
void rhost_free(rhost_glue *gl);

#endif
