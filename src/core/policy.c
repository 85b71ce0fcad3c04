/* policy.c - settings -> gate policy and snapshot options (policy.h). */
#include "core/policy.h"

#include <string.h>

#define MIB (1024ull * 1024ull)

void policy_from_settings(const settings *s, gate_policy *p)
{
    p->host_factor = s->memory.host_factor;
    p->host_margin_bytes = (uint64_t)s->memory.host_margin_mb * MIB;
    p->gpu_margin_bytes = (uint64_t)s->memory.gpu_margin_mb * MIB;
    p->uma_reserve_bytes = (uint64_t)s->memory.uma_reserve_mb * MIB;
    p->min_contig_bytes = (uint64_t)s->memory.min_contig_mb * MIB;
    p->psi_some_avg10_max = s->memory.psi_some_avg10_max;
}

void snapshot_opts_from_settings(const settings *s, snapshot_opts *o)
{
    memset(o, 0, sizeof *o);
    o->nvml_timeout_ms = s->memory.nvml_timeout_ms;
    o->smi_timeout_ms = s->memory.nvml_timeout_ms * 2;
}
