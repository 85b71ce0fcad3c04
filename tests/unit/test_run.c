/* test_run.c - run_capture: output, exit codes, signals, the deadline (the
 * whole process group dies, nothing is left unreaped), start failures,
 * the output cap, cwd, env, inherited descriptors; and run_which. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/run.h"

static int64_t scale(void)
{
    const char *s = getenv("GPUMOD_TEST_TIME_SCALE");
    int64_t v = s ? atoll(s) : 1;
    return v > 0 ? v : 1;
}

static run_opts opts(int64_t timeout_ms)
{
    return (run_opts){.timeout_ms = timeout_ms};
}

#define ARGV(...) ((char *const[]){__VA_ARGS__, NULL})

static void no_children_left(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void echo_output(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    run_result r;
    char err[256] = "";
    run_opts o = opts(5000);
    assert_int_equal(
        run_capture(ARGV("/bin/echo", "hello", "world"), &o, &out, &r, err, sizeof err), 0);
    assert_string_equal(out.p, "hello world\n");
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 0);
    assert_false(r.timed_out);
    assert_false(r.truncated);
    assert_int_equal(r.start_errno, 0);
    assert_string_equal(err, "");
    no_children_left();
    buf_release(&out);
}

/* stderr lands in the same buffer; PATH lookup of a bare name; output is
 * appended to what the buffer held. */
static void stderr_and_path(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    buf_adds(&out, ">");
    char err[256];
    run_opts o = opts(5000);
    assert_int_equal(
        run_capture(ARGV("sh", "-c", "echo out; echo err >&2"), &o, &out, NULL, err, sizeof err),
        0);
    assert_string_equal(out.p, ">out\nerr\n");
    buf_release(&out);
}

/* err_out: stderr kept apart, each stream capped on its own */
static void stderr_apart(void **state)
{
    (void)state;
    buf out = BUF_INIT, eo = BUF_INIT;
    char err[256];
    run_result r;
    run_opts o = opts(5000);
    o.err_out = &eo;
    o.max_output = 8;
    assert_int_equal(run_capture(ARGV("sh", "-c", "echo out; echo err >&2; echo 0123456789 >&2; exit 1"), &o,
                                 &out, &r, err, sizeof err),
                     -1);
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 1);
    assert_string_equal(out.p, "out\n");
    assert_string_equal(eo.p, "err\n0123");
    assert_true(r.truncated);
    buf_release(&out);
    buf_release(&eo);
}

static void exit_code(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    run_result r;
    char err[256];
    run_opts o = opts(5000);
    assert_int_equal(
        run_capture(ARGV("/bin/sh", "-c", "echo partial; exit 3"), &o, &out, &r, err, sizeof err),
        -1);
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 3);
    assert_int_equal(r.term_signal, 0);
    assert_false(r.timed_out);
    assert_string_equal(err, "'/bin/sh' exited with status 3");
    assert_string_equal(out.p, "partial\n");
    no_children_left();
    buf_release(&out);
}

static void killed_by_signal(void **state)
{
    (void)state;
    run_result r;
    char err[256];
    run_opts o = opts(5000);
    assert_int_equal(
        run_capture(ARGV("/bin/sh", "-c", "kill -TERM $$"), &o, NULL, &r, err, sizeof err), -1);
    assert_false(r.exited);
    assert_int_equal(r.term_signal, SIGTERM);
    assert_string_equal(err, "'/bin/sh' was killed by signal 15");
    no_children_left();
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void deadline_kills(void **state)
{
    (void)state;
    run_result r;
    char err[256];
    run_opts o = opts(200);
    int64_t t0 = mono_ms();
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c", "sleep 60"), &o, NULL, &r, err, sizeof err),
                     -1);
    int64_t took = mono_ms() - t0;
    assert_true(r.timed_out);
    assert_false(r.exited);
    assert_string_equal(err, "'/bin/sh' timed out after 200 ms");
    assert_true(took >= 200);
    assert_true(took < 200 + 5000 * scale()); /* killed: long before the 60 s sleep ends */
    no_children_left();
}

static volatile int cancel_flag;

static void *cancel_later(void *ud)
{
    (void)ud;
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    cancel_flag = 1;
    return NULL;
}

/* a flag turned by another thread ends the run as the deadline would (the
 * daemon's shutdown does it to a llama-bench that runs) */
static void cancel_kills(void **state)
{
    (void)state;
    run_result r;
    char err[256];
    run_opts o = opts(60000);
    cancel_flag = 0;
    o.cancel = &cancel_flag;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, cancel_later, NULL), 0);
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c", "sleep 60"), &o, NULL, &r, err, sizeof err), -1);
    pthread_join(t, NULL);
    assert_true(r.cancelled);
    assert_false(r.timed_out);
    assert_false(r.exited);
    assert_non_null(strstr(err, "'/bin/sh' was cancelled after "));
    assert_true(r.elapsed_ms < 50000); /* killed: long before the 60 s sleep ends */
    no_children_left();
    /* a flag that stays 0 changes nothing */
    cancel_flag = 0;
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c", "echo hi"), &o, NULL, &r, err, sizeof err), 0);
    assert_false(r.cancelled);
}

/* gone, or a zombie waiting for init to reap it */
static bool dead(pid_t pid)
{
    if (kill(pid, 0) < 0 && errno == ESRCH) return true;
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return true;
    bool z = false;
    if (fgets(st, sizeof st, f)) {
        char *rp = strrchr(st, ')');
        z = rp && (rp[2] == 'Z' || rp[2] == 'X');
    }
    fclose(f);
    return z;
}

/* A grandchild that holds the output pipe open keeps the run going until
 * the deadline, and then dies with its group. */
static void deadline_kills_group(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    run_result r;
    char err[256];
    run_opts o = opts(300);
    assert_int_equal(
        run_capture(ARGV("/bin/sh", "-c", "sleep 30 & echo $!"), &o, &out, &r, err, sizeof err),
        -1);
    assert_true(r.timed_out);
    pid_t gc = (pid_t)atoi(out.p);
    assert_true(gc > 1);
    bool gone = false;
    for (int i = 0; i < 200 && !(gone = dead(gc)); i++)
        usleep(10000);
    assert_true(gone);
    no_children_left();
    buf_release(&out);
}

static void missing_binary(void **state)
{
    (void)state;
    run_result r;
    char err[256];
    run_opts o = opts(1000);
    assert_int_equal(run_capture(ARGV("/nonexistent/xyz"), &o, NULL, &r, err, sizeof err), -1);
    assert_int_equal(r.start_errno, ENOENT);
    assert_false(r.exited);
    assert_string_equal(err, "'/nonexistent/xyz': no such file or directory");
    assert_int_equal(run_capture(ARGV("gpumod-no-such-binary-here"), &o, NULL, &r, err, sizeof err),
                     -1);
    assert_int_equal(r.start_errno, ENOENT);
    assert_string_equal(err, "'gpumod-no-such-binary-here': no such file or directory");
    no_children_left();
}

static void not_executable(void **state)
{
    (void)state;
    char dir[] = "/tmp/gpumod-run-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *file = xasprintf("%s/plain", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho hi\n", f);
    fclose(f);
    run_result r;
    char err[512];
    run_opts o = opts(1000);
    char *const argv[] = {file, NULL};
    assert_int_equal(run_capture(argv, &o, NULL, &r, err, sizeof err), -1);
    assert_int_equal(r.start_errno, EACCES);
    char *want = xasprintf("'%s': permission denied", file);
    assert_string_equal(err, want);
    /* a directory is not a program either */
    char *const dargv[] = {dir, NULL};
    assert_int_equal(run_capture(dargv, &o, NULL, &r, err, sizeof err), -1);
    assert_int_equal(r.start_errno, EACCES);
    /* executable but not a valid image: execve itself fails, in the child */
    chmod(file, 0700);
    f = fopen(file, "w");
    fputs("\x7f"
          "ELF garbage",
          f);
    fclose(f);
    assert_int_equal(run_capture(argv, &o, NULL, &r, err, sizeof err), -1);
    assert_int_equal(r.start_errno, ENOEXEC);
    no_children_left();
    unlink(file);
    rmdir(dir);
    free(want);
    free(file);
}

static void output_cap(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    run_result r;
    char err[256];
    run_opts o = {.timeout_ms = 5000, .max_output = 1000};
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' a"), &o,
                                 &out, &r, err, sizeof err),
                     0);
    assert_int_equal(out.len, 1000);
    assert_true(r.truncated);
    assert_true(r.exited);
    assert_int_equal(strspn(out.p, "a"), 1000);
    buf_release(&out);
}

static void cwd_and_env(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    char err[256];
    strv env = STRV_INIT;
    strv_push(&env, "GPUMOD_RUN_T=hello there");
    strv_push(&env, "HOME=/nowhere");
    run_opts o = {.timeout_ms = 5000, .cwd = "/tmp", .env = &env};
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c", "pwd; echo \"$GPUMOD_RUN_T|$HOME\""), &o,
                                 &out, NULL, err, sizeof err),
                     0);
    assert_string_equal(out.p, "/tmp\nhello there|/nowhere\n");

    run_result r;
    o.cwd = "/nonexistent-dir";
    assert_int_equal(run_capture(ARGV("/bin/pwd"), &o, NULL, &r, err, sizeof err), -1);
    assert_int_equal(r.start_errno, ENOENT);
    assert_string_equal(err,
                        "'/bin/pwd': cannot change directory to '/nonexistent-dir': no such file "
                        "or directory");
    o.cwd = NULL;
    strv_push(&env, "NOEQUALS");
    assert_int_equal(run_capture(ARGV("/bin/pwd"), &o, NULL, NULL, err, sizeof err), -1);
    assert_string_equal(err, "environment entry 'NOEQUALS' is not KEY=VALUE");
    no_children_left();
    strv_release(&env);
    buf_release(&out);
}

/* stdin is /dev/null (cat ends at once) and a descriptor the parent left
 * without FD_CLOEXEC does not reach the child. */
static void stdin_and_fds(void **state)
{
    (void)state;
    int fd = open("/dev/null", O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(dup2(fd, 200), 200);
    buf out = BUF_INIT;
    char err[256];
    run_opts o = opts(5000);
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c",
                                      "cat; if [ -e /proc/self/fd/200 ]; then echo leaked; "
                                      "else echo closed; fi"),
                                 &o, &out, NULL, err, sizeof err),
                     0);
    assert_string_equal(out.p, "closed\n");
    close(200);
    close(fd);
    buf_release(&out);
}

/* A SIGPIPE the parent ignores is reset to default in the child. */
static void signals_reset(void **state)
{
    (void)state;
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ign, &old);
    buf out = BUF_INIT;
    char err[256];
    run_opts o = opts(5000);
    assert_int_equal(run_capture(ARGV("/bin/sh", "-c", "grep SigIgn /proc/self/status"), &o, &out,
                                 NULL, err, sizeof err),
                     0);
    sigaction(SIGPIPE, &old, NULL);
    unsigned long long mask = strtoull(strchr(out.p, ':') + 1, NULL, 16);
    assert_int_equal(mask & (1ull << (SIGPIPE - 1)), 0);
    buf_release(&out);
}

static void bad_input(void **state)
{
    (void)state;
    char err[256];
    run_result r;
    run_opts o = opts(1000);
    char *const empty[] = {NULL};
    assert_int_equal(run_capture(empty, &o, NULL, &r, err, sizeof err), -1);
    assert_string_equal(err, "empty command");
    assert_int_equal(r.start_errno, EINVAL);
    run_opts none = opts(0);
    assert_int_equal(run_capture(ARGV("/bin/true"), &none, NULL, &r, err, sizeof err), -1);
    assert_string_equal(err, "'/bin/true': no deadline given");
}

static void which(void **state)
{
    (void)state;
    int e = 0;
    char *p = run_which("sh", &e);
    assert_non_null(p);
    assert_true(p[0] == '/');
    assert_string_equal(strrchr(p, '/'), "/sh");
    free(p);
    p = run_which("/bin/sh", &e);
    assert_string_equal(p, "/bin/sh");
    free(p);
    assert_null(run_which("gpumod-no-such-binary-here", &e));
    assert_int_equal(e, ENOENT);
    assert_null(run_which("/nonexistent/x", &e));
    assert_int_equal(e, ENOENT);
    assert_null(run_which("", &e));
    assert_null(run_which(NULL, NULL));
    assert_null(run_which("/tmp", &e));
    assert_int_equal(e, EACCES);

    /* found in PATH but not executable: EACCES, as execvp says */
    char dir[] = "/tmp/gpumod-which-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *file = xasprintf("%s/gpumod-plain", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    char *saved = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", dir, 1);
    p = run_which("gpumod-plain", &e);
    setenv("PATH", saved, 1);
    assert_null(p);
    assert_int_equal(e, EACCES);
    unlink(file);
    rmdir(dir);
    free(file);
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(echo_output),    cmocka_unit_test(stderr_and_path), cmocka_unit_test(stderr_apart),
        cmocka_unit_test(exit_code),      cmocka_unit_test(killed_by_signal),
        cmocka_unit_test(deadline_kills), cmocka_unit_test(cancel_kills), cmocka_unit_test(deadline_kills_group),
        cmocka_unit_test(missing_binary), cmocka_unit_test(not_executable),
        cmocka_unit_test(output_cap),     cmocka_unit_test(cwd_and_env),
        cmocka_unit_test(stdin_and_fds),  cmocka_unit_test(signals_reset),
        cmocka_unit_test(bad_input),      cmocka_unit_test(which),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
