/* notify-recv - receive sd_notify datagrams for the e2e tests: bind an
 * AF_UNIX datagram socket at PATH and print each datagram as one line on
 * stdout (flushed), until SECONDS pass (default 60) or SIGTERM.  No
 * python, no socat: the CI machine has neither for sure. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: notify-recv PATH [SECONDS]\n");
        return 2;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof a.sun_path) {
        fprintf(stderr, "notify-recv: path too long\n");
        return 2;
    }
    strcpy(a.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    unlink(argv[1]);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a)) {
        fprintf(stderr, "notify-recv: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    long secs = argc == 3 ? atol(argv[2]) : 60;
    time_t end = time(NULL) + secs;
    char b[4096];
    while (time(NULL) < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        ssize_t n = recv(fd, b, sizeof b - 1, 0);
        if (n < 0) continue;
        for (ssize_t i = 0; i < n; i++)
            if (b[i] == '\n') b[i] = ' ';
        b[n] = '\0';
        printf("%s\n", b);
        fflush(stdout);
    }
    unlink(argv[1]);
    return 0;
}
