/* ports.h - who holds a TCP port: the LISTEN sockets of /proc/net/tcp and
 * /proc/net/tcp6 on that port, and the process whose /proc/[pid]/fd holds
 * one of them, with its command line made printable.  So the supervisor
 * can refuse a start with "port 7070 is held by pid 1234 (llama-server -m
 * ...)" instead of spawning an engine that dies on EADDRINUSE. */
#ifndef GPUMOD_PORTS_H
#define GPUMOD_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PORTS_CMDLINE_MAX 256

typedef struct port_owner {
    uint16_t port;
    bool ipv6;           /* found in tcp6 */
    char addr[48];       /* the listen address: "0.0.0.0", "127.0.0.1", "::", "::1" */
    uint64_t inode;      /* the socket's inode */
    uint32_t uid;        /* the socket owner's uid (from /proc/net/tcp) */
    pid_t pid;           /* 0: no process we can see holds it (another user's) */
    int nholders;        /* processes seen holding it: a forked worker shares its parent's */
    bool scan_truncated; /* the /proc scan hit its bound: pid 0 may be a miss */
    char cmdline[PORTS_CMDLINE_MAX]; /* printable, escaped, "..." when cut; "" when pid is 0 */
} port_owner;

/* Is a LISTEN socket on port in the way of a server that binds addr:port?
 * addr NULL or "" means any address (and so does a wildcard); else an
 * IPv4 or IPv6 literal, and a listener on that address or on a wildcard
 * that covers it counts (:: counts for IPv4 too: dual-stack unless
 * IPV6_V6ONLY, which /proc does not show).  proc_root NULL:
 * $GPUMOD_PROC_ROOT, else "/proc".
 * Returns 1 held (*out filled; out->pid 0 when the holder is not
 * visible), 0 free, -1 error in err (unreadable /proc/net, a malformed
 * line, a bad addr). */
int ports_owner(const char *proc_root, const char *addr, uint16_t port, port_owner *out, char *err,
                size_t errlen);

/* "port 7070 is held by pid 1234 (llama-server -m x.gguf)", or "... by a
 * process of uid 1001 that gpumod cannot see (socket inode 123)". */
void ports_describe(const port_owner *o, char *buf, size_t len);

/* /proc/pid/cmdline bytes (NUL-separated) as one printable line into out:
 * NULs become spaces, control bytes, backslashes and invalid UTF-8 are
 * escaped (\n, \t, \xHH, \\), cut with "..." to fit outlen.  Exposed for
 * the tests. */
void ports_printable_cmdline(const char *raw, size_t len, char *out, size_t outlen);

#endif
