/* outcome.h - how a supervisor request ended (sup_result, supervisor.h),
 * and the one place an outcome becomes the control API's words: its HTTP
 * status and its error code (docs/interfaces.md, "Errors").
 *
 * The supervisor names outcomes and never an HTTP status; the control
 * API renders them, and so does the mode switch where its journal quotes
 * a start's or a stop's result. */
#ifndef GPUMOD_OUTCOME_H
#define GPUMOD_OUTCOME_H

typedef enum sup_outcome {
    SUP_OK,                 /* done: ready, stopped, down already */
    SUP_NOT_FOUND,          /* no such service is configured (or it is no longer) */
    SUP_GATE_REFUSED,       /* the gate said no; nothing was spawned */
    SUP_PORT_HELD,          /* another process listens on the service's port */
    SUP_CONFLICT,           /* not now: stopping, still being cleaned up, stopped before it was ready,
                               its restart cancelled */
    SUP_NEEDS_PERSON,       /* it failed, and only a person may start it again */
    SUP_SWITCH_IN_PROGRESS, /* the start guard: a mode switch owns the services */
    SUP_START_FAILED,       /* the start failed (the message ends with the log tail) */
    SUP_NEED_UNKNOWN,       /* what the service needs cannot be told */
    SUP_SHUTTING_DOWN,      /* the daemon is shutting down */
    SUP_BAD_REQUEST,        /* the request cannot apply to this service (an override its driver or the
                               runner does not take) */
} sup_outcome;

/* 200, or the HTTP status of the outcome's error. */
int sup_outcome_status(sup_outcome o);
/* The error code (static), NULL for SUP_OK. */
const char *sup_outcome_code(sup_outcome o);

#endif
