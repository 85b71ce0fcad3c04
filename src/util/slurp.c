/* slurp.c - read a small regular text file whole (slurp.h). */
#include "util/slurp.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/errf.h"

/* Close fd (when open) and fail with errno e. */
static int fail(int fd, int e)
{
    if (fd >= 0) close(fd);
    errno = e;
    return -1;
}

const char *slurp_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "a special file";
}

int slurp_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        struct stat lst;
        if (e == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            errf(err, errlen, "a broken symlink (%s)", strerror(e));
        else
            errf(err, errlen, "%s", strerror(e));
        return fail(-1, e);
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        errf(err, errlen, "%s", strerror(e));
        return fail(fd, e);
    }
    if (!S_ISREG(st.st_mode)) {
        errf(err, errlen, "%s, not a regular file", slurp_kind(st.st_mode));
        return fail(fd, EINVAL);
    }
    return fd;
}

int slurp_open_append(const char *path, int flags, mode_t mode, char *err, size_t errlen)
{
    int fd = open(path, flags | O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);
    struct stat st;
    if (fd < 0) {
        int e = errno; /* a FIFO without a reader: ENXIO, which says little */
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
            errf(err, errlen, "%s, not a regular file", slurp_kind(st.st_mode));
        else
            errf(err, errlen, "%s", strerror(e));
        return fail(-1, e);
    }
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        errf(err, errlen, "%s, not a regular file", slurp_kind(st.st_mode));
        return fail(fd, EINVAL);
    }
    return fd;
}

int slurp_text(const char *path, size_t max, buf *b, char *err, size_t errlen)
{
    char why[256];
    int fd = slurp_open(path, why, sizeof why);
    if (fd < 0) {
        errf(err, errlen, "'%s': %s", path, why);
        return -1; /* errno from slurp_open */
    }
    for (;;) { /* straight into b: no chunk on the stack */
        buf_grow(b, 4096);
        ssize_t r = read(fd, b->p + b->len, 4096);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            b->p[b->len] = '\0';
            errf(err, errlen, "'%s': %s", path, strerror(e));
            return fail(fd, e);
        }
        if (r == 0) break;
        if (memchr(b->p + b->len, '\0', (size_t)r)) { /* b keeps what came before, as it was */
            b->p[b->len] = '\0';
            errf(err, errlen, "'%s' contains a NUL byte", path);
            return fail(fd, EINVAL);
        }
        b->len += (size_t)r;
        b->p[b->len] = '\0';
        if (b->len > max) {
            errf(err, errlen, "'%s' is larger than %zu bytes", path, max);
            return fail(fd, EFBIG);
        }
    }
    close(fd);
    return 0;
}
