/* proctree.c - process groups, resident memory and start times from /proc.
 *
 * /proc/PID/stat is the one source: its comm field (2) may hold spaces and
 * parentheses, so fields are counted from the LAST ')' on.  A process that
 * vanishes between readdir and open is simply not a member any more. */
#include "host/proctree.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/errf.h"

static const char *root_of(const char *proc_root)
{
    return proc_root && *proc_root ? proc_root : "/proc";
}

/* Read a small file into b (NUL-terminated); bytes read or -1. */
static ssize_t read_small(const char *path, char *b, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, b + got, len - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    b[got] = 0;
    return (ssize_t)got;
}

/* Field k (1-based as in proc(5), k >= 3) of /proc/PID/stat as text after
 * the comm's closing paren; 0 on success. */
static int stat_field(const char *root, pid_t pid, int k, unsigned long long *out)
{
    char path[512], b[1024];
    snprintf(path, sizeof path, "%s/%d/stat", root, (int)pid);
    if (read_small(path, b, sizeof b) <= 0) return -1;
    char *p = strrchr(b, ')');
    if (!p) return -1;
    p++;
    /* after ')': " S ppid pgrp ..." -> field 3 is the state */
    int f = 2;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        f++;
        if (f == k) {
            if (k == 3) { /* the state letter: not a number */
                *out = (unsigned char)*p;
                return 0;
            }
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (end == p || errno) return -1;
            *out = (unsigned long long)v;
            return 0;
        }
        while (*p && *p != ' ') p++;
    }
    return -1;
}

int proctree_group(const char *proc_root, pid_t pgid, pid_t *pids, size_t max, char *err, size_t errlen)
{
    const char *root = root_of(proc_root);
    DIR *d = opendir(root);
    if (!d) {
        errf(err, errlen, "cannot list '%s': %s", root, strerror(errno));
        return -1;
    }
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        unsigned long long g, st;
        if (stat_field(root, (pid_t)pid, 5, &g) != 0 || (pid_t)g != pgid) continue;
        /* a zombie holds no memory and cannot be signalled away: it waits
         * for its parent's wait(); not a member that keeps a stop waiting */
        if (stat_field(root, (pid_t)pid, 3, &st) == 0 && (st == 'Z' || st == 'X')) continue;
        if ((size_t)n < max) pids[n] = (pid_t)pid;
        n++;
    }
    closedir(d);
    return n;
}

uint64_t proctree_rss(const char *proc_root, pid_t pid)
{
    char path[512], b[4096];
    snprintf(path, sizeof path, "%s/%d/status", root_of(proc_root), (int)pid);
    if (read_small(path, b, sizeof b) <= 0) return 0;
    const char *p = strstr(b, "\nVmRSS:");
    if (!p) return 0;
    p += 7;
    while (*p == ' ' || *p == '\t') p++;
    unsigned long long kb = strtoull(p, NULL, 10);
    return (uint64_t)kb * 1024;
}

uint64_t proctree_group_rss(const char *proc_root, pid_t pgid, size_t *n)
{
    pid_t pids[1024];
    int k = proctree_group(proc_root, pgid, pids, sizeof pids / sizeof *pids, NULL, 0);
    if (k < 0) k = 0;
    if ((size_t)k > sizeof pids / sizeof *pids) k = (int)(sizeof pids / sizeof *pids);
    uint64_t sum = 0;
    for (int i = 0; i < k; i++) sum += proctree_rss(proc_root, pids[i]);
    if (n) *n = (size_t)k;
    return sum;
}

uint64_t proctree_starttime(const char *proc_root, pid_t pid)
{
    unsigned long long v;
    if (stat_field(root_of(proc_root), pid, 22, &v) != 0) return 0;
    return (uint64_t)v;
}
