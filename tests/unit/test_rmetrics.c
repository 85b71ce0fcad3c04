/* test_rmetrics.c - the router's /metrics page (src/router/rmetrics.c)
 * after a known sequence of updates: exact counters by (model, service,
 * status), folding of unrouted models into "unknown", label cleaning,
 * exact histogram buckets, queue depths, activation and switch outcomes,
 * service states and memory per device (read through a fake of the table
 * the daemon lends, router/rhost.h); the bounded series table; and the page through
 * `promtool check metrics` when promtool is in the test cache (skipped
 * with a note otherwise: GPUMOD_PROMTOOL, build/cache or $BUILD/cache). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testenv.h" /* before config.h: its parameter named mode */

#include "router/promtext.h"
#include "router/rmetrics.h"

/* ---- fakes: what the page reads through the table the daemon lends ---- */

static rh_state g_states[3];
static size_t g_nstates;

static size_t fake_states(void *ud, const char *id, rh_state *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < g_nstates && n < max; i++)
        if (!id || !strcmp(id, g_states[i].id)) out[n++] = g_states[i];
    return n;
}

static snapshot g_snap;

static const snapshot *fake_snapshot(void *ud)
{
    return &g_snap;
}

static const router_host g_host = {.states = fake_states, .last_snapshot = fake_snapshot};

/* ---- helpers ---- */

static void has(const char *page, const char *line)
{
    char *want = xasprintf("\n%s\n", line);
    char *pg = xasprintf("\n%s", page);
    if (!strstr(pg, want)) fail_msg("missing line: %s\n--- page ---\n%s", line, page);
    free(want);
    free(pg);
}

static void lacks(const char *page, const char *text)
{
    if (strstr(page, text)) fail_msg("unexpected: %s\n--- page ---\n%s", text, page);
}

static char *render(rmetrics *m, const router_host *h)
{
    buf out = BUF_INIT;
    char err[256] = "";
    if (rm_render(m, h, &out, err, sizeof err) != 0) fail_msg("rm_render: %s", err);
    return buf_detach(&out);
}

/* A sequence a router could produce: three models, a 404, an abort. */
static rmetrics *sample(void)
{
    rmetrics *m = rm_new();
    rm_inflight(m, 1);
    rm_inflight(m, 1);
    rm_inflight(m, 1);
    rm_inflight(m, -1);
    rm_request(m, "qwen3", "chat", 200, 100, 2000, 0.004, 0.5);
    rm_request(m, "qwen3", "chat", 200, 50, 1000, 0.2, 3.0);
    rm_request(m, "coder", "code", 200, 10, 10, 0.01, 0.01);
    rm_request(m, "coder", "code", 0, 10, 0, -1, 0.3); /* the client went away before a byte */
    rm_request(m, "made-up \"x\"\n", NULL, 404, 20, 80, 0.001, 0.001);
    rm_request(m, NULL, NULL, 400, 5, 60, 0.001, 0.001);
    rm_queue_depth(m, "chat", 3);
    rm_queue_depth(m, "code", 0);
    rm_queue_depth(m, "chat", 2);
    rm_queue_wait(m, 0.05);
    rm_queue_wait(m, 7);
    rm_queue_wait(m, 5000);
    rm_activation(m, 12, true);
    rm_activation(m, 0.3, false);
    rm_switch(m, 40, true);
    return m;
}

static void counters_and_histograms(void **state)
{
    rmetrics *m = sample();
    char *p = render(m, NULL);

    has(p, "# TYPE gpumod_router_requests_total counter");
    has(p, "gpumod_router_requests_total{model=\"qwen3\",service=\"chat\",status=\"200\"} 2");
    has(p, "gpumod_router_requests_total{model=\"coder\",service=\"code\",status=\"200\"} 1");
    has(p, "gpumod_router_requests_total{model=\"coder\",service=\"code\",status=\"aborted\"} 1");
    /* what a client made up is never a label */
    has(p, "gpumod_router_requests_total{model=\"unknown\",service=\"none\",status=\"404\"} 1");
    has(p, "gpumod_router_requests_total{model=\"unknown\",service=\"none\",status=\"400\"} 1");
    lacks(p, "made-up");

    has(p, "gpumod_router_inflight 2");
    has(p, "gpumod_router_bytes_relayed_total{direction=\"in\"} 195");
    has(p, "gpumod_router_bytes_relayed_total{direction=\"out\"} 3150");

    /* ttfb: 0.004 0.2 0.01 0.001 0.001 (the aborted one had none) */
    has(p, "# TYPE gpumod_router_ttfb_seconds histogram");
    has(p, "gpumod_router_ttfb_seconds_bucket{le=\"0.005\"} 3");
    has(p, "gpumod_router_ttfb_seconds_bucket{le=\"0.01\"} 4");
    has(p, "gpumod_router_ttfb_seconds_bucket{le=\"0.1\"} 4");
    has(p, "gpumod_router_ttfb_seconds_bucket{le=\"0.25\"} 5");
    has(p, "gpumod_router_ttfb_seconds_bucket{le=\"300\"} 5");
    has(p, "gpumod_router_ttfb_seconds_bucket{le=\"+Inf\"} 5");
    has(p, "gpumod_router_ttfb_seconds_count 5");
    /* durations: 0.5 3 0.01 0.3 0.001 0.001 */
    has(p, "gpumod_router_request_duration_seconds_bucket{le=\"0.01\"} 3");
    has(p, "gpumod_router_request_duration_seconds_bucket{le=\"0.5\"} 5");
    has(p, "gpumod_router_request_duration_seconds_bucket{le=\"2.5\"} 5");
    has(p, "gpumod_router_request_duration_seconds_bucket{le=\"5\"} 6");
    has(p, "gpumod_router_request_duration_seconds_count 6");
    double sum = 0.5;
    sum += 3.0, sum += 0.01, sum += 0.3, sum += 0.001, sum += 0.001;
    buf want = BUF_INIT;
    buf_adds(&want, "gpumod_router_request_duration_seconds_sum ");
    prom_format_double(&want, sum);
    has(p, want.p);
    buf_release(&want);

    has(p, "gpumod_router_queue_depth{service=\"chat\"} 2");
    has(p, "gpumod_router_queue_depth{service=\"code\"} 0");
    has(p, "gpumod_router_queue_wait_seconds_bucket{le=\"0.1\"} 1");
    has(p, "gpumod_router_queue_wait_seconds_bucket{le=\"10\"} 2");
    has(p, "gpumod_router_queue_wait_seconds_bucket{le=\"1200\"} 2");
    has(p, "gpumod_router_queue_wait_seconds_bucket{le=\"+Inf\"} 3");
    has(p, "gpumod_router_queue_wait_seconds_count 3");

    has(p, "gpumod_activation_duration_seconds_bucket{outcome=\"ok\",le=\"10\"} 0");
    has(p, "gpumod_activation_duration_seconds_bucket{outcome=\"ok\",le=\"20\"} 1");
    has(p, "gpumod_activation_duration_seconds_count{outcome=\"ok\"} 1");
    has(p, "gpumod_activation_duration_seconds_bucket{outcome=\"failed\",le=\"0.5\"} 1");
    has(p, "gpumod_activation_duration_seconds_count{outcome=\"failed\"} 1");
    has(p, "gpumod_switch_duration_seconds_bucket{outcome=\"ok\",le=\"60\"} 1");
    has(p, "gpumod_switch_duration_seconds_count{outcome=\"failed\"} 0");

    /* no supervisor, no monitor: no such families */
    lacks(p, "gpumod_service_state");
    lacks(p, "gpumod_gpu_memory");
    free(p);
    rm_free(m);
}

static void states_and_memory(void **state)
{
    g_nstates = 2;
    g_states[0] = (rh_state){"chat", SVC_READY, -1};
    g_states[1] = (rh_state){"code", SVC_STARTING, 42};
    memset(&g_snap, 0, sizeof g_snap);
    g_snap.ngpus = 2;
    g_snap.gpus[0].index = 0;
    g_snap.gpus[0].free_bytes = 1000;
    g_snap.gpus[0].total_bytes = 24000;
    g_snap.gpus[1].index = 1;
    g_snap.gpus[1].free_bytes = 2000;
    g_snap.gpus[1].total_bytes = 48000;
    g_snap.host.meminfo_ok = true;
    g_snap.host.mem_available = 123456789;
    rmetrics *m = rm_new();
    char *p = render(m, &g_host);
    has(p, "gpumod_service_state{service=\"chat\",state=\"ready\"} 1");
    has(p, "gpumod_service_state{service=\"chat\",state=\"down\"} 0");
    has(p, "gpumod_service_state{service=\"code\",state=\"starting\"} 1");
    has(p, "gpumod_service_state{service=\"code\",state=\"ready\"} 0");
    has(p, "gpumod_gpu_memory_free_bytes{gpu=\"0\"} 1000");
    has(p, "gpumod_gpu_memory_free_bytes{gpu=\"1\"} 2000");
    has(p, "gpumod_gpu_memory_total_bytes{gpu=\"1\"} 48000");
    has(p, "gpumod_host_mem_available_bytes 123456789");
    /* an empty router still renders every family of its own */
    has(p, "# TYPE gpumod_router_requests_total counter");
    has(p, "gpumod_router_inflight 0");
    free(p);
    rm_free(m);
    g_nstates = 0;
}

/* Label values from a backend (llama.cpp router-mode model names) are
 * cleaned: escaped quotes, control bytes and invalid UTF-8 as '?', cut. */
static void labels_cleaned(void **state)
{
    rmetrics *m = rm_new();
    rm_request(m, "a\"b\\c", "svc", 200, 0, 0, -1, -1);
    rm_request(m, "bad\xff\x01utf8 \xc3\xa9", "svc", 200, 0, 0, -1, -1);
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    rm_request(m, longname, "svc", 200, 0, 0, -1, -1);
    char *p = render(m, NULL);
    has(p, "gpumod_router_requests_total{model=\"a\\\"b\\\\c\",service=\"svc\",status=\"200\"} 1");
    has(p, "gpumod_router_requests_total{model=\"bad??utf8 \xc3\xa9\",service=\"svc\",status=\"200\"} 1");
    char want[300];
    snprintf(want, sizeof want, "gpumod_router_requests_total{model=\"%.128s\",service=\"svc\",status=\"200\"} 1", longname);
    has(p, want);
    free(p);
    rm_free(m);
}

/* The same label set many times: one series; past the cap, one overflow
 * series; the table keeps every count exact while growing. */
static void bounded_series(void **state)
{
    rmetrics *m = rm_new();
    for (int i = 0; i < 2000; i++) {
        char model[32];
        snprintf(model, sizeof model, "m%d", i);
        rm_request(m, model, "svc", 200, 1, 1, 0.1, 0.1);
        rm_request(m, "m0", "svc", 200, 1, 1, 0.1, 0.1);
    }
    char *p = render(m, NULL);
    has(p, "gpumod_router_requests_total{model=\"m0\",service=\"svc\",status=\"200\"} 2001");
    has(p, "gpumod_router_requests_total{model=\"m1\",service=\"svc\",status=\"200\"} 1");
    has(p, "gpumod_router_requests_total{model=\"m1023\",service=\"svc\",status=\"200\"} 1");
    lacks(p, "model=\"m1024\"");
    has(p, "gpumod_router_requests_total{model=\"unknown\",service=\"unknown\",status=\"other\"} 976");
    free(p);
    rm_free(m);
}

static char *find_promtool(void)
{
    const char *env = getenv("GPUMOD_PROMTOOL");
    if (!env || !*env) env = getenv("PROMTOOL");
    char *c[3] = {env && *env ? xstrdup(env) : NULL, src_path("build/cache/prometheus/usr/bin/promtool"),
                  build_path("cache/prometheus/usr/bin/promtool")};
    char *hit = NULL;
    for (int i = 0; i < 3; i++) {
        if (!hit && c[i] && access(c[i], X_OK) == 0)
            hit = c[i];
        else
            free(c[i]);
    }
    return hit;
}

/* promtool check metrics < text: its exit status; what it printed in out */
static int promtool(const char *tool, const char *text, buf *out)
{
    char in_path[] = "/tmp/gpumod-rmetrics-XXXXXX", out_path[] = "/tmp/gpumod-rmetrics-out-XXXXXX";
    int fd = mkstemp(in_path), ofd = mkstemp(out_path);
    assert_true(fd >= 0 && ofd >= 0);
    unlink(in_path);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, 0);
        dup2(ofd, 1);
        dup2(ofd, 2);
        execl(tool, tool, "check", "metrics", (char *)NULL);
        _exit(127);
    }
    close(fd);
    close(ofd);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    char *o = read_text(out_path);
    unlink(out_path);
    if (o) buf_adds(out, o);
    free(o);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void promtool_accepts(void **state)
{
    char *tool = find_promtool();
    if (!tool) {
        print_message("skipped: promtool not in the test cache (scripts/install-deps --test-cache build/cache)\n");
        skip();
    }
    g_nstates = 2;
    g_states[0] = (rh_state){"chat", SVC_READY, -1};
    g_states[1] = (rh_state){"we\"ird", SVC_FAILED, -1};
    memset(&g_snap, 0, sizeof g_snap);
    g_snap.ngpus = 1;
    g_snap.gpus[0].free_bytes = 5;
    g_snap.gpus[0].total_bytes = 10;
    g_snap.host.meminfo_ok = true;
    g_snap.host.mem_available = 7;
    rmetrics *m = sample();
    rm_request(m, "bad\xff\x01utf8", "svc", 200, 0, 0, -1, -1);
    char *p = render(m, &g_host);
    buf o = BUF_INIT;
    int rc = promtool(tool, p, &o);
    if (rc != 0) fail_msg("promtool exited %d: %s\n--- page ---\n%s", rc, o.p ? o.p : "", p);
    assert_int_equal(o.len, 0); /* no lint remark either */
    buf_release(&o);
    free(p);
    rm_free(m);
    /* and an empty one */
    m = rm_new();
    p = render(m, NULL);
    rc = promtool(tool, p, &o);
    if (rc != 0) fail_msg("promtool exited %d on the empty page: %s\n%s", rc, o.p ? o.p : "", p);
    buf_release(&o);
    free(p);
    rm_free(m);
    free(tool);
    g_nstates = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counters_and_histograms),
        cmocka_unit_test(states_and_memory),
        cmocka_unit_test(labels_cleaned),
        cmocka_unit_test(bounded_series),
        cmocka_unit_test(promtool_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
