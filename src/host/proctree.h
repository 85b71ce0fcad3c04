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

/* Sum of VmRSS over the group, from one walk of /proc; *n set to the
 * number of members, the first max of them in pids (pids may be NULL
 * with max 0; at most 1024 are counted). */
uint64_t proctree_group_rss(const char *proc_root, pid_t pgid, pid_t *pids, size_t max, size_t *n);

/* Resident bytes a process owns: RssAnon + RssShmem (/proc/PID/status).
 * File-backed pages (RssFile: mmapped weights, libraries) are left out:
 * the kernel can drop them under pressure, and counting them would make
 * an engine that mmaps a 40 GiB model look 40 GiB over its need.  On a
 * kernel without RssAnon (< 4.5), VmRSS.  0 when it is gone. */
uint64_t proctree_anon(const char *proc_root, pid_t pid);

/* One group's members and memory, from proctree_scan. */
typedef struct proctree_group_info {
    pid_t pgid;          /* the group asked for */
    size_t n;            /* live members (zombies left out) */
    pid_t *pids;         /* the n members; proctree_scan_release frees */
    uint64_t anon_bytes; /* proctree_anon summed over the members */
} proctree_group_info;

/* ONE pass over /proc for several groups (the watchdog's tick, a stop's
 * poll): out[i] (n of them, caller-owned) describes pgids[i].  A pgid
 * listed twice fills its first slot only.  0, or -1 with err when /proc
 * cannot be listed (out[] then holds empty groups).  Release out with
 * proctree_scan_release either way. */
int proctree_scan(const char *proc_root, const pid_t *pgids, size_t n, proctree_group_info *out, char *err,
                  size_t errlen);
void proctree_scan_release(proctree_group_info *out, size_t n);

/* The process's start time in clock ticks since boot (field 22 of
 * /proc/PID/stat), 0 when it is gone.  With the pid it names one process
 * for good: a reused pid has another start time. */
uint64_t proctree_starttime(const char *proc_root, pid_t pid);

#endif
