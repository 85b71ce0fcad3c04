/* svcwait.h - `gpumod service start` waiting for its start ticket's
 * outcome on the daemon's event stream (GET /events?follow=1&service=),
 * not by polling: each event of the service, the stream's opening and a
 * tick (200 ms on a terminal, for the progress bar; 1 s otherwise) make
 * it read the service once more and decide. */
#ifndef GPUMOD_SVCWAIT_H
#define GPUMOD_SVCWAIT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"

typedef struct svc_wait_in {
    const char *id;
    uint64_t seq;          /* the start ticket */
    const cJSON *daemon;   /* the start answer's "daemon" {pid, started}: a restart ends the wait */
    int64_t limit_ms;      /* how long to wait */
    bool tty;              /* draw the progress bar on stdout */
} svc_wait_in;

/* Wait until ticket in->seq (or a newer start that replaced it) has an
 * outcome.  *svc: the service's JSON from the start answer (taken); on 0
 * it is the service with that outcome (caller deletes) for the report.
 * Else the exit code after a message on stderr: the ticket gone (1), the
 * daemon restarted or gone (3), the limit passed (4). */
int svc_wait_start(cli *c, const svc_wait_in *in, cJSON **svc);

#endif
