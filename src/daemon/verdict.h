/* verdict.h - the verdict object of docs/interfaces.md ("Gate verdict"),
 * which every admission path writes: the daemon's starts, switches and
 * preflights, and the CLI's preflight and simulate. */
#ifndef GPUMOD_VERDICT_H
#define GPUMOD_VERDICT_H

#include "core/gate.h"
#include "daemon/need.h"
#include "host/types.h"
#include "util/buf.h"

/* A need as {"source","host_bytes","gpu_bytes"} (docs/api.md). */
void need_json(buf *b, const need *n);

void verdict_json(buf *b, const char *via, const char *service, const verdict *v, const need_detail *nd,
                  const snapshot *s);

#endif
