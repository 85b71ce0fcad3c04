/* api_ebench.h - POST /services/ID/engine-bench: llama.cpp's llama-bench
 * run once for a llama.cpp preset with a start's overrides, admitted by
 * the gate as a start of that need would be, off the loop, under a
 * deadline (docs/api.md "Engine bench").  One at a time. */
#ifndef GPUMOD_API_EBENCH_H
#define GPUMOD_API_EBENCH_H

#include "daemon/api.h"

/* Answers c now (400, 404, 409, 422) or once the run has ended. */
void api_ebench_post(gpumodd *d, srv_conn *c, const char *id, const view *body);

/* The daemon shuts down: a llama-bench that runs is killed (its group)
 * within 100 ms, its request answered 422 saying so, instead of the
 * shutdown waiting for it up to its timeout. */
void api_ebench_shutdown(void);

#endif
