/* test_proctree.c - process groups, RSS and start times against real
 * processes forked here: a session leader with a forked worker. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/proctree.h"
#include "testenv.h"

/* A leader in a new session that forks one worker; both sleep.  Returns
 * the leader's pid (= pgid) once both exist. */
static pid_t spawn_group(void)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        pid_t w = fork();
        if (w == 0) {
            close(p[0]);
            close(p[1]);
            for (;;) pause();
        }
        char c = 'x';
        if (write(p[1], &c, 1) != 1) _exit(1);
        for (;;) pause();
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

static int members(pid_t pgid)
{
    pid_t pids[16];
    return proctree_group(NULL, pgid, pids, 16, NULL, 0);
}

static void group_members_rss_and_starttime(void **state)
{
    pid_t g = spawn_group();
    pid_t pids[16];
    char err[256];
    /* the worker forks right after setsid: wait until both are seen */
    int64_t deadline = mono_ms() + 5000 * scale();
    while (members(g) < 2 && mono_ms() < deadline) usleep(2000);
    int n = proctree_group(NULL, g, pids, 16, err, sizeof err);
    assert_int_equal(n, 2);
    assert_true(pids[0] == g || pids[1] == g);
    /* max smaller than the group: the count is still the whole group */
    assert_int_equal(proctree_group(NULL, g, pids, 1, err, sizeof err), 2);

    assert_true(proctree_rss(NULL, g) > 0);
    size_t nm = 0;
    pid_t got[1] = {0};
    uint64_t sum = proctree_group_rss(NULL, g, got, 1, &nm);
    assert_int_equal(nm, 2); /* the whole group counted, the first pid kept */
    assert_true(got[0] == pids[0] || got[0] == pids[1]);
    assert_true(sum >= proctree_rss(NULL, g));
    nm = 0;
    assert_true(proctree_group_rss(NULL, g, NULL, 0, &nm) > 0); /* no pids asked for: the sum and count still */
    assert_int_equal(nm, 2);

    uint64_t st = proctree_starttime(NULL, g);
    assert_true(st > 0);
    assert_true(st == proctree_starttime(NULL, g));
    assert_true(proctree_starttime(NULL, getpid()) <= st);

    assert_int_equal(kill(-g, SIGKILL), 0);
    waitpid(g, NULL, 0);
    deadline = mono_ms() + 5000 * scale();
    while (members(g) > 0 && mono_ms() < deadline) usleep(2000);
    assert_int_equal(members(g), 0);
    assert_int_equal(proctree_starttime(NULL, g), 0);
    assert_int_equal(proctree_rss(NULL, g), 0);
}

static void zombie_is_not_a_member(void **state)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        _exit(3);
    }
    /* not reaped yet: a zombie in its own group */
    int64_t deadline = mono_ms() + 5000 * scale();
    char path[64], b[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (;;) {
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        if (!fgets(b, sizeof b, f)) b[0] = 0;
        fclose(f);
        if (strstr(b, ") Z ") || mono_ms() > deadline) break;
        usleep(2000);
    }
    assert_non_null(strstr(b, ") Z "));
    assert_int_equal(members(pid), 0);
    waitpid(pid, NULL, 0);
}

static void missing_root_is_an_error(void **state)
{
    pid_t pids[4];
    char err[256] = "";
    assert_int_equal(proctree_group("/nonexistent/proc", 1, pids, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/proc"));
    assert_int_equal(proctree_starttime("/nonexistent/proc", 1), 0);
}

/* comm with spaces and parentheses must not shift the fields */
static void odd_comm_in_a_fixture(void **state)
{
    char tmpl[] = "/tmp/gpumod-proctree.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *d = xasprintf("%s/4242", dir);
    assert_int_equal(mkdir(d, 0755), 0);
    char *stat = xasprintf("%s/stat", d);
    write_file(stat, "4242 (a) b (c)) S 1 777 777 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10\n", 0644);
    char *status = xasprintf("%s/status", d);
    write_file(status, "Name:\tx\nVmPeak:\t 9 kB\nVmRSS:\t    2048 kB\n", 0644);
    pid_t pids[4];
    assert_int_equal(proctree_group(dir, 777, pids, 4, NULL, 0), 1);
    assert_int_equal(pids[0], 4242);
    assert_int_equal(proctree_starttime(dir, 4242), 123456);
    assert_int_equal(proctree_rss(dir, 4242), 2048 * 1024);
    rm_rf(dir);
    free(d);
    free(stat);
    free(status);
}

/* A fixture /proc with three processes in two groups and one outsider:
 * one pass answers for both groups; file-backed pages are not counted. */
static void scan_groups_in_one_pass(void **state)
{
    char tmpl[] = "/tmp/gpumod-proctree.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    struct {
        int pid, pgid;
        char st;
        const char *status;
    } procs[] = {
        {10, 10, 'S', "Name:\ta\nVmRSS:\t  500000 kB\nRssAnon:\t  1000 kB\nRssFile:\t  498000 kB\nRssShmem:\t  1000 kB\n"},
        {11, 10, 'R', "Name:\tb\nVmRSS:\t  3000 kB\nRssAnon:\t  3000 kB\nRssFile:\t  0 kB\nRssShmem:\t  0 kB\n"},
        {12, 10, 'Z', "Name:\tz\n"},
        {20, 20, 'S', "Name:\told kernel\nVmRSS:\t  700 kB\n"},
        {30, 30, 'S', "Name:\tother\nVmRSS:\t  900 kB\nRssAnon:\t  900 kB\nRssShmem:\t  0 kB\n"},
    };
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        char *d = xasprintf("%s/%d", dir, procs[i].pid);
        assert_int_equal(mkdir(d, 0755), 0);
        char *p = xasprintf("%s/stat", d);
        char *t = xasprintf("%d (x) %c 1 %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n", procs[i].pid,
                            procs[i].st, procs[i].pgid, procs[i].pgid);
        write_file(p, t, 0644);
        free(p);
        free(t);
        p = xasprintf("%s/status", d);
        write_file(p, procs[i].status, 0644);
        free(p);
        free(d);
    }
    pid_t want[] = {10, 20, 40};
    proctree_group_info gi[3];
    char err[256];
    assert_int_equal(proctree_scan(dir, want, 3, gi, err, sizeof err), 0);
    assert_int_equal(gi[0].pgid, 10);
    assert_int_equal(gi[0].n, 2); /* the zombie is not a member */
    assert_true((gi[0].pids[0] == 10 && gi[0].pids[1] == 11) || (gi[0].pids[0] == 11 && gi[0].pids[1] == 10));
    /* RssAnon + RssShmem: the 498000 kB of mapped file are left out */
    assert_int_equal(gi[0].anon_bytes, (1000 + 1000 + 3000) * 1024ull);
    assert_int_equal(gi[1].n, 1);
    assert_int_equal(gi[1].anon_bytes, 700 * 1024ull); /* no RssAnon: VmRSS */
    assert_int_equal(gi[2].n, 0);
    assert_int_equal(gi[2].anon_bytes, 0);
    assert_int_equal(proctree_anon(dir, 10), 2000 * 1024ull);
    proctree_scan_release(gi, 3);
    assert_int_equal(proctree_scan("/nonexistent/proc", want, 3, gi, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/proc"));
    assert_int_equal(gi[0].n, 0);
    proctree_scan_release(gi, 3);
    rm_rf(dir);
}

/* A real process that maps and reads a 64 MiB file: its resident file
 * pages show in VmRSS, never in what proctree_anon counts. */
static void mapped_file_is_not_counted(void **state)
{
    /* under valgrind the forked child carries valgrind's own anonymous
     * memory (tens of MiB), which is exactly what this test measures */
    if (getenv("GPUMOD_VALGRIND")) skip();
    char path[] = "/tmp/gpumod-proctree-map.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = 64 << 20;
    assert_int_equal(ftruncate(fd, (off_t)len), 0);
    char blk[65536];
    memset(blk, 7, sizeof blk);
    for (size_t off = 0; off < len; off += sizeof blk) assert_int_equal(write(fd, blk, sizeof blk), (ssize_t)sizeof blk);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        volatile char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) _exit(1);
        unsigned sum = 0;
        for (size_t i = 0; i < len; i += 4096) sum += m[i];
        if (write(p[1], &sum, 1) != 1) _exit(1);
        for (;;) pause();
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    close(fd);
    unlink(path);
    pid_t want[] = {pid};
    proctree_group_info gi[1];
    assert_int_equal(proctree_scan(NULL, want, 1, gi, NULL, 0), 0);
    assert_int_equal(gi[0].n, 1);
    assert_true(proctree_rss(NULL, pid) >= 32ull << 20); /* the file pages are resident */
    assert_true(gi[0].anon_bytes < 16ull << 20);
    proctree_scan_release(gi, 1);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(group_members_rss_and_starttime),
        cmocka_unit_test(zombie_is_not_a_member),
        cmocka_unit_test(missing_root_is_an_error),
        cmocka_unit_test(odd_comm_in_a_fixture),
        cmocka_unit_test(scan_groups_in_one_pass),
        cmocka_unit_test(mapped_file_is_not_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
