/* notify.c - sd_notify over an AF_UNIX datagram socket (see notify.h).
 * An address starting with '@' is in the abstract namespace, as systemd
 * documents.  The send never blocks (MSG_DONTWAIT): a full socket buffer
 * loses one notification, it never stalls the daemon's loop. */
#include "daemon/notify.h"
#include "util/errf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int notify_send(const char *state, char *err, size_t errlen)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path) return 0;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || n >= sizeof a.sun_path) {
        errf(err, errlen, "NOTIFY_SOCKET '%s' is not an absolute or abstract socket path", path);
        return -1;
    }
    memcpy(a.sun_path, path, n);
    if (path[0] == '@') a.sun_path[0] = '\0';
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        errf(err, errlen, "sd_notify: socket: %s", strerror(errno));
        return -1;
    }
    ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&a, len);
    int e = errno;
    close(fd);
    if (w < 0) {
        errf(err, errlen, "sd_notify to '%s': %s", path, strerror(e));
        return -1;
    }
    return 1;
}

long long notify_watchdog_ms(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    if (!usec || !*usec) return 0;
    const char *wpid = getenv("WATCHDOG_PID");
    if (wpid && *wpid && atol(wpid) != (long)getpid()) return 0;
    char *end;
    long long v = strtoll(usec, &end, 10);
    if (*end || v <= 0) return 0;
    return v / 1000 > 0 ? v / 1000 : 1;
}
