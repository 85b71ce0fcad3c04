/* startup.h - bringing the start-up mode up (docs/modes.md "Start-up
 * mode"): wait until the GPU memory a previous daemon left is released,
 * then the switch, retried with backoff within switch.startup_retry. */
#ifndef GPUMOD_STARTUP_H
#define GPUMOD_STARTUP_H

#include "daemon/switch.h"

typedef struct startup startup;

/* Begin bringing mode `target` (a configured mode id) up through x, with
 * env's loop, monitor, store and supervisor (borrowed; env is copied).
 * Every step is a switch.phase event with data.phase "startup". */
startup *startup_begin(swx *x, const switch_env *env, const char *target);

/* The daemon shuts down: no further attempt (a callback still to come
 * finds it stopped).  Safe with NULL. */
void startup_stop(startup *su);

/* After the loop has ended (no callback can come).  Safe with NULL. */
void startup_free(startup *su);

#endif
