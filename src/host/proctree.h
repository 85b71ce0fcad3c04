/* proctree.h - a service's processes as the kernel sees them: the members
 * of a process group (every pid whose /proc/PID/stat names that pgid),
 * their resident memory, and a process's start time (to tell a pid from a
 * reused one).  Read from /proc (proc_root NULL: "/proc"); a process that
 * vanishes mid-scan is skipped, never an error. */
#ifndef GPUMOD_PROCTREE_H
#define GPUMOD_PROCTREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The pids whose process group is pgid (at most max into pids).  Returns
 * how many exist (may exceed max), or -1 with err when /proc cannot be
 * listed. */
int proctree_group(const char *proc_root, pid_t pgid, pid_t *pids, size_t max, char *err, size_t errlen);

/* Resident bytes (VmRSS) of pid; 0 when it is gone or has none. */
uint64_t proctree_rss(const char *proc_root, pid_t pid);

/* Sum of VmRSS over the group; *n set to the number of members. */
uint64_t proctree_group_rss(const char *proc_root, pid_t pgid, size_t *n);

/* The process's start time in clock ticks since boot (field 22 of
 * /proc/PID/stat), 0 when it is gone.  With the pid it names one process
 * for good: a reused pid has another start time. */
uint64_t proctree_starttime(const char *proc_root, pid_t pid);

#endif
