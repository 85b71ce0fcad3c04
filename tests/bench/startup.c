/* startup.c - median process start-up time of commands, side by side.
 *
 *   build/bench-startup N -- /bin/true -- build/gpumod --version
 *
 * Each command is run N times, interleaved (so a change in machine load
 * hits all of them alike), by fork+execv with stdout to /dev/null; the wall
 * time from fork to reaped exit is taken with CLOCK_MONOTONIC.  Prints the
 * median, p10 and p90 per command and the ratio of each median to the
 * first command's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run_once(char **argv)
{
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench-startup: '%s' failed\n", argv[0]);
        exit(1);
    }
    return now_ms() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[2], "--")) {
        fprintf(stderr, "usage: bench-startup N -- CMD [ARGS] [-- CMD [ARGS]]...\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 3 || n > 100000) {
        fprintf(stderr, "bench-startup: N must be 3..100000\n");
        return 2;
    }
    char **cmds[16];
    int ncmd = 0;
    for (int i = 3; i < argc && ncmd < 16; i++) {
        cmds[ncmd++] = &argv[i];
        while (i < argc && strcmp(argv[i], "--")) i++;
        if (i < argc) argv[i] = NULL;
    }
    double *t = calloc((size_t)n * (size_t)ncmd, sizeof *t);
    for (int c = 0; c < ncmd; c++) run_once(cmds[c]); /* warm the page cache */
    for (int r = 0; r < n; r++)
        for (int c = 0; c < ncmd; c++) t[c * n + r] = run_once(cmds[c]);
    double base = 0;
    printf("%-40s %10s %10s %10s %8s\n", "command", "median ms", "p10 ms", "p90 ms", "ratio");
    for (int c = 0; c < ncmd; c++) {
        double *v = t + c * n;
        qsort(v, (size_t)n, sizeof *v, cmp);
        double med = v[n / 2];
        if (c == 0) base = med;
        char name[256] = "";
        for (char **a = cmds[c]; *a; a++) {
            strncat(name, *a, sizeof name - strlen(name) - 2);
            strcat(name, " ");
        }
        printf("%-40s %10.3f %10.3f %10.3f %8.2f\n", name, med, v[n / 10], v[n * 9 / 10], med / base);
    }
    free(t);
    return 0;
}
