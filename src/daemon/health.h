/* health.h - one asynchronous HTTP request on the loop, for readiness
 * and health probes and the canary: connect to host:port, send it, read
 * the status line (and, for a request, the body), all under a deadline
 * (uv_timer).  The answer is the status code (200 = healthy) or 0 with
 * the reason. */
#ifndef GPUMOD_HEALTH_H
#define GPUMOD_HEALTH_H

#include <stdint.h>

#include <uv.h>

typedef struct health_probe health_probe;

/* status: the response's status code, or 0 when there was none (err says
 * why: refused, timed out, a malformed response).  err borrowed for the
 * call. */
typedef void (*health_cb)(int status, const char *err, void *ud);

/* host: a numeric IPv4/IPv6 address, "localhost", or a wildcard (0.0.0.0,
 * ::), which is probed on loopback.  cb exactly once, unless cancelled
 * first.  NULL only for a host that is not an address (cb not called,
 * err set). */
health_probe *health_get(uv_loop_t *loop, const char *host, int port, const char *path, int64_t timeout_ms,
                         health_cb cb, void *ud, char *err, size_t errlen);

/* 0 when health_get would accept host (numeric IPv4/IPv6, "localhost", a
 * wildcard, NULL or "" for 127.0.0.1), else -1 with err ("host 'x' is not
 * a numeric IP address or localhost").  For admission and config checks:
 * a host the probe cannot reach must fail a start at once, not after
 * startup_timeout. */
int health_check_host(const char *host, char *err, size_t errlen);

/* One request with an optional JSON body (json_body NULL: none), whose
 * whole answer is read: status and body (decoded, at most 1 MiB;
 * borrowed for the call), or status 0, body NULL and err.  As
 * health_get otherwise (the canary's requests). */
typedef void (*health_body_cb)(int status, const char *body, size_t len, const char *err, void *ud);
health_probe *health_request(uv_loop_t *loop, const char *host, int port, const char *method, const char *path,
                             const char *json_body, int64_t timeout_ms, health_body_cb cb, void *ud, char *err,
                             size_t errlen);

/* No callback after this; the probe frees itself once its handles close. */
void health_cancel(health_probe *p);

#endif
