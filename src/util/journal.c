/* journal.c - a message to the journal's native socket (see journal.h).
 *
 * The protocol's simple form: KEY=VALUE lines, a value without newlines.
 * Newlines in msg are folded to spaces rather than using the binary
 * length-prefixed form: a verdict is one line for a reader of journalctl
 * anyway.  A large message would need a memfd; 8 KiB is plenty here and
 * the rest is cut. */
#include "util/journal.h"

#include "util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define JOURNAL_SOCKET "/run/systemd/journal/socket"
#define JOURNAL_MAX_MSG 8192

bool journal_send(const char *ident, int priority, const char *msg)
{
    const char *path = getenv("GPUMOD_JOURNAL_SOCKET");
    if (!path || !*path) path = JOURNAL_SOCKET;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) return false;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (priority < 0 || priority > 7) priority = 6;

    buf b = BUF_INIT;
    buf_adds(&b, "MESSAGE=");
    size_t n = 0;
    for (const char *p = msg ? msg : ""; *p && n < JOURNAL_MAX_MSG; p++, n++) buf_addc(&b, *p == '\n' ? ' ' : *p);
    while (b.len > strlen("MESSAGE=") && b.p[b.len - 1] == ' ') b.p[--b.len] = '\0';
    buf_printf(&b, "\nPRIORITY=%d\nSYSLOG_IDENTIFIER=%s\n", priority, ident ? ident : "gpumod");

    bool ok = false;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        ssize_t w;
        do
            w = sendto(fd, b.p, b.len, MSG_NOSIGNAL, (struct sockaddr *)&sa, sizeof sa);
        while (w < 0 && errno == EINTR);
        ok = w == (ssize_t)b.len;
        close(fd);
    }
    buf_release(&b);
    return ok;
}
