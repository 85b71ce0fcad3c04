/* test_daemon_bits.c - the lock file (one daemon per state dir) and
 * sd_notify, against real processes and a real datagram socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testenv.h"
#include "daemon/notify.h"
#include "daemon/pidlock.h"

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/gpumod-lock-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    rm_rf(dir);
    return 0;
}

static void second_holder_is_named_and_death_frees_it(void **state)
{
    char sd[128];
    snprintf(sd, sizeof sd, "%s/state", dir);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t child = fork();
    if (child == 0) { /* the "running daemon" */
        int fd;
        pid_t h;
        char err[128];
        if (pidlock_acquire(sd, &fd, &h, err, sizeof err) != 0) _exit(1);
        if (write(pipefd[1], "x", 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    int fd;
    pid_t holder;
    char err[128];
    assert_int_equal(pidlock_acquire(sd, &fd, &holder, err, sizeof err), 1);
    assert_int_equal(holder, child);
    assert_int_equal(pidlock_holder(sd), child);
    /* however it dies, the lock goes with it */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(pidlock_holder(sd), 0); /* the stale pid in the file is not trusted */
    assert_int_equal(pidlock_acquire(sd, &fd, &holder, err, sizeof err), 0);
    /* flock is per open file description: our own lock shows as held by us */
    assert_int_equal(pidlock_holder(sd), getpid());
    char path[160], b[32] = "";
    snprintf(path, sizeof path, "%s/%s", sd, PIDLOCK_FILE);
    int r = open(path, O_RDONLY);
    assert_true(read(r, b, sizeof b - 1) > 0);
    close(r);
    assert_int_equal(atol(b), getpid());
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    close(fd);
    close(pipefd[0]);
    close(pipefd[1]);
}

static void lock_errors(void **state)
{
    int fd;
    pid_t h;
    char err[256];
    char f[128];
    snprintf(f, sizeof f, "%s/plainfile", dir);
    FILE *fp = fopen(f, "w");
    fclose(fp);
    char sd[160];
    snprintf(sd, sizeof sd, "%s/sub", f); /* a state dir under a file */
    assert_int_equal(pidlock_acquire(sd, &fd, &h, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create the state directory"));
    assert_int_equal(pidlock_holder("/nonexistent/dir"), 0);
}

static void notify_datagram(void **state)
{
    char path[128];
    snprintf(path, sizeof path, "%s/notify.sock", dir);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, path);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    char err[256];
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(notify_send("READY=1", err, sizeof err), 0);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_equal(notify_send("READY=1\nSTATUS=serving", err, sizeof err), 1);
    char b[64] = "";
    assert_true(recv(s, b, sizeof b - 1, MSG_DONTWAIT) > 0);
    assert_string_equal(b, "READY=1\nSTATUS=serving");
    close(s);
    /* abstract namespace */
    char abs_name[64];
    snprintf(abs_name, sizeof abs_name, "@gpumod-test-%d", (int)getpid());
    s = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un b2 = {.sun_family = AF_UNIX};
    size_t n = strlen(abs_name);
    memcpy(b2.sun_path, abs_name, n);
    b2.sun_path[0] = '\0';
    assert_int_equal(bind(s, (struct sockaddr *)&b2, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)), 0);
    setenv("NOTIFY_SOCKET", abs_name, 1);
    assert_int_equal(notify_send("STOPPING=1", err, sizeof err), 1);
    memset(b, 0, sizeof b);
    assert_true(recv(s, b, sizeof b - 1, MSG_DONTWAIT) > 0);
    assert_string_equal(b, "STOPPING=1");
    close(s);
    /* errors */
    setenv("NOTIFY_SOCKET", "relative.sock", 1);
    assert_int_equal(notify_send("READY=1", err, sizeof err), -1);
    assert_non_null(strstr(err, "not an absolute or abstract socket path"));
    setenv("NOTIFY_SOCKET", "/nonexistent/notify.sock", 1);
    assert_int_equal(notify_send("READY=1", err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file or directory"));
    unsetenv("NOTIFY_SOCKET");
}

static void watchdog_interval(void **state)
{
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    assert_int_equal(notify_watchdog_ms(), 0);
    setenv("WATCHDOG_USEC", "30000000", 1);
    assert_int_equal(notify_watchdog_ms(), 30000);
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid() + 1);
    setenv("WATCHDOG_PID", pid, 1); /* meant for another process */
    assert_int_equal(notify_watchdog_ms(), 0);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(notify_watchdog_ms(), 30000);
    setenv("WATCHDOG_USEC", "garbage", 1);
    assert_int_equal(notify_watchdog_ms(), 0);
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_holder_is_named_and_death_frees_it),
        cmocka_unit_test(lock_errors),
        cmocka_unit_test(notify_datagram),
        cmocka_unit_test(watchdog_interval),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
