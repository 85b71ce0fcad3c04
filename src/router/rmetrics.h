/* rmetrics.h - the router's own metrics, rendered as Prometheus text for
 * GET /metrics (src/router/promtext.c does the exposition format).  Cheap
 * to update (a few integer/double adds; no allocation after a model or
 * service is first seen), so the relay can call it per request, never
 * per token.  Families (all prefixed gpumod_):
 *   router_requests_total{model,service,status}     counter
 *   router_inflight                                  gauge
 *   router_bytes_relayed_total{direction="in|out"}   counter
 *   router_ttfb_seconds, router_request_duration_seconds   histograms
 *   router_queue_depth{service}                      gauge
 *   router_queue_wait_seconds                        histogram
 *   activation_duration_seconds{outcome}             histogram
 *   switch_duration_seconds{outcome}                 histogram
 *   service_state{service,state}                     gauge (1 for the current state)
 *   gpu_memory_free_bytes{gpu}, gpu_memory_total_bytes{gpu}, host_mem_available_bytes   gauges
 */
#ifndef GPUMOD_RMETRICS_H
#define GPUMOD_RMETRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "router/rhost.h"
#include "util/buf.h"

typedef struct rmetrics rmetrics;

rmetrics *rm_new(void);
void rm_free(rmetrics *m);

/* One request finished (status 0: the client went away first).  model
 * may be NULL; service NULL: not routed (the model then counts as
 * "unknown": only a routed name is a label).  ttfb_s or duration_s < 0:
 * not observed (no byte was sent). */
void rm_request(rmetrics *m, const char *model, const char *service, int status, uint64_t bytes_in,
                uint64_t bytes_out, double ttfb_s, double duration_s);
void rm_inflight(rmetrics *m, int delta);
void rm_queue_depth(rmetrics *m, const char *service, int64_t depth);
/* Called by the activator (src/router/activate.c) once per request that
 * waited in a queue, whatever the outcome; not by the relay. */
void rm_queue_wait(rmetrics *m, double seconds);
void rm_activation(rmetrics *m, double seconds, bool ok);
void rm_switch(rmetrics *m, double seconds, bool ok);

/* The whole page, the services and memory read through h (NULL, or a
 * NULL member: no service or memory figures). */
int rm_render(rmetrics *m, const router_host *h, buf *out, char *err, size_t errlen);

#endif
