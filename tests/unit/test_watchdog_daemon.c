/* test_watchdog_daemon.c - the watchdog's glue (src/daemon/watchdog.c) on
 * a real loop with a real process group, against a stub supervisor and
 * hostmon: the host figures come from a /proc fixture rewritten by
 * rename, the service's RSS from the real /proc, its GPU memory from the
 * stub's snapshot.  Checks the stop call (once per start of a service,
 * with a reason and data holding every figure), the floor trigger, the
 * status JSON, takes never piling up, and a clean close with a take in
 * flight. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testenv.h"

#include "../../src/daemon/watchdog.c"

#define TMIB ((uint64_t)1 << 20)

/* ---- stubs: the supervisor and hostmon as the watchdog sees them ---- */

static sup_usage g_use[4];
static size_t g_nuse;
static int g_stops;
static char g_stop_id[64], g_stop_reason[512];
static char *g_stop_data;

size_t sup_usages(sup *s, sup_usage *out, size_t max)
{
    size_t n = g_nuse < max ? g_nuse : max;
    memcpy(out, g_use, n * sizeof *out);
    return n;
}

void sup_watchdog_stop(sup *s, const char *id, const char *reason, const char *data_json)
{
    g_stops++;
    snprintf(g_stop_id, sizeof g_stop_id, "%s", id);
    snprintf(g_stop_reason, sizeof g_stop_reason, "%s", reason);
    free(g_stop_data);
    g_stop_data = xstrdup(data_json);
}

static snapshot g_snap;
static gpu_proc g_procs[1];
static bool g_has_snap;
static hostmon_cb g_take_cb;
static void *g_take_ud;
static int g_takes;

const snapshot *hostmon_last(const hostmon *h, int64_t *taken_ms)
{
    if (taken_ms) *taken_ms = clock_mono_ms();
    return g_has_snap ? &g_snap : NULL;
}

void hostmon_take(hostmon *h, hostmon_cb cb, void *ud)
{
    assert_null(g_take_cb); /* never two of ours in flight */
    g_take_cb = cb;
    g_take_ud = ud;
    g_takes++;
}

/* hostmon finishes the take in flight */
static void finish_take(void)
{
    hostmon_cb cb = g_take_cb;
    g_take_cb = NULL;
    if (cb) cb(g_has_snap ? &g_snap : NULL, g_take_ud);
}

/* ---- fixture ---- */

static char *g_dir;
static pid_t g_child;
static settings g_set;

static void write_host(uint64_t avail_kb, double psi_full)
{
    char *p = xasprintf("%s/meminfo", g_dir);
    char *t = xasprintf(
        "MemTotal:       24684092 kB\nMemFree:        24219960 kB\nMemAvailable:   %llu kB\n",
        (unsigned long long)avail_kb);
    write_file(p, t, 0644);
    free(p);
    free(t);
    p = xasprintf("%s/pressure/memory", g_dir);
    t = xasprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=%.2f avg60=0.00 "
                  "avg300=0.00 total=0\n",
                  psi_full);
    write_file(p, t, 0644);
    free(p);
    free(t);
}

/* A process group of one that holds 40 MiB of touched memory. */
static pid_t spawn_holder(void)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        size_t len = 40 << 20;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (size_t i = 0; m != MAP_FAILED && i < len; i += 4096)
            m[i] = 1;
        if (write(fd[1], "k", 1) != 1) _exit(1);
        for (;;)
            pause();
    }
    setpgid(pid, pid);
    close(fd[1]);
    char c;
    assert_int_equal(read(fd[0], &c, 1), 1);
    close(fd[0]);
    return pid;
}

static int setup(void **state)
{
    char tmpl[] = "/tmp/gpumod-wd.XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    g_dir = xstrdup(tmpl);
    char *p = xasprintf("%s/pressure", g_dir);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
    write_host(20ull << 20, 0);

    memset(&g_set, 0, sizeof g_set);
    g_set.memory.watchdog_floor_mb = 2048;
    g_set.memory.watchdog_psi_full_avg10_max = 20;
    g_set.memory.watchdog_interval_ms = 10;
    g_set.memory.watchdog_over_need_factor = 1.25;
    g_set.memory.watchdog_over_need_margin_mb = 1024;

    g_child = spawn_holder();
    memset(g_use, 0, sizeof g_use);
    g_nuse = 1;
    g_use[0].id = "chat";
    g_use[0].state = SVC_READY;
    g_use[0].pgid = g_child;
    g_use[0].started_ms = 1000;
    snprintf(g_use[0].admitted.source, sizeof g_use[0].admitted.source, "declared");
    g_use[0].admitted.host_bytes = 30 * TMIB;
    g_use[0].admitted.ngpu = 1;
    g_use[0].admitted.gpu[0].index = 0;
    g_use[0].admitted.gpu[0].bytes = 100 * TMIB;

    memset(&g_snap, 0, sizeof g_snap);
    g_snap.nvml = NVML_OK;
    g_snap.ngpus = 1;
    g_snap.gpus[0].index = 0;
    g_procs[0].pid = (uint32_t)g_child;
    g_procs[0].used_bytes = 200 * TMIB;
    g_snap.gpus[0].procs = g_procs;
    g_snap.gpus[0].nprocs = 1;
    g_has_snap = true;

    g_stops = 0;
    g_takes = 0;
    g_take_cb = NULL;
    return 0;
}

static int teardown(void **state)
{
    kill(-g_child, SIGKILL);
    waitpid(g_child, NULL, 0);
    rm_rf(g_dir);
    free(g_dir);
    free(g_stop_data);
    g_stop_data = NULL;
    return 0;
}

/* Run the loop until cond() or the (scaled) deadline. */
static bool run_until(uv_loop_t *loop, bool (*cond)(void), int64_t ms)
{
    int64_t deadline = mono_ms() + ms * scale();
    while (!cond()) {
        if (mono_ms() > deadline) return false;
        uv_run(loop, UV_RUN_NOWAIT);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    return true;
}

static bool stopped_once(void)
{
    return g_stops > 0;
}
static bool one_take(void)
{
    return g_takes >= 1;
}
static bool two_takes(void)
{
    return g_takes >= 2;
}
static bool closed_flag;
static void on_closed(void *ud)
{
    closed_flag = true;
}
static bool is_closed(void)
{
    return closed_flag;
}

static void close_and_wait(uv_loop_t *loop, watchdog *w)
{
    closed_flag = false;
    watchdog_close(w, on_closed, NULL);
    /* a take of ours may be in flight: the close waits for it */
    uv_run(loop, UV_RUN_NOWAIT);
    finish_take();
    assert_true(run_until(loop, is_closed, 2000));
}

static void over_need_stops_once_with_figures(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    /* need 130 MiB, limit 130 x 1.25 + 1024 = 1186.5 MiB: make the margin small */
    g_set.memory.watchdog_over_need_margin_mb = 10;
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    assert_true(run_until(&loop, stopped_once, 2000));
    assert_string_equal(g_stop_id, "chat");
    assert_non_null(strstr(g_stop_reason, "'chat' uses "));
    assert_non_null(strstr(g_stop_reason, "(admitted need 130 MiB x 1.25 + 10 MiB): stopping it"));

    cJSON *d = cJSON_Parse(g_stop_data);
    assert_non_null(d);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(d, "trigger")),
                        "service.over_need");
    assert_int_equal((int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(d, "mem_available_bytes")),
                     (int64_t)(20ull << 30));
    assert_int_equal((int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(d, "floor_bytes")),
                     (int64_t)(2048 * TMIB));
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(d, "nvml")), "ok");
    cJSON *sv = cJSON_GetObjectItem(d, "service");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(sv, "id")), "chat");
    double host = cJSON_GetNumberValue(cJSON_GetObjectItem(sv, "host_used_bytes"));
    double gpu = cJSON_GetNumberValue(cJSON_GetObjectItem(sv, "gpu_used_bytes"));
    assert_true(host >= 40.0 * TMIB);
    assert_true(gpu == 200.0 * TMIB);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(sv, "used_bytes")) == host + gpu);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(sv, "need_bytes")) == 130.0 * TMIB);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(sv, "pgid")), (int)g_child);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "services")), 1);
    cJSON_Delete(d);

    /* the same start stays live (a slow stop): no second call */
    finish_take();
    for (int i = 0; i < 10; i++) {
        int64_t until = mono_ms() + 15;
        while (mono_ms() < until)
            uv_run(&loop, UV_RUN_NOWAIT);
        finish_take();
    }
    assert_int_equal(g_stops, 1);

    buf b = BUF_INIT;
    watchdog_json(w, &b);
    cJSON *j = cJSON_Parse(b.p);
    assert_non_null(j);
    cJSON *la = cJSON_GetObjectItem(j, "last_action");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(la, "service")), "chat");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(la, "trigger")),
                        "service.over_need");
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "interval_ms")), 10);
    assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(j, "last_tick")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "note")));
    cJSON_Delete(j);
    buf_release(&b);

    /* a new start of the same id (another spawn time) is judged afresh */
    g_use[0].started_ms = 2000;
    int64_t until = mono_ms() + 2000 * scale();
    while (g_stops < 2 && mono_ms() < until) {
        uv_run(&loop, UV_RUN_NOWAIT);
        finish_take();
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    assert_int_equal(g_stops, 2);

    close_and_wait(&loop, w);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void floor_stops_loading_and_status_reports(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    g_use[0].state = SVC_STARTING;
    g_use[0].loading = true;
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    /* within its need: nothing happens while the host is fine */
    int64_t until = mono_ms() + 100;
    while (mono_ms() < until) {
        uv_run(&loop, UV_RUN_NOWAIT);
        finish_take();
    }
    assert_int_equal(g_stops, 0);
    write_host(1000000, 0); /* 976 MiB */
    assert_true(run_until(&loop, stopped_once, 2000));
    assert_string_equal(g_stop_id, "chat");
    assert_non_null(strstr(
        g_stop_reason, "MemAvailable 976 MiB < floor 2048 MiB: stopping 'chat' (loading; uses "));
    cJSON *d = cJSON_Parse(g_stop_data);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(d, "trigger")),
                        "host.mem_available");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "service"), "loading")));
    cJSON_Delete(d);

    /* the service is gone; the floor stays crossed: noted, not silent */
    g_nuse = 0;
    finish_take();
    until = mono_ms() + 100;
    while (mono_ms() < until)
        uv_run(&loop, UV_RUN_NOWAIT);
    buf b = BUF_INIT;
    watchdog_json(w, &b);
    cJSON *j = cJSON_Parse(b.p);
    assert_non_null(j);
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(j, "note")),
        "MemAvailable 976 MiB < floor 2048 MiB, but no service can be stopped (none is running)");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "services")), 0);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "mem_available_bytes")) ==
                1000000.0 * 1024);
    cJSON_Delete(j);
    buf_release(&b);
    assert_int_equal(g_stops, 1);
    close_and_wait(&loop, w);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void unreadable_meminfo_and_hung_nvml_reported(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char *p = xasprintf("%s/meminfo", g_dir);
    unlink(p);
    free(p);
    g_snap.nvml = NVML_HUNG;
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    assert_true(run_until(&loop, one_take, 2000)); /* the first take, unanswered */
    finish_take();
    int64_t until = mono_ms() + 50;
    while (mono_ms() < until)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(g_stops, 0);
    buf b = BUF_INIT;
    watchdog_json(w, &b);
    cJSON *j = cJSON_Parse(b.p);
    assert_non_null(j);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "mem_available_bytes")));
    assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(j, "host_error")));
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "nvml")), "hung");
    const char *note = cJSON_GetStringValue(cJSON_GetObjectItem(j, "note"));
    assert_non_null(note);
    assert_non_null(strstr(note, "meminfo unreadable"));
    assert_non_null(strstr(note, "NVML hung: new starts are refused (gate nvml.hung)"));
    /* NVML hung: no GPU figure, host RSS only */
    cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "services"), 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(s0, "gpu_used_bytes")));
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(s0, "used_bytes")) >= 40.0 * TMIB);
    cJSON_Delete(j);
    buf_release(&b);
    close_and_wait(&loop, w);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void takes_never_pile_up(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    /* the take is never answered: ticks go on, no second take is asked
     * (hostmon_take's stub asserts it) */
    int64_t until = mono_ms() + 100;
    while (mono_ms() < until) {
        uv_run(&loop, UV_RUN_NOWAIT);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    assert_int_equal(g_takes, 1);
    finish_take();
    assert_true(run_until(&loop, two_takes, 2000));
    /* settings swapped: the new interval shows */
    settings s2 = g_set;
    s2.memory.watchdog_interval_ms = 25;
    watchdog_set_settings(w, &s2);
    buf b = BUF_INIT;
    watchdog_json(w, &b);
    assert_non_null(strstr(b.p, "\"interval_ms\":25,"));
    buf_release(&b);
    close_and_wait(&loop, w);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void close_before_first_tick(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    g_set.memory.watchdog_interval_ms = 60000;
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    buf b = BUF_INIT;
    watchdog_json(w, &b);
    cJSON *j = cJSON_Parse(b.p);
    assert_non_null(j);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "last_tick")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "last_action")));
    cJSON_Delete(j);
    buf_release(&b);
    close_and_wait(&loop, w);
    assert_int_equal(g_takes, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* Run ticks until the watchdog has measured at least `ticks` times (an
 * upper bound on the wait, never a timing assertion). */
static int g_tick_target;
static bool enough_takes(void)
{
    finish_take();
    return g_takes >= g_tick_target;
}

/* A start still in admission holds the load slot with no process yet
 * (pgid 0): it is not "loading" — the host trigger must stop the service
 * that does hold memory, not a start with nothing to free. */
static void admission_start_is_not_loading(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    g_nuse = 2;
    g_use[1] = g_use[0];
    g_use[1].id = "queued";
    g_use[1].state = SVC_STARTING;
    g_use[1].loading = true;
    g_use[1].pgid = 0;
    g_use[1].started_ms = 5000; /* newer: it would win a tie too */
    write_host(1000000, 0);     /* below the floor from the first tick */
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    assert_true(run_until(&loop, stopped_once, 2000));
    assert_string_equal(g_stop_id, "chat");
    assert_non_null(strstr(g_stop_reason, "stopping 'chat' ("));
    buf b = BUF_INIT;
    watchdog_json(w, &b);
    cJSON *j = cJSON_Parse(b.p);
    cJSON *q = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "services"), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(q, "id")), "queued");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(q, "loading")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(q, "used_bytes")));
    cJSON_Delete(j);
    buf_release(&b);
    close_and_wait(&loop, w);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* A group of one that has mapped and read a 96 MiB file (as llama.cpp
 * mmaps its weights) and holds almost no anonymous memory. */
static pid_t spawn_mapper(void)
{
    char path[] = "/tmp/gpumod-wd-map.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = 96 << 20;
    char blk[65536];
    memset(blk, 3, sizeof blk);
    for (size_t off = 0; off < len; off += sizeof blk)
        assert_int_equal(write(fd, blk, sizeof blk), (ssize_t)sizeof blk);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        volatile char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) _exit(1);
        unsigned sum = 0;
        for (size_t i = 0; i < len; i += 4096)
            sum += m[i];
        if (write(p[1], &sum, 1) != 1) _exit(1);
        for (;;)
            pause();
    }
    setpgid(pid, pid);
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    close(fd);
    unlink(path);
    return pid;
}

/* File-backed pages are not "used": a healthy load that mmaps its
 * weights is never stopped as over its need. */
static void mapped_weights_are_not_over_need(void **state)
{
    /* under valgrind the forked child carries valgrind's own anonymous
     * memory (tens of MiB), which is exactly what this test measures */
    if (getenv("GPUMOD_VALGRIND")) skip();
    uv_loop_t loop;
    uv_loop_init(&loop);
    pid_t mapper = spawn_mapper();
    g_use[0].pgid = mapper;
    g_use[0].admitted.host_bytes = 30 * TMIB; /* limit 30 x 1.25 + 0 = 37.5 MiB */
    g_use[0].admitted.ngpu = 0;
    g_set.memory.watchdog_over_need_margin_mb = 0;
    g_procs[0].pid = 1; /* no GPU memory of its own */
    watchdog *w = watchdog_new(&loop, NULL, NULL, &g_set, g_dir);
    g_tick_target = 4;
    assert_true(run_until(&loop, enough_takes, 2000));
    assert_int_equal(g_stops, 0);
    buf b = BUF_INIT;
    watchdog_json(w, &b);
    cJSON *j = cJSON_Parse(b.p);
    cJSON *sv = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "services"), 0);
    double host = cJSON_GetNumberValue(cJSON_GetObjectItem(sv, "host_used_bytes"));
    assert_true(host > 0 && host < 30.0 * TMIB);
    cJSON_Delete(j);
    buf_release(&b);
    close_and_wait(&loop, w);
    assert_int_equal(uv_loop_close(&loop), 0);
    kill(-mapper, SIGKILL);
    waitpid(mapper, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(over_need_stops_once_with_figures, setup, teardown),
        cmocka_unit_test_setup_teardown(floor_stops_loading_and_status_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(unreadable_meminfo_and_hung_nvml_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(takes_never_pile_up, setup, teardown),
        cmocka_unit_test_setup_teardown(close_before_first_tick, setup, teardown),
        cmocka_unit_test_setup_teardown(admission_start_is_not_loading, setup, teardown),
        cmocka_unit_test_setup_teardown(mapped_weights_are_not_over_need, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
