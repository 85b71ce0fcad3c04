/* test_tui_model.c - the dashboard's model (src/tui/model.c), JSON in,
 * structs and lines out: GET /status with a GPU, reservations, contig
 * figures and services; a status without a snapshot yet reads unknown,
 * not zero; a dry run's plan as lines (a refused step with its reason);
 * the daemon's error JSON as its message, first line only; durations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "../../src/tui/model.c"

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    return j;
}

static void status_full(void **state)
{
    (void)state;
    cJSON *j = parse(
        "{\"daemon\":{\"pid\":7,\"version\":\"0.1.0\",\"shutting_down\":false},"
        "\"services\":[{\"id\":\"chat\",\"state\":\"starting\",\"since\":\"2026-01-01T00:00:00.000Z\",\"port\":7070,"
        "\"progress_pct\":42,\"admitted\":{\"host_bytes\":1048576,\"gpu_bytes\":{\"0\":2097152}},\"footprint\":null,"
        "\"last_start\":{\"seq\":3,\"outcome\":\"pending\",\"message\":null}},"
        "{\"id\":\"emb\",\"state\":\"down\",\"port\":0,\"progress_pct\":null,\"configured\":false}],"
        "\"slot\":{\"holder\":\"chat\"},"
        "\"memory\":{\"nvml\":\"ok\",\"host\":{\"mem_total_bytes\":1000,\"mem_available_bytes\":600,"
        "\"reserved_bytes\":100,\"psi_some_avg10\":1.5,\"psi_full_avg10\":0.25,\"contig_bytes\":4096,"
        "\"high_order_pages\":{\"4\":12,\"5\":3}},"
        "\"gpus\":[{\"index\":0,\"name\":\"G\",\"total_bytes\":100,\"free_bytes\":30,\"reserved_bytes\":50}]},"
        "\"events\":[{\"id\":9,\"ts\":\"2026-01-01T01:02:03.456Z\",\"service\":\"chat\",\"kind\":\"state\","
        "\"from\":\"down\",\"to\":\"starting\",\"reason\":\"start\\nrequested\"}]}");
    tui_model m;
    assert_int_equal(model_from_status(&m, j), 0);
    assert_true(m.have);
    assert_int_equal(m.pid, 7);
    assert_true(m.host.known);
    assert_int_equal(m.host.bar.total, 1000);
    assert_int_equal(m.host.bar.used, 400);
    assert_int_equal(m.host.bar.reserved, 100);
    assert_true(m.host.contig_known);
    assert_int_equal(m.host.contig_bytes, 4096);
    assert_int_equal(m.host.norders, 2);
    assert_int_equal(m.host.order[1], 5);
    assert_int_equal(m.host.pages[0], 12);
    assert_int_equal(m.ngpus, 1);
    /* reserved beyond what is free is clamped to the free bytes */
    assert_int_equal(m.gpus[0].bar.used, 70);
    assert_int_equal(m.gpus[0].bar.reserved, 30);
    assert_int_equal(m.nsvcs, 2);
    assert_string_equal(m.svcs[0].id, "chat");
    assert_int_equal(m.svcs[0].progress, 42);
    assert_true(m.svcs[0].need_known);
    assert_int_equal(m.svcs[0].need, 3145728);
    assert_false(m.svcs[0].foot_known);
    assert_int_equal(m.svcs[0].start_seq, 3);
    assert_string_equal(m.svcs[0].start_outcome, "pending");
    assert_int_equal(m.svcs[1].progress, -1);
    assert_false(m.svcs[1].configured);
    assert_string_equal(m.slot_holder, "chat");
    assert_int_equal(m.nevents, 1);
    assert_string_equal(m.events[0].ts, "2026-01-01T01:02:03.456Z");
    assert_non_null(strstr(m.events[0].text, "01:02:03 chat state down->starting: start"));
    cJSON_Delete(j);
}

static void status_before_snapshot(void **state)
{
    (void)state;
    cJSON *j = parse("{\"daemon\":{\"pid\":1},\"services\":[],\"memory\":{\"nvml\":null,\"age_ms\":null,"
                     "\"host\":{\"reserved_bytes\":0},\"gpus\":[]},\"events\":[]}");
    tui_model m;
    assert_int_equal(model_from_status(&m, j), 0);
    assert_false(m.host.known);
    assert_false(m.host.psi_known);
    assert_false(m.host.contig_known);
    cJSON_Delete(j);
    j = parse("{\"error\":{\"code\":\"x\"}}");
    assert_int_equal(model_from_status(&m, j), -1);
    cJSON_Delete(j);
}

static void plan_lines(void **state)
{
    (void)state;
    cJSON *j = parse(
        "{\"mode\":\"B\",\"from\":\"A\",\"ok\":false,\"refused\":\"big\",\"reason\":\"GPU 0 free 1 MiB < required 9 MiB\","
        "\"stops\":[\"a\"],\"keeps\":[],\"starts\":[\"big\"],"
        "\"before\":{\"host_available_bytes\":2097152,\"reserved_host_bytes\":0,\"gpus\":[]},"
        "\"steps\":[{\"kind\":\"stop\",\"service\":\"a\",\"after\":{\"host_available_bytes\":3145728,\"gpus\":[]}},"
        "{\"kind\":\"start\",\"service\":\"big\",\"verdict\":{\"ok\":false,\"reason\":\"GPU 0 free 1 MiB < required 9 MiB\"},"
        "\"need\":{\"host_bytes\":0,\"gpu_bytes\":{\"0\":9437184}},"
        "\"after\":{\"host_available_bytes\":3145728,\"gpus\":[{\"index\":0,\"free_bytes\":1048576,\"reserved_bytes\":0}]}}],"
        "\"warnings\":[\"w1\"]}");
    buf b = BUF_INIT;
    model_plan_text(&b, j);
    assert_string_equal(b.p, "switch A -> B\n"
                             "stops: a\n"
                             "keeps: -\n"
                             "starts: big\n"
                             "before: host 2 MiB free\n"
                             "stop a -> host 3 MiB free\n"
                             "start big (need 9 MiB) REFUSED: GPU 0 free 1 MiB < required 9 MiB -> host 3 MiB, gpu 0 1 MiB free\n"
                             "warning: w1\n"
                             "verdict: refused (big): GPU 0 free 1 MiB < required 9 MiB\n");
    buf_release(&b);
    cJSON_Delete(j);
}

static void error_and_dur(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    const char *e = "{\"error\":{\"code\":\"start_failed\",\"message\":\"'x' exited\\nlog tail\"}}";
    model_error_text(&b, 422, e, strlen(e));
    assert_string_equal(b.p, "'x' exited");
    buf_clear(&b);
    model_error_text(&b, 502, "oops", 4);
    assert_string_equal(b.p, "the daemon answered HTTP 502: oops");
    buf_clear(&b);
    model_dur(&b, 59999);
    buf_adds(&b, " ");
    model_dur(&b, 61000);
    buf_adds(&b, " ");
    model_dur(&b, 3600000 + 5 * 60000);
    buf_adds(&b, " ");
    model_dur(&b, 2 * 86400000LL + 4 * 3600000);
    assert_string_equal(b.p, "<1m 1m 1h05m 2d04h");
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_full),
        cmocka_unit_test(status_before_snapshot),
        cmocka_unit_test(plan_lines),
        cmocka_unit_test(error_and_dur),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
