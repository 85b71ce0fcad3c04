/* pf_restart.h - POST /preflight's dry run of a restart with overrides:
 * would a (re)start of a service with these overrides be admitted, as if
 * the service were stopped first (what it holds now given back)?  Starts
 * and stops nothing. */
#ifndef GPUMOD_PF_RESTART_H
#define GPUMOD_PF_RESTART_H

#include "config/overrides.h"
#include "daemon/supervisor.h"
#include "host/types.h"
#include "util/buf.h"

typedef struct pf_restart_in {
    sup *sup;
    const settings *set;
    store *st;               /* may be NULL */
    const snapshot *snap;    /* a fresh one */
    const preset *p;         /* the service's configured preset */
    const overrides *ov;
} pf_restart_in;

/* The verdict (daemon/verdict.h's object, "via": "daemon") of starting
 * p with ov on the snapshot as predicted after p's service stops (core/
 * plan.c: its holding, measured or admitted, given back; the
 * reservations of other starts in flight counted), with a member more:
 * "restart": {"overrides", "held" (the need given back, or null when
 * nothing runs), "after_stop" (the predicted figures) and "deferred" (the
 * measured refusal on fragmentation or pressure that a stop may clear,
 * or null)}; its closing brace left off for the caller's members.  0, or
 * -1 with *status (400: the overrides do not apply to p; 422: the need
 * cannot be found), *code and err. */
int pf_restart_json(const pf_restart_in *in, buf *out, int *status, const char **code, char *err, size_t errlen);

#endif
