/* hostview.h - what the memory commands (gpu, preflight, simulate, model
 * inspect) share: human-readable sizes, bars, needs and estimates, the
 * estimator's flags, and (through core/policy.h) the settings -> gate
 * glue and the verdict JSON. */
#ifndef GPUMOD_HOSTVIEW_H
#define GPUMOD_HOSTVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/gate.h"
#include "core/policy.h"
#include "daemon/verdict.h"
#include "host/host.h"
#include "daemon/need.h"
#include "model/eflags.h"
#include "util/buf.h"

/* policy_from_settings, snapshot_opts_from_settings: core/policy.h;
 * verdict_json: daemon/verdict.h (the daemon writes it too). */
/* [#####.....] of width w for used/total */
void fmt_bar(buf *b, uint64_t used, uint64_t total, int w);
/* one line per need: host and each GPU */
void need_text(buf *b, const need_detail *nd);
/* Take the snapshot the settings ask for. */
void snapshot_for(const settings *s, snapshot *snap);

/* The estimator flags shared by `model inspect` and `simulate`:
 * --ctx N --parallel N --cache-type-k T --cache-type-v T --ngl N|all
 * --n-cpu-moe N --flash-attn on|off|auto.  Returns 1 when argv[*i] was one
 * (advancing *i past its value), 0 when not, -1 after a usage error. */
struct cli;
struct cmd;
int est_flag(const struct cli *c, const struct cmd *k, int argc, char **argv, int *i, est_params *ep,
             unsigned *given);
/* Text breakdown of an estimate by part, per device and host. */
void estimate_text(buf *b, const estimate *e, const int *dev_index);

#endif
