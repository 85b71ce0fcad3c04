/* policy.h - the settings -> gate glue every admission path shares (the
 * daemon's starts, switches and preflights, and the CLI's): the gate
 * policy and snapshot options a configuration asks for, and the verdict
 * object of docs/interfaces.md ("Gate verdict").  No I/O. */
#ifndef GPUMOD_POLICY_H
#define GPUMOD_POLICY_H

#include "config/config.h"
#include "core/gate.h"
#include "host/types.h"
#include "model/need.h"
#include "util/buf.h"

void policy_from_settings(const settings *s, gate_policy *p);
void snapshot_opts_from_settings(const settings *s, snapshot_opts *o);
/* The verdict object of docs/interfaces.md ("Gate verdict"). */
void verdict_json(buf *b, const char *via, const char *service, const verdict *v, const need_detail *nd,
                  const snapshot *s);

#endif
