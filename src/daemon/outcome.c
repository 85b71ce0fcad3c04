/* outcome.c - an outcome's HTTP status and error code (outcome.h): one
 * table, so every path that renders a supervisor result says the same. */
#include "daemon/outcome.h"

#include <stddef.h>

static const struct {
    int status;
    const char *code;
} outcomes[] = {
    [SUP_OK] = {200, NULL},
    [SUP_NOT_FOUND] = {404, "not_found"},
    [SUP_GATE_REFUSED] = {409, "gate_refused"},
    [SUP_PORT_HELD] = {409, "port_held"},
    [SUP_CONFLICT] = {409, "conflict"},
    [SUP_NEEDS_PERSON] = {409, "conflict"},
    [SUP_SWITCH_IN_PROGRESS] = {409, "switch_in_progress"},
    [SUP_START_FAILED] = {422, "start_failed"},
    [SUP_NEED_UNKNOWN] = {422, "need_unknown"},
    [SUP_SHUTTING_DOWN] = {503, "shutting_down"},
    [SUP_BAD_REQUEST] = {400, "bad_request"},
};

int sup_outcome_status(sup_outcome o)
{
    return (unsigned)o < sizeof outcomes / sizeof *outcomes ? outcomes[o].status : 500;
}

const char *sup_outcome_code(sup_outcome o)
{
    return (unsigned)o < sizeof outcomes / sizeof *outcomes ? outcomes[o].code : "internal";
}
