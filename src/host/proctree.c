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

#include "util/buf.h"
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

/* Field k (1-based as in proc(5), k >= 3) of a /proc/PID/stat text b,
 * counted after the comm's closing paren; 0 on success. */
static int field_in(const char *b, int k, unsigned long long *out)
{
    const char *p = strrchr(b, ')');
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

static int read_stat(const char *root, pid_t pid, char *b, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%d/stat", root, (int)pid);
    return read_small(path, b, len) <= 0 ? -1 : 0;
}

static int stat_field(const char *root, pid_t pid, int k, unsigned long long *out)
{
    char b[1024];
    if (read_stat(root, pid, b, sizeof b)) return -1;
    return field_in(b, k, out);
}

/* The kB value of "\nKEY:" in a /proc/PID/status text; -1 when absent. */
static long long status_kb(const char *b, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\n%s:", key);
    const char *p = strstr(b, pat);
    if (!p) return -1;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t') p++;
    char *end;
    errno = 0;
    unsigned long long kb = strtoull(p, &end, 10);
    if (end == p || errno) return -1;
    return (long long)kb;
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
        /* one read of the stat for both fields: this walk reads every
         * pid's, on the daemon's loop */
        char b[1024];
        unsigned long long g, st;
        if (read_stat(root, (pid_t)pid, b, sizeof b) != 0 || field_in(b, 5, &g) != 0 || (pid_t)g != pgid)
            continue;
        /* a zombie holds no memory and cannot be signalled away: it waits
         * for its parent's wait(); not a member that keeps a stop waiting */
        if (field_in(b, 3, &st) == 0 && (st == 'Z' || st == 'X')) continue;
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
    long long kb = status_kb(b, "VmRSS");
    return kb > 0 ? (uint64_t)kb * 1024 : 0;
}

uint64_t proctree_group_rss(const char *proc_root, pid_t pgid, pid_t *pids, size_t max, size_t *n)
{
    pid_t all[1024];
    int k = proctree_group(proc_root, pgid, all, sizeof all / sizeof *all, NULL, 0);
    if (k < 0) k = 0;
    if ((size_t)k > sizeof all / sizeof *all) k = (int)(sizeof all / sizeof *all);
    uint64_t sum = 0;
    for (int i = 0; i < k; i++) {
        sum += proctree_rss(proc_root, all[i]);
        if ((size_t)i < max) pids[i] = all[i];
    }
    if (n) *n = (size_t)k;
    return sum;
}

uint64_t proctree_starttime(const char *proc_root, pid_t pid)
{
    unsigned long long v;
    if (stat_field(root_of(proc_root), pid, 22, &v) != 0) return 0;
    return (uint64_t)v;
}

uint64_t proctree_anon(const char *proc_root, pid_t pid)
{
    char path[512], b[4096];
    snprintf(path, sizeof path, "%s/%d/status", root_of(proc_root), (int)pid);
    if (read_small(path, b, sizeof b) <= 0) return 0;
    long long anon = status_kb(b, "RssAnon"), shmem = status_kb(b, "RssShmem");
    if (anon < 0) { /* a kernel before 4.5 splits nothing: VmRSS is all there is */
        long long rss = status_kb(b, "VmRSS");
        return rss > 0 ? (uint64_t)rss * 1024 : 0;
    }
    return ((uint64_t)anon + (uint64_t)(shmem > 0 ? shmem : 0)) * 1024;
}

int proctree_scan(const char *proc_root, const pid_t *pgids, size_t n, proctree_group_info *out, char *err,
                  size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (proctree_group_info){.pgid = pgids[i]};
    const char *root = root_of(proc_root);
    DIR *d = opendir(root);
    if (!d) {
        errf(err, errlen, "cannot list '%s': %s", root, strerror(errno));
        return -1;
    }
    size_t *cap = n ? xcalloc(n, sizeof *cap) : NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        char b[1024];
        unsigned long long g, st;
        if (read_stat(root, (pid_t)pid, b, sizeof b) || field_in(b, 5, &g) != 0 || (pid_t)g <= 0) continue;
        size_t k = 0;
        while (k < n && pgids[k] != (pid_t)g) k++;
        if (k == n) continue;
        if (field_in(b, 3, &st) == 0 && (st == 'Z' || st == 'X')) continue; /* as proctree_group */
        proctree_group_info *gi = &out[k];
        if (gi->n == cap[k]) {
            cap[k] = cap[k] ? cap[k] * 2 : 8;
            gi->pids = xrealloc(gi->pids, cap[k] * sizeof *gi->pids);
        }
        gi->pids[gi->n++] = (pid_t)pid;
        gi->anon_bytes += proctree_anon(proc_root, (pid_t)pid);
    }
    closedir(d);
    free(cap);
    /* the same pgid asked twice: the first slot has the members */
    return 0;
}

void proctree_scan_release(proctree_group_info *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(out[i].pids);
        out[i].pids = NULL;
        out[i].n = 0;
    }
}
