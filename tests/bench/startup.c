/* startup.c - median process start-up time of commands, side by side.
 *
 *   build/bench-startup N -- /bin/true -- build/gpumod --version
 *
 * Each command is run N times, interleaved (so a change in machine load
 * hits all of them alike), by fork+execv with stdout to /dev/null; the wall
 * time from fork to reaped exit is taken with CLOCK_MONOTONIC.  Prints the
 * median, p10 and p90 per command, the ratio of each median to the first
 * command's, and the same ratio of the p10s (the runs no other process
 * got in the way of, on a shared machine).  A command must exit the same way every time: as its
 * first (warm-up) run did, so a refusal (preflight's exit 1) can be timed
 * too; a different status, or a signal, stops the run. */
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

/* wall ms of one run; *status: its exit status (-1 when it did not exit) */
static double run_once(char **argv, int *status)
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
    if (waitpid(pid, &st, 0) < 0) {
        perror("waitpid");
        exit(1);
    }
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return now_ms() - t0;
}

static double run_expect(char **argv, int want)
{
    int st;
    double ms = run_once(argv, &st);
    if (st != want) {
        fprintf(stderr, "bench-startup: '%s' exited %d, its first run %d\n", argv[0], st, want);
        exit(1);
    }
    return ms;
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
    int want[16];
    for (int c = 0; c < ncmd; c++) { /* warm the page cache; the status to expect */
        run_once(cmds[c], &want[c]);
        if (want[c] < 0) {
            fprintf(stderr, "bench-startup: '%s' did not exit\n", cmds[c][0]);
            return 1;
        }
    }
    for (int r = 0; r < n; r++)
        for (int c = 0; c < ncmd; c++) t[c * n + r] = run_expect(cmds[c], want[c]);
    double base = 0, base10 = 0;
    printf("%-40s %10s %10s %10s %8s %9s\n", "command", "median ms", "p10 ms", "p90 ms", "ratio", "p10 ratio");
    for (int c = 0; c < ncmd; c++) {
        double *v = t + c * n;
        qsort(v, (size_t)n, sizeof *v, cmp);
        double med = v[n / 2];
        if (c == 0) {
            base = med;
            base10 = v[n / 10];
        }
        char name[256] = "";
        for (char **a = cmds[c]; *a; a++) {
            strncat(name, *a, sizeof name - strlen(name) - 2);
            strcat(name, " ");
        }
        if (want[c]) snprintf(name + strlen(name), sizeof name - strlen(name), "(exit %d)", want[c]);
        printf("%-40s %10.3f %10.3f %10.3f %8.2f %9.2f\n", name, med, v[n / 10], v[n * 9 / 10], med / base,
               v[n / 10] / base10);
    }
    free(t);
    return 0;
}
