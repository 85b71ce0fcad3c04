/* pidlock.c - the daemon's lock file (see pidlock.h).
 *
 * The pid is written only after the lock is taken, and read by others
 * only while they cannot take it, so a reader never trusts a pid of a
 * dead daemon: if the lock can be taken, nobody holds it. */
#include "daemon/pidlock.h"
#include "util/buf.h"
#include "util/errf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static pid_t read_pid(int fd)
{
    char b[32];
    ssize_t n = pread(fd, b, sizeof b - 1, 0);
    if (n <= 0) return 0;
    b[n] = '\0';
    char *end;
    long v = strtol(b, &end, 10);
    return v > 0 && (*end == '\n' || !*end) ? (pid_t)v : 0;
}

int pidlock_acquire(const char *state_dir, int *fd, pid_t *holder, char *err, size_t errlen)
{
    *fd = -1;
    if (holder) *holder = 0;
    if (mkdir(state_dir, 0700) && errno != EEXIST) {
        errf(err, errlen, "cannot create the state directory '%s': %s", state_dir, strerror(errno));
        return -1;
    }
    char *path = xasprintf("%s/%s", state_dir, PIDLOCK_FILE);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (f < 0) {
        errf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        free(path);
        return -1;
    }
    if (flock(f, LOCK_EX | LOCK_NB)) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            if (holder) *holder = read_pid(f);
            close(f);
            free(path);
            return 1;
        }
        errf(err, errlen, "cannot lock '%s': %s", path, strerror(e));
        close(f);
        free(path);
        return -1;
    }
    char b[32];
    int n = snprintf(b, sizeof b, "%ld\n", (long)getpid());
    if (ftruncate(f, 0) || pwrite(f, b, (size_t)n, 0) != n) {
        errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        close(f);
        free(path);
        return -1;
    }
    free(path);
    *fd = f;
    return 0;
}

pid_t pidlock_holder(const char *state_dir)
{
    char *path = xasprintf("%s/%s", state_dir, PIDLOCK_FILE);
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (f < 0) return 0;
    pid_t p = 0;
    if (flock(f, LOCK_SH | LOCK_NB) && errno == EWOULDBLOCK) p = read_pid(f); /* held: trust the pid */
    close(f);
    return p;
}
