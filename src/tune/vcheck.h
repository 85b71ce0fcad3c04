/* vcheck.h (tune) - a variant checked before anything starts:
 *   1. its overrides read as the daemon reads a start's (config/overrides.h:
 *      the preset file's own fields; a key the driver does not take, a
 *      value out of range: SKIPPED with those words);
 *   2. the rule table (core/rules.h) on the preset with the overrides
 *      applied and the GPU the daemon reports: a `refuse` rule is SKIPPED
 *      with its text, a `warn` rule lets it run, flagged, its text in the
 *      row;
 *   3. the gate's dry run (POST /preflight with the overrides: a restart
 *      as if the service were stopped first): refused, SKIPPED with the
 *      gate's reason.
 * Nothing is started by a check. */
#ifndef GPUMOD_TUNE_VCHECK_H
#define GPUMOD_TUNE_VCHECK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "core/rules.h"
#include "tune/tune.h"

typedef struct vcheck {
    config cfg;            /* the preset as this client reads it */
    const preset *p;       /* NULL: unknown here (the daemon's checks still run) */
    rule_host host;
    bool host_known;
} vcheck;

/* The preset of service (from the configuration the environment names)
 * and the GPU facts of GET /status's first GPU (status may be NULL). */
void vcheck_init(vcheck *vc, const char *service, const cJSON *status);
void vcheck_release(vcheck *vc);
/* true: may start (row->reason may carry warn rules, row->flagged);
 * false: row is SKIPPED with its reason. */
bool vcheck_variant(vcheck *vc, tlink *l, const tune_space *s, const tune_variant *v, tune_row *row);

#endif
