/* ports.c - who holds a TCP port, from /proc alone (no ss, no netlink).
 *
 * Two steps.  /proc/net/tcp and tcp6 give the LISTEN sockets on the port,
 * with their inode and owner uid; then /proc/[pid]/fd is scanned for a
 * link "socket:[inode]" to find the process.  The first step is cheap and
 * is all a free port costs; the scan runs only when a listener exists.
 *
 * The scan is bounded (PORTS_MAX_PIDS directories, PORTS_MAX_FDS links)
 * and tolerant: another user's fd directory is EACCES and a process may
 * vanish between readdir and readlink; both are skipped.  A listener whose
 * holder we cannot see is still reported as held (pid 0, with its uid):
 * the port is taken whoever holds it.
 *
 * The socket tables are parsed strictly (a malformed line is an error that
 * names the line): a half-understood table must not read as "free".
 * Addresses are printed by the kernel as native-endian 32-bit words, so
 * they are decoded in host order, which is right for the host that wrote
 * them (the fixtures are little-endian).
 *
 * proc_root follows procmem.c: the argument, else $GPUMOD_PROC_ROOT, else
 * /proc.  One exception: a $GPUMOD_PROC_ROOT without a net/ directory is a
 * memory fixture (the e2e tests point every daemon at one), and sockets
 * and pids are then read from the live /proc, where the processes that
 * hold ports actually are.
 *
 * Only reads: nothing here opens a file for writing. */
#include "host/ports.h"
#include "util/errf.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/redact.h"
#include "util/strv.h"

#define PORTS_MAX_SOCKETS 16     /* SO_REUSEPORT listeners on one port */
#define PORTS_MAX_PIDS (1 << 20) /* /proc entries looked at */
#define PORTS_MAX_FDS (1 << 20)  /* fd links read, over all pids */
#define CMDLINE_READ_MAX 4096
#define TCP_LISTEN 0x0A

static const char *pick_root(const char *proc_root)
{
    if (proc_root && *proc_root) return proc_root;
    const char *e = getenv("GPUMOD_PROC_ROOT");
    if (e && *e) {
        char net[4096];
        struct stat st;
        snprintf(net, sizeof net, "%s/net", e);
        if (stat(net, &st) == 0) return e;
    }
    return "/proc";
}

/* ---- /proc/net/tcp{,6} ---- */

typedef struct sock_ent {
    bool v6;
    uint8_t addr[16];
    uint16_t port;
    int state;
    uint32_t uid;
    uint64_t inode;
} sock_ent;

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Exactly n hex digits at p into *v. */
static bool hex_n(const char *p, size_t n, uint32_t *v)
{
    uint32_t x = 0;
    for (size_t i = 0; i < n; i++) {
        int h = hexval(p[i]);
        if (h < 0) return false;
        x = x << 4 | (uint32_t)h;
    }
    *v = x;
    return true;
}

static bool dec_u64(const char *p, size_t n, uint64_t *v)
{
    if (n == 0 || n > 20) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (x > (UINT64_MAX - d) / 10) return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

/* "HEXADDR:PORT", the address 8 (v4) or 32 (v6) digits of native words */
static bool parse_endpoint(const char *w, size_t n, bool v6, sock_ent *e)
{
    size_t alen = v6 ? 32 : 8;
    if (n != alen + 5 || w[alen] != ':') return false;
    memset(e->addr, 0, sizeof e->addr);
    for (size_t i = 0; i < alen / 8; i++) {
        uint32_t word;
        if (!hex_n(w + i * 8, 8, &word)) return false;
        memcpy(e->addr + i * 4, &word, 4);
    }
    uint32_t port;
    if (!hex_n(w + alen + 1, 4, &port)) return false;
    e->port = (uint16_t)port;
    return true;
}

/* One data line: "sl: local rem st tx:rx tr:when retrnsmt uid timeout inode ..." */
static bool parse_tcp_line(const char *line, bool v6, sock_ent *e)
{
    const char *w[10];
    size_t wl[10];
    size_t nw = 0;
    const char *p = line;
    while (nw < 10) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '\n') break;
        w[nw] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        wl[nw] = (size_t)(p - w[nw]);
        nw++;
    }
    if (nw < 10 || wl[0] < 2 || w[0][wl[0] - 1] != ':') return false;
    e->v6 = v6;
    if (!parse_endpoint(w[1], wl[1], v6, e)) return false;
    uint32_t st;
    if (wl[3] != 2 || !hex_n(w[3], 2, &st)) return false;
    e->state = (int)st;
    uint64_t uid, inode;
    if (!dec_u64(w[7], wl[7], &uid) || uid > UINT32_MAX) return false;
    if (!dec_u64(w[9], wl[9], &inode)) return false;
    e->uid = (uint32_t)uid;
    e->inode = inode;
    return true;
}

typedef struct query {
    bool any;
    bool v6;
    uint8_t a[16];
} query;

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool all_zero(const uint8_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i]) return false;
    return true;
}

static int parse_query(const char *addr, query *q, char *err, size_t errlen)
{
    memset(q, 0, sizeof *q);
    if (!addr || !*addr) {
        q->any = true;
        return 0;
    }
    if (inet_pton(AF_INET, addr, q->a) == 1) {
        q->any = all_zero(q->a, 4);
        return 0;
    }
    uint8_t a6[16];
    if (inet_pton(AF_INET6, addr, a6) == 1) {
        if (!memcmp(a6, v4mapped_prefix, 12)) {
            memcpy(q->a, a6 + 12, 4);
            q->any = all_zero(q->a, 4);
        } else {
            q->v6 = true;
            memcpy(q->a, a6, 16);
            q->any = all_zero(q->a, 16);
        }
        return 0;
    }
    errf(err, errlen, "bad address '%s': not an IPv4 or IPv6 literal", addr);
    return -1;
}

static bool conflicts(const sock_ent *e, const query *q)
{
    if (q->any) return true;
    if (!q->v6) {
        if (!e->v6) return all_zero(e->addr, 4) || !memcmp(e->addr, q->a, 4);
        if (all_zero(e->addr, 16)) return true; /* [::] is dual-stack unless V6ONLY */
        return !memcmp(e->addr, v4mapped_prefix, 12) && !memcmp(e->addr + 12, q->a, 4);
    }
    if (!e->v6) return false;
    return all_zero(e->addr, 16) || !memcmp(e->addr, q->a, 16);
}

typedef struct cand {
    sock_ent s;
    pid_t pid; /* lowest pid seen holding it */
    int nholders;
} cand;

/* Add the matching LISTEN sockets of root/rel to c.  0 ok, 1 the file
 * does not exist, -1 error. */
static int scan_table(const char *root, const char *rel, bool v6, uint16_t port, const query *q,
                      cand *c, size_t *nc, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT) return 1;
        errf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int no = 0, rc = 0;
    errno = 0;
    while (getline(&line, &cap, f) > 0) {
        if (++no == 1) continue; /* the header */
        sock_ent e;
        if (!parse_tcp_line(line, v6, &e)) {
            errf(err, errlen, "'%s' line %d: not a socket table line", path, no);
            rc = -1;
            break;
        }
        if (e.state != TCP_LISTEN || e.port != port || !conflicts(&e, q)) continue;
        if (*nc < PORTS_MAX_SOCKETS) c[(*nc)++] = (cand){.s = e};
    }
    if (rc == 0 && ferror(f)) {
        errf(err, errlen, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* ---- /proc/[pid]/fd ---- */

static bool parse_pid(const char *s, pid_t *pid)
{
    uint64_t v;
    if (!dec_u64(s, strlen(s), &v) || v == 0 || v > INT32_MAX) return false;
    *pid = (pid_t)v;
    return true;
}

/* "socket:[123]" -> 123 */
static bool socket_inode(const char *link, uint64_t *ino)
{
    size_t n = strlen(link);
    if (n < 10 || strncmp(link, "socket:[", 8) || link[n - 1] != ']') return false;
    return dec_u64(link + 8, n - 9, ino);
}

/* Fill pid and nholders of each candidate; true when the bounds cut the
 * scan short. */
static bool scan_holders(const char *root, cand *c, size_t nc)
{
    DIR *d = opendir(root);
    if (!d) return true;
    size_t npids = 0, nfds = 0;
    bool cut = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        pid_t pid;
        if (!parse_pid(de->d_name, &pid)) continue;
        if (++npids > PORTS_MAX_PIDS) {
            cut = true;
            break;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/fd", root, de->d_name);
        DIR *fdd = opendir(path);
        if (!fdd) continue; /* EACCES: another user's; ENOENT: gone */
        bool seen[PORTS_MAX_SOCKETS] = {false};
        struct dirent *fe;
        while ((fe = readdir(fdd))) {
            if (fe->d_name[0] == '.') continue;
            if (++nfds > PORTS_MAX_FDS) {
                cut = true;
                break;
            }
            char link[64];
            ssize_t n = readlinkat(dirfd(fdd), fe->d_name, link, sizeof link - 1);
            if (n <= 0) continue; /* closed meanwhile */
            link[n] = 0;
            uint64_t ino;
            if (!socket_inode(link, &ino)) continue;
            for (size_t i = 0; i < nc; i++) {
                if (c[i].s.inode != ino || seen[i]) continue;
                seen[i] = true;
                c[i].nholders++;
                if (!c[i].pid || pid < c[i].pid) c[i].pid = pid;
            }
        }
        closedir(fdd);
        if (cut) break;
    }
    closedir(d);
    return cut;
}

/* ---- command lines ---- */

/* Length of the valid UTF-8 sequence at p (2..4), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned char b = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
        len = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        if (b == 0xE0) lo = 0xA0; /* overlong */
        if (b == 0xED) hi = 0x9F; /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (n < len) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

/* The printable form of the bytes at p into tok; returns bytes consumed. */
static size_t token(const unsigned char *p, size_t n, char tok[8], size_t *toklen)
{
    unsigned char b = p[0];
    if (b == 0) {
        tok[0] = ' ';
        *toklen = 1;
        return 1;
    }
    if (b == '\\') {
        memcpy(tok, "\\\\", 2);
        *toklen = 2;
        return 1;
    }
    if (b == '\n') {
        memcpy(tok, "\\n", 2);
        *toklen = 2;
        return 1;
    }
    if (b == '\t') {
        memcpy(tok, "\\t", 2);
        *toklen = 2;
        return 1;
    }
    if (b == '\r') {
        memcpy(tok, "\\r", 2);
        *toklen = 2;
        return 1;
    }
    if (b >= 0x20 && b < 0x7f) {
        tok[0] = (char)b;
        *toklen = 1;
        return 1;
    }
    if (b >= 0x80) {
        size_t u = utf8_len(p, n);
        if (u) {
            memcpy(tok, p, u);
            *toklen = u;
            return u;
        }
    }
    static const char hex[] = "0123456789abcdef";
    tok[0] = '\\';
    tok[1] = 'x';
    tok[2] = hex[b >> 4];
    tok[3] = hex[b & 15];
    *toklen = 4;
    return 1;
}

void ports_printable_cmdline(const char *raw, size_t len, char *out, size_t outlen)
{
    if (!outlen) return;
    const unsigned char *p = (const unsigned char *)raw;
    while (len && p[len - 1] == 0)
        len--; /* the terminating NUL(s) */
    /* does it all fit? then no ellipsis is needed */
    size_t total = 0;
    char tok[8];
    size_t tl;
    for (size_t i = 0; i < len;) {
        i += token(p + i, len - i, tok, &tl);
        total += tl;
    }
    size_t room = outlen - 1, pos = 0;
    bool cut = total > room;
    if (cut) room = room >= 3 ? room - 3 : 0;
    for (size_t i = 0; i < len;) {
        size_t used = token(p + i, len - i, tok, &tl);
        if (pos + tl > room) break;
        memcpy(out + pos, tok, tl);
        pos += tl;
        i += used;
    }
    if (cut)
        for (int k = 0; k < 3 && pos < outlen - 1; k++)
            out[pos++] = '.';
    out[pos] = 0;
}

static void read_cmdline(const char *root, pid_t pid, char *out, size_t outlen)
{
    char path[4096], raw[CMDLINE_READ_MAX];
    snprintf(path, sizeof path, "%s/%d/cmdline", root, (int)pid);
    ssize_t n = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, raw, sizeof raw);
        close(fd);
    }
    if (n > 0) {
        /* secrets out before it is shown (an event, the log, an API
         * answer): per argument as an argv, then each argument as text
         * ("-H 'Authorization: Bearer X'") */
        strv argv = STRV_INIT;
        for (size_t i = 0; i < (size_t)n;) {
            size_t e = i;
            while (e < (size_t)n && raw[e])
                e++;
            strv_push_own(&argv, xstrndup(raw + i, e - i));
            i = e + 1;
        }
        redact_argv(&argv);
        buf joined = BUF_INIT;
        for (size_t i = 0; i < argv.n; i++) {
            size_t wl;
            char *w = redact_text(argv.v[i], strlen(argv.v[i]), &wl);
            buf_add(&joined, w, wl);
            buf_addc(&joined, '\0');
            free(w);
        }
        strv_release(&argv);
        ports_printable_cmdline(joined.p, joined.len, out, outlen);
        buf_release(&joined);
        return;
    }
    /* empty (a zombie, a kernel thread) or unreadable: the comm name */
    snprintf(path, sizeof path, "%s/%d/comm", root, (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    n = -1;
    if (fd >= 0) {
        n = read(fd, raw + 1, sizeof raw - 3);
        close(fd);
    }
    if (n <= 0) {
        snprintf(out, outlen, "?");
        return;
    }
    if (raw[n] == '\n') n--;
    raw[0] = '[';
    raw[n + 1] = ']';
    ports_printable_cmdline(raw, (size_t)n + 2, out, outlen);
}

/* ---- the interface ---- */

int ports_owner(const char *proc_root, const char *addr, uint16_t port, port_owner *out, char *err,
                size_t errlen)
{
    memset(out, 0, sizeof *out);
    query q;
    if (parse_query(addr, &q, err, errlen) < 0) return -1;
    const char *root = pick_root(proc_root);
    cand c[PORTS_MAX_SOCKETS];
    size_t nc = 0;
    int r4 = scan_table(root, "net/tcp", false, port, &q, c, &nc, err, errlen);
    if (r4 < 0) return -1;
    int r6 = scan_table(root, "net/tcp6", true, port, &q, c, &nc, err, errlen);
    if (r6 < 0) return -1;
    if (r4 == 1 && r6 == 1) {
        errf(err, errlen, "cannot read '%s/net/tcp': %s", root, strerror(ENOENT));
        return -1;
    }
    if (!nc) return 0;

    bool cut = scan_holders(root, c, nc);
    size_t best = 0; /* the first listener with a visible holder, else the first */
    for (size_t i = 0; i < nc; i++)
        if (c[i].pid) {
            best = i;
            break;
        }
    const cand *b = &c[best];
    out->port = port;
    out->ipv6 = b->s.v6;
    inet_ntop(b->s.v6 ? AF_INET6 : AF_INET, b->s.addr, out->addr, sizeof out->addr);
    out->inode = b->s.inode;
    out->uid = b->s.uid;
    out->pid = b->pid;
    out->nholders = b->nholders;
    out->scan_truncated = cut;
    if (b->pid) read_cmdline(root, b->pid, out->cmdline, sizeof out->cmdline);
    return 1;
}

void ports_describe(const port_owner *o, char *dst, size_t len)
{
    if (o->pid > 0) {
        int others = o->nholders - 1;
        if (others > 0)
            snprintf(dst, len, "port %u is held by pid %d (%s) and %d other process%s", o->port,
                     (int)o->pid, o->cmdline, others, others == 1 ? "" : "es");
        else
            snprintf(dst, len, "port %u is held by pid %d (%s)", o->port, (int)o->pid, o->cmdline);
    } else {
        snprintf(
            dst, len,
            "port %u is held by a process of uid %u that gpumod cannot see (socket inode %llu)",
            o->port, o->uid, (unsigned long long)o->inode);
    }
}
