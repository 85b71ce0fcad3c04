/* device check: one snapshot_take, printed */
#include <stdio.h>
#include <stdlib.h>
#include "host/host.h"
int main(int argc, char **argv)
{
    snapshot_opts o = {.nvml_timeout_ms = 5000, .smi_timeout_ms = 10000};
    if (argc > 1) o.nvml_lib = argv[1];
    snapshot s;
    snapshot_take(&s, &o);
    printf("nvml=%s source=%s driver=%d version=%s nvml_ms=%lld gpu_error=[%s]\n", nvml_state_names[s.nvml],
           gpu_source_names[s.source], s.nvidia_driver, s.driver_version, (long long)s.nvml_ms, s.gpu_error);
    printf("host meminfo=%d buddy=%d psi=%d total=%llu avail=%llu contig2m=%llu\n", s.host.meminfo_ok,
           s.host.buddyinfo_ok, s.host.psi_ok, (unsigned long long)s.host.mem_total,
           (unsigned long long)s.host.mem_available, (unsigned long long)s.host.contig_2m_bytes);
    for (size_t i = 0; i < s.ngpus; i++) {
        gpu_dev *d = &s.gpus[i];
        printf("gpu %d [%s] [%s] [%s] unified=%d total=%llu free=%llu used=%llu reserved=%llu util=%d/%d temp=%d power=%lld nprocs=%zu\n",
               d->index, d->name, d->uuid, d->bus_id, d->unified, (unsigned long long)d->total_bytes,
               (unsigned long long)d->free_bytes, (unsigned long long)d->used_bytes,
               (unsigned long long)d->reserved_bytes, d->util_gpu_pct, d->util_mem_pct, d->temp_c,
               (long long)d->power_mw, d->nprocs);
        for (size_t j = 0; j < d->nprocs; j++)
            printf("  pid %u used=%llu\n", d->procs[j].pid, (unsigned long long)d->procs[j].used_bytes);
    }
    snapshot_release(&s);
    return 0;
}
