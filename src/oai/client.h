/* client.h (oai) - streaming POSTs on a libuv loop through libcurl multi
 * (curl_multi_socket_action): one uv_poll_t per socket curl opens, one
 * uv_timer_t for curl's timeouts.  bench's load generator (bench/load.c)
 * and eval's runner (eval/run.c) drive it; the unit tests reach it
 * through bload_run. */
#ifndef GPUMOD_BENCH_CLIENT_H
#define GPUMOD_BENCH_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "oai/breq.h"

typedef struct bclient bclient;

/* A request ended (any way): r is settled (breq_finish or breq_fail ran;
 * t_done set), req_ud is what bclient_send got, now_ns the completion
 * stamp.  Runs on the loop thread; it may call bclient_send. */
typedef void (*bclient_done_fn)(void *ud, breq *r, void *req_ud, int64_t now_ns);

typedef struct bclient_opts {
    const char *url;
    const char *const *headers;  /* extra "Name: value" lines, NULL-terminated (may be NULL) */
    int64_t timeout_ms;          /* each request's whole deadline (> 0) */
    long max_conns;              /* connections kept for reuse (>= concurrency) */
    bclient_done_fn done;
    /* each SSE data payload (not "[DONE]") of a 2xx stream after breq
     * took it, for a caller that keeps what the model said (may be NULL) */
    void (*data)(void *ud, breq *r, void *req_ud, const char *json, size_t len);
    void *ud;
} bclient_opts;

/* The monotonic clock (CLOCK_MONOTONIC ns) every stamp uses. */
int64_t bclient_now_ns(void);

/* NULL with err when libcurl could not start. */
bclient *bclient_new(uv_loop_t *loop, const bclient_opts *o, char *err, size_t errlen);
/* Start one streaming POST of body (borrowed until done) into r (borrowed
 * until done; t_sched is the caller's).  request_id: the X-Request-Id
 * value, or NULL for none. */
void bclient_send(bclient *c, breq *r, const char *body, size_t len, const char *request_id, void *req_ud);
long bclient_in_flight(const bclient *c);
uint64_t bclient_bytes_in(const bclient *c); /* body bytes read, all requests */
/* End every request in flight now, each failed with why (done runs). */
void bclient_abort_all(bclient *c, const char *why);
/* Stop: aborts what is in flight ("client stopped"), closes the handles.
 * The loop must run once more (uv_run DEFAULT) to finish the closes;
 * then bclient_free. */
void bclient_close(bclient *c);
void bclient_free(bclient *c);

/* Make room for `streams` connections: raise RLIMIT_NOFILE's soft limit
 * to the hard one when the soft one is too low.  0, or -1 with err when
 * even the hard limit is too low. */
int bclient_fd_budget(long streams, char *err, size_t errlen);

#endif
