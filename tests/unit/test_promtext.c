/* test_promtext.c - the Prometheus text writer: exact output of counters,
 * gauges and histograms (HELP/TYPE once, cumulative buckets, +Inf, _sum,
 * _count), escaping of help and label values, number formatting, every
 * refusal (bad names, counter without _total, a family twice, le on a
 * histogram, a label twice, a sample outside a family) and its sticky
 * message, bucket edges; and a full exposition checked by `promtool check
 * metrics` when promtool is in the test cache (skipped otherwise:
 * GPUMOD_PROMTOOL, build/cache or $BUILD/cache). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "router/promtext.h"
#include "testenv.h"

static const double lat_bounds[] = {0.005, 0.01, 0.1, 1, 2.5, 10};

static void counter_and_gauge(void **state)
{
    buf out = BUF_INIT;
    prom_writer w;
    prom_init(&w, &out);
    assert_int_equal(prom_family(&w, "gpumod_router_requests_total", PROM_COUNTER,
                                 "Requests by model and status"),
                     0);
    prom_label l1[] = {{"model", "qwen3"}, {"status", "200"}};
    prom_label l2[] = {{"model", "qwen3"}, {"status", "404"}};
    assert_int_equal(prom_sample(&w, l1, 2, 12), 0);
    assert_int_equal(prom_sample(&w, l2, 2, 1), 0);
    assert_int_equal(
        prom_family(&w, "gpumod_router_in_flight", PROM_GAUGE, "Requests being served"), 0);
    assert_int_equal(prom_sample(&w, NULL, 0, 3), 0);
    assert_int_equal(prom_family(&w, "gpumod_temp", PROM_UNTYPED, "x"), 0);
    assert_int_equal(prom_sample(&w, NULL, 0, -1.5), 0);
    assert_null(prom_error(&w));
    assert_string_equal(out.p, "# HELP gpumod_router_requests_total Requests by model and status\n"
                               "# TYPE gpumod_router_requests_total counter\n"
                               "gpumod_router_requests_total{model=\"qwen3\",status=\"200\"} 12\n"
                               "gpumod_router_requests_total{model=\"qwen3\",status=\"404\"} 1\n"
                               "# HELP gpumod_router_in_flight Requests being served\n"
                               "# TYPE gpumod_router_in_flight gauge\n"
                               "gpumod_router_in_flight 3\n"
                               "# HELP gpumod_temp x\n"
                               "# TYPE gpumod_temp untyped\n"
                               "gpumod_temp -1.5\n");
    prom_release(&w);
    buf_release(&out);
}

static void escaping(void **state)
{
    buf out = BUF_INIT;
    prom_writer w;
    prom_init(&w, &out);
    assert_int_equal(prom_family(&w, "m_total", PROM_COUNTER, "a \\ b\nc \"q\""), 0);
    prom_label l[] = {{"model", "a\\b\"c\nd"}, {"empty", ""}, {"u", "mod\xc3\xa8le"}};
    assert_int_equal(prom_sample(&w, l, 3, 1), 0);
    /* help: backslash and newline escaped, quotes kept; values: all three */
    assert_string_equal(out.p,
                        "# HELP m_total a \\\\ b\\nc \"q\"\n"
                        "# TYPE m_total counter\n"
                        "m_total{model=\"a\\\\b\\\"c\\nd\",empty=\"\",u=\"mod\xc3\xa8le\"} 1\n");
    prom_release(&w);
    buf_release(&out);
}

static void numbers(void **state)
{
    static const struct {
        double v;
        const char *s;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {1, "1"},
        {-3, "-3"},
        {0.1, "0.1"},
        {0.005, "0.005"},
        {2.5, "2.5"},
        {1e-9, "1e-09"},
        {1.0 / 3, "0.3333333333333333"},
        {9007199254740992.0, "9007199254740992"},
        {1e20, "1e+20"},
        {123456.789, "123456.789"},
    };
    buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf_clear(&b);
        prom_format_double(&b, cases[i].v);
        assert_string_equal(b.p, cases[i].s);
        if (isfinite(cases[i].v)) assert_true(strtod(b.p, NULL) == cases[i].v);
    }
    buf_clear(&b);
    prom_format_double(&b, NAN);
    assert_string_equal(b.p, "NaN");
    buf_clear(&b);
    prom_format_double(&b, INFINITY);
    assert_string_equal(b.p, "+Inf");
    buf_clear(&b);
    prom_format_double(&b, -INFINITY);
    assert_string_equal(b.p, "-Inf");
    buf_release(&b);
}

static void histogram(void **state)
{
    prom_hist h;
    assert_int_equal(prom_hist_init(&h, lat_bounds, 6), 0);
    /* on a bound counts in that bucket (le: less or equal) */
    double obs[] = {0.001, 0.005, 0.0051, 0.5, 1, 1, 2.5, 9.99, 10, 11, 1e9, NAN};
    for (size_t i = 0; i < sizeof obs / sizeof *obs; i++)
        prom_hist_observe(&h, obs[i]);
    assert_int_equal(h.count, 11); /* NaN ignored */
    uint64_t want[] = {2, 1, 0, 3, 1, 2, 2};
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(h.counts[i], want[i]);
    buf out = BUF_INIT;
    prom_writer w;
    prom_init(&w, &out);
    assert_int_equal(prom_family(&w, "gpumod_router_queue_wait_seconds", PROM_HISTOGRAM,
                                 "Time a request waited for its service"),
                     0);
    prom_label l[] = {{"service", "qwen3"}};
    assert_int_equal(prom_histogram(&w, l, 1, &h), 0);
    prom_hist empty;
    assert_int_equal(prom_hist_init(&empty, lat_bounds, 2), 0);
    assert_int_equal(prom_histogram(&w, NULL, 0, &empty), 0);
    assert_null(prom_error(&w));
    buf exp = BUF_INIT;
    buf_printf(&exp,
               "# HELP gpumod_router_queue_wait_seconds Time a request waited for its service\n"
               "# TYPE gpumod_router_queue_wait_seconds histogram\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"0.005\"} 2\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"0.01\"} 3\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"0.1\"} 3\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"1\"} 6\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"2.5\"} 7\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"10\"} 9\n"
               "gpumod_router_queue_wait_seconds_bucket{service=\"qwen3\",le=\"+Inf\"} 11\n"
               "gpumod_router_queue_wait_seconds_sum{service=\"qwen3\"} ");
    prom_format_double(&exp, h.sum);
    buf_adds(&exp, "\n"
                   "gpumod_router_queue_wait_seconds_count{service=\"qwen3\"} 11\n"
                   "gpumod_router_queue_wait_seconds_bucket{le=\"0.005\"} 0\n"
                   "gpumod_router_queue_wait_seconds_bucket{le=\"0.01\"} 0\n"
                   "gpumod_router_queue_wait_seconds_bucket{le=\"+Inf\"} 0\n"
                   "gpumod_router_queue_wait_seconds_sum 0\n"
                   "gpumod_router_queue_wait_seconds_count 0\n");
    assert_string_equal(out.p, exp.p);
    assert_true(h.sum > 1e9);
    buf_release(&exp);
    prom_release(&w);
    buf_release(&out);
}

static void hist_bounds_refused(void **state)
{
    prom_hist h;
    double down[] = {1, 0.5}, same[] = {1, 1}, inf[] = {1, INFINITY}, nan_[] = {NAN};
    double many[PROM_HIST_MAX + 1];
    for (int i = 0; i <= PROM_HIST_MAX; i++)
        many[i] = i;
    assert_int_equal(prom_hist_init(&h, down, 2), -1);
    assert_int_equal(prom_hist_init(&h, same, 2), -1);
    assert_int_equal(prom_hist_init(&h, inf, 2), -1);
    assert_int_equal(prom_hist_init(&h, nan_, 1), -1);
    assert_int_equal(prom_hist_init(&h, many, PROM_HIST_MAX + 1), -1);
    assert_int_equal(prom_hist_init(&h, many, PROM_HIST_MAX), 0);
    /* no bounds: only +Inf */
    assert_int_equal(prom_hist_init(&h, NULL, 0), 0);
    prom_hist_observe(&h, -5);
    assert_int_equal(h.counts[0], 1);
}

/* A fresh writer, a setup, then the one call expected to fail with msg;
 * afterwards nothing more is written. */
static void expect_refusal(int (*setup)(prom_writer *), const char *msg)
{
    buf out = BUF_INIT;
    prom_writer w;
    prom_init(&w, &out);
    assert_int_equal(setup(&w), -1);
    assert_string_equal(prom_error(&w), msg);
    size_t len = out.len;
    assert_int_equal(prom_family(&w, "ok_total", PROM_COUNTER, "fine"), -1);
    assert_int_equal(prom_sample(&w, NULL, 0, 1), -1);
    assert_int_equal(out.len, len);
    assert_string_equal(prom_error(&w), msg); /* the first problem sticks */
    prom_release(&w);
    buf_release(&out);
}

static int bad_name(prom_writer *w)
{
    return prom_family(w, "9lives", PROM_GAUGE, "x");
}
static int bad_name2(prom_writer *w)
{
    return prom_family(w, "a-b", PROM_GAUGE, "x");
}
static int reserved_name(prom_writer *w)
{
    return prom_family(w, "__x", PROM_GAUGE, "x");
}
static int no_total(prom_writer *w)
{
    return prom_family(w, "requests", PROM_COUNTER, "x");
}
static int no_help(prom_writer *w)
{
    return prom_family(w, "g", PROM_GAUGE, "");
}
static int hist_suffix(prom_writer *w)
{
    return prom_family(w, "x_count", PROM_HISTOGRAM, "x");
}
static int twice(prom_writer *w)
{
    prom_family(w, "a", PROM_GAUGE, "x");
    prom_family(w, "b", PROM_GAUGE, "x");
    return prom_family(w, "a", PROM_GAUGE, "x");
}
static int prefix_is_not_twice(prom_writer *w)
{
    /* "a" then "ab" then "b_a": names that contain each other are distinct */
    if (prom_family(w, "ab", PROM_GAUGE, "x") || prom_family(w, "a", PROM_GAUGE, "x") ||
        prom_family(w, "b_a", PROM_GAUGE, "x"))
        return 0;
    return prom_family(w, "ab", PROM_GAUGE, "x");
}
static int bad_label(prom_writer *w)
{
    prom_family(w, "g", PROM_GAUGE, "x");
    prom_label l[] = {{"a:b", "v"}};
    return prom_sample(w, l, 1, 1);
}
static int label_twice(prom_writer *w)
{
    prom_family(w, "g", PROM_GAUGE, "x");
    prom_label l[] = {{"a", "1"}, {"b", "2"}, {"a", "3"}};
    return prom_sample(w, l, 3, 1);
}
static int null_value(prom_writer *w)
{
    prom_family(w, "g", PROM_GAUGE, "x");
    prom_label l[] = {{"a", NULL}};
    return prom_sample(w, l, 1, 1);
}
static int le_on_hist(prom_writer *w)
{
    prom_hist h;
    prom_hist_init(&h, lat_bounds, 6);
    prom_family(w, "h_seconds", PROM_HISTOGRAM, "x");
    prom_label l[] = {{"le", "1"}};
    return prom_histogram(w, l, 1, &h);
}
static int sample_on_hist(prom_writer *w)
{
    prom_family(w, "h_seconds", PROM_HISTOGRAM, "x");
    return prom_sample(w, NULL, 0, 1);
}
static int hist_on_gauge(prom_writer *w)
{
    prom_hist h;
    prom_hist_init(&h, lat_bounds, 6);
    prom_family(w, "g", PROM_GAUGE, "x");
    return prom_histogram(w, NULL, 0, &h);
}
static int no_family(prom_writer *w)
{
    return prom_sample(w, NULL, 0, 1);
}
static int negative_counter(prom_writer *w)
{
    prom_family(w, "c_total", PROM_COUNTER, "x");
    return prom_sample(w, NULL, 0, -1);
}

static void refusals(void **state)
{
    const char *nm = "expected [a-zA-Z_:][a-zA-Z0-9_:]*, shorter than 128 bytes, no '__' prefix";
    char msg[256];
    snprintf(msg, sizeof msg, "metric name '9lives' is not valid: %s", nm);
    expect_refusal(bad_name, msg);
    snprintf(msg, sizeof msg, "metric name 'a-b' is not valid: %s", nm);
    expect_refusal(bad_name2, msg);
    snprintf(msg, sizeof msg, "metric name '__x' is not valid: %s", nm);
    expect_refusal(reserved_name, msg);
    expect_refusal(no_total, "counter 'requests': the name must end in '_total'");
    expect_refusal(no_help, "metric 'g': no help text");
    expect_refusal(hist_suffix,
                   "histogram 'x_count': the name must not end in _bucket, _sum or _count");
    expect_refusal(twice,
                   "metric 'a': a second family of that name (its samples must be together)");
    expect_refusal(prefix_is_not_twice,
                   "metric 'ab': a second family of that name (its samples must be together)");
    expect_refusal(bad_label, "metric 'g': label name 'a:b' is not valid: expected "
                              "[a-zA-Z_][a-zA-Z0-9_]*, no '__' prefix");
    expect_refusal(label_twice, "metric 'g': label 'a' given twice");
    expect_refusal(null_value, "metric 'g': label 'a' has no value");
    expect_refusal(le_on_hist, "histogram 'h_seconds': label 'le' is reserved for the buckets");
    expect_refusal(sample_on_hist, "histogram 'h_seconds': samples come from prom_histogram");
    expect_refusal(hist_on_gauge, "metric 'g': a histogram sample in a family of another type");
    expect_refusal(no_family, "a sample before any family");
    expect_refusal(negative_counter, "counter 'c_total': value must be >= 0");
    assert_true(prom_metric_name_ok("a:b_c9"));
    assert_true(prom_metric_name_ok("_x"));
    assert_false(prom_metric_name_ok(""));
    assert_false(prom_metric_name_ok(NULL));
    assert_false(prom_metric_name_ok("a b"));
    assert_true(prom_label_name_ok("_x1"));
    assert_false(prom_label_name_ok("__name"));
    assert_false(prom_label_name_ok("1a"));
}

/* What the router's /metrics will look like, through promtool. */
static void exposition(buf *out)
{
    prom_writer w;
    prom_init(&w, out);
    prom_family(&w, "gpumod_router_requests_total", PROM_COUNTER,
                "Requests by model, service and status");
    const char *models[] = {"qwen3", "a\"b\\c\nd", "default"};
    for (int i = 0; i < 3; i++) {
        prom_label l[] = {
            {"model", models[i]}, {"service", "qwen3"}, {"status", i ? "404" : "200"}};
        prom_sample(&w, l, 3, 10 * i + 1);
    }
    prom_family(&w, "gpumod_router_in_flight", PROM_GAUGE, "Requests in flight");
    prom_sample(&w, NULL, 0, 2);
    prom_family(&w, "gpumod_router_relayed_bytes_total", PROM_COUNTER, "Bytes relayed to clients");
    prom_sample(&w, NULL, 0, 123456789012.0);
    prom_family(&w, "gpumod_service_memory_bytes", PROM_GAUGE, "Memory per service and device");
    prom_label m[] = {{"service", "qwen3"}, {"device", "0"}};
    prom_sample(&w, m, 2, 8.5e9);
    static const double act[] = {0.1, 0.5, 1, 5, 10, 30, 60, 120, 300};
    prom_hist h;
    prom_hist_init(&h, act, sizeof act / sizeof *act);
    for (int i = 0; i < 50; i++)
        prom_hist_observe(&h, i * 3.7);
    prom_family(&w, "gpumod_router_activation_seconds", PROM_HISTOGRAM,
                "Time from a request's arrival to its service being ready");
    prom_label s1[] = {{"service", "qwen3"}}, s2[] = {{"service", "llama"}};
    prom_histogram(&w, s1, 1, &h);
    prom_hist_init(&h, act, sizeof act / sizeof *act);
    prom_histogram(&w, s2, 1, &h);
    prom_family(&w, "gpumod_service_state", PROM_GAUGE, "1 for the state each service is in");
    const char *states[] = {"down", "starting", "ready"};
    for (int i = 0; i < 3; i++) {
        prom_label l[] = {{"service", "qwen3"}, {"state", states[i]}};
        prom_sample(&w, l, 2, i == 2);
    }
    assert_null(prom_error(&w));
    prom_release(&w);
}

static char *find_promtool(void)
{
    const char *env = getenv("GPUMOD_PROMTOOL");
    char *c[3] = {env && *env ? xstrdup(env) : NULL,
                  src_path("build/cache/prometheus/usr/bin/promtool"),
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

/* promtool check metrics < text; its exit status (127: not run) */
static int promtool(const char *tool, const char *text, bool quiet)
{
    char path[] = "/tmp/gpumod-promtext-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, 0);
        if (quiet) {
            int nul = open("/dev/null", O_WRONLY);
            dup2(nul, 1), dup2(nul, 2);
        }
        execl(tool, tool, "check", "metrics", (char *)NULL);
        _exit(127);
    }
    close(fd);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void promtool_accepts(void **state)
{
    char *tool = find_promtool();
    if (!tool) {
        print_message("promtool not in the test cache (scripts/install-deps --test-cache)\n");
        skip();
    }
    buf out = BUF_INIT;
    exposition(&out);
    if (promtool(tool, out.p, false) != 0) fail_msg("promtool refused:\n%s", out.p);
    /* and it can fail: a counter without _total, a family twice, an
     * unescaped backslash (what prom_family and prom_escape_value prevent) */
    int rc = promtool(tool, "# HELP c x\n# TYPE c counter\nc 1\n", true);
    assert_true(rc != 0 && rc != 127);
    rc = promtool(tool, "# HELP g x\n# TYPE g gauge\ng 1\n# HELP g x\n# TYPE g gauge\ng 2\n", true);
    assert_true(rc != 0 && rc != 127);
    rc = promtool(tool, "# HELP g x\n# TYPE g gauge\ng{a=\"x\\q\"} 1\n", true);
    assert_true(rc != 0 && rc != 127);
    free(tool);
    buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counter_and_gauge),
        cmocka_unit_test(escaping),
        cmocka_unit_test(numbers),
        cmocka_unit_test(histogram),
        cmocka_unit_test(hist_bounds_refused),
        cmocka_unit_test(refusals),
        cmocka_unit_test(promtool_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
