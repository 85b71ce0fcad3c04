/* policy.h - the settings -> gate glue every admission path shares (the
 * daemon's starts, switches and preflights, and the CLI's): the gate
 * policy and snapshot options a configuration asks for.  No I/O. */
#ifndef GPUMOD_POLICY_H
#define GPUMOD_POLICY_H

#include "config/config.h"
#include "core/gate.h"
#include "host/types.h"
#include "util/buf.h"

void policy_from_settings(const settings *s, gate_policy *p);
void snapshot_opts_from_settings(const settings *s, snapshot_opts *o);

#endif
