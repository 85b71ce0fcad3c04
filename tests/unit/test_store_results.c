/* test_store_results.c - bench results in the state database (schema v6):
 * round trip, list filters, pruning by count and by bytes, and a v5
 * database migrated keeping its rows; the tune lease's row (v7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testenv.h"
#include "store/db.h"

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/gpumod-results-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    rm_rf(dir);
    return 0;
}

static store *open_sub(const char *name)
{
    char sub[128], err[256];
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    store *s = NULL;
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    return s;
}

static int64_t add(store *s, const char *service, const char *doc, int64_t keep, int64_t max_bytes,
                   int64_t *pruned)
{
    char err[256];
    store_result r = {.ts_ms = 1764000000000, .kind = "load", .target = (char *)(service ? service : "http://h:1"),
                      .service = (char *)service, .config_hash = service ? "abc" : NULL,
                      .summary = "[{\"x\":1}]", .doc = (char *)doc};
    int64_t id = 0;
    assert_int_equal(store_result_add(s, &r, keep, max_bytes, &id, pruned, err, sizeof err), 0);
    assert_true(id > 0);
    return id;
}

static void round_trip_and_filter(void **state)
{
    store *s = open_sub("rt");
    char err[256];
    int64_t a = add(s, "chat", "{\"schema\":\"gpumod.bench/1\",\"kind\":\"load\"}", 0, 0, NULL);
    int64_t b = add(s, NULL, "{\"k\":2}", 0, 0, NULL);
    int64_t c = add(s, "chat", "{\"k\":3}", 0, 0, NULL);
    store_result *v;
    size_t n;
    assert_int_equal(store_results(s, NULL, NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].id, c); /* newest first */
    assert_int_equal(v[2].id, a);
    assert_null(v[0].doc); /* a list carries no documents */
    assert_string_equal(v[0].summary, "[{\"x\":1}]");
    assert_string_equal(v[0].kind, "load");
    assert_string_equal(v[0].config_hash, "abc");
    assert_int_equal(v[0].bytes, 7);
    assert_null(v[1].service);
    assert_null(v[1].config_hash);
    assert_string_equal(v[1].target, "http://h:1");
    store_results_free(v, n);
    assert_int_equal(store_results(s, "chat", NULL, 1, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].id, c);
    store_results_free(v, n);
    assert_int_equal(store_results(s, "nope", NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    store_results_free(v, n);
    /* by kind (gpumod eval list): an eval result among bench's */
    store_result ev = {.ts_ms = 1764000000001, .kind = "eval", .target = "chat", .service = "chat",
                       .summary = "{}", .doc = "{\"schema\":\"gpumod.eval/1\"}"};
    int64_t e = 0;
    assert_int_equal(store_result_add(s, &ev, 0, 0, &e, NULL, err, sizeof err), 0);
    assert_int_equal(store_results(s, NULL, "eval", 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].id, e);
    store_results_free(v, n);
    assert_int_equal(store_results(s, "chat", "load", 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].id, c);
    store_results_free(v, n);

    assert_int_equal(store_result_get(s, a, &v, err, sizeof err), 1);
    assert_string_equal(v[0].doc, "{\"schema\":\"gpumod.bench/1\",\"kind\":\"load\"}");
    assert_string_equal(v[0].service, "chat");
    assert_int_equal(v[0].ts_ms, 1764000000000);
    store_results_free(v, 1);
    assert_int_equal(store_result_get(s, b + 100, &v, err, sizeof err), 0);
    assert_null(v);
    assert_int_equal(store_result_get(s, 0, &v, err, sizeof err), 0);
    assert_int_equal(store_result_get(s, -3, &v, err, sizeof err), 0);
    store_close(s);
}

static void pruned_by_count_and_by_bytes(void **state)
{
    store *s = open_sub("prune");
    char err[256];
    int64_t pruned = -1, ids[8];
    for (int i = 0; i < 5; i++) ids[i] = add(s, "chat", "{\"doc\":\"0123456789\"}", 3, 0, &pruned);
    assert_int_equal(pruned, 1); /* the 5th insert dropped the 2nd oldest */
    store_result *v;
    size_t n;
    assert_int_equal(store_results(s, NULL, NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].id, ids[4]);
    assert_int_equal(v[2].id, ids[2]);
    store_results_free(v, n);
    assert_int_equal(store_result_get(s, ids[1], &v, err, sizeof err), 0);

    /* 20-byte documents, 50 bytes allowed: the two newest stay */
    ids[5] = add(s, "chat", "{\"doc\":\"0123456789\"}", 100, 50, &pruned);
    assert_int_equal(pruned, 2);
    assert_int_equal(store_results(s, NULL, NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].id, ids[5]);
    assert_int_equal(v[1].id, ids[4]);
    store_results_free(v, n);
    /* one document over the byte cap on its own is still kept (the newest always is) */
    ids[6] = add(s, "chat", "{\"doc\":\"0123456789\"}", 100, 5, &pruned);
    assert_int_equal(pruned, 2);
    assert_int_equal(store_results(s, NULL, NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].id, ids[6]);
    store_results_free(v, n);
    /* ids are never reused after a prune */
    ids[7] = add(s, NULL, "{}", 0, 0, &pruned);
    assert_true(ids[7] > ids[6]);
    assert_int_equal(pruned, 0);
    store_close(s);
}

/* A database at v5 (the previous schema: this build's less the results
 * table) with rows in every table: opening it for writing migrates it to
 * v6 and every row is still there. */
static void v5_database_is_migrated_keeping_its_rows(void **state)
{
    char sub[128], path[160], err[256];
    store *s = open_sub("v5");
    footprint f = {.hash = "h5", .service = "q", .measured_at_ms = 7, .host_bytes = 99, .ngpu = 1};
    f.gpu[0].bytes = 1234;
    f.gpu[0].how = FP_GPU_UNIFIED;
    assert_int_equal(store_footprint_put(s, &f, err, sizeof err), 0);
    store_event e = {.ts_ms = 5, .service = "q", .kind = "state", .reason = "kept"};
    assert_int_equal(store_event_add(s, &e, NULL, err, sizeof err), 0);
    int64_t sw;
    assert_int_equal(store_switch_begin(s, "A", NULL, "cli", 10, &sw, err, sizeof err), 0);
    assert_int_equal(store_switch_finish(s, sw, "committed", 20, NULL, "A", err, sizeof err), 0);
    store_close(s);
    snprintf(sub, sizeof sub, "%s/v5", dir);
    snprintf(path, sizeof path, "%s/%s", sub, STORE_FILE);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE tune_lease; DROP TABLE bench_results; PRAGMA user_version = 5;", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);

    /* read-only, before a daemon migrated it: readable, still v5 */
    assert_int_equal(store_open(&s, sub, false, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), 5);
    store_close(s);

    s = open_sub("v5");
    assert_int_equal(store_schema_version(s), store_schema_latest);
    footprint g;
    assert_int_equal(store_footprint_get(s, "h5", &g, err, sizeof err), 1);
    assert_int_equal(g.gpu[0].bytes, 1234);
    assert_int_equal(g.gpu[0].how, FP_GPU_UNIFIED);
    store_event *ev;
    size_t n;
    assert_int_equal(store_events(s, 0, NULL, 0, &ev, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(ev[0].reason, "kept");
    store_events_free(ev, n);
    char mode[32];
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "A");
    store_switch *w;
    assert_int_equal(store_switch_get(s, sw, &w, err, sizeof err), 1);
    assert_string_equal(w[0].state, "committed");
    store_switches_free(w, 1);
    /* and the new table works */
    int64_t id = add(s, "q", "{}", 0, 0, NULL);
    store_result *v;
    assert_int_equal(store_result_get(s, id, &v, err, sizeof err), 1);
    assert_string_equal(v[0].doc, "{}");
    store_results_free(v, 1);
    store_close(s);
}

/* The tune lease is one row: none at first, then the last put, held or
 * not, across a close and an open. */
static void tune_lease_row(void **state)
{
    char err[256], *doc = NULL;
    bool held = true;
    store *s = open_sub("tune");
    assert_int_equal(store_tune_get(s, &doc, &held, err, sizeof err), 0);
    assert_null(doc);
    assert_false(held);
    assert_int_equal(store_tune_put(s, "{\"id\":\"tune-1\"}", true, err, sizeof err), 0);
    assert_int_equal(store_tune_put(s, "{\"id\":\"tune-2\"}", true, err, sizeof err), 0);
    store_close(s);
    s = open_sub("tune");
    assert_int_equal(store_tune_get(s, &doc, &held, err, sizeof err), 1);
    assert_string_equal(doc, "{\"id\":\"tune-2\"}");
    assert_true(held);
    free(doc);
    assert_int_equal(store_tune_put(s, "{\"id\":\"tune-2\",\"ended\":\"released\"}", false, err, sizeof err), 0);
    assert_int_equal(store_tune_get(s, &doc, &held, err, sizeof err), 1);
    assert_string_equal(doc, "{\"id\":\"tune-2\",\"ended\":\"released\"}");
    assert_false(held);
    free(doc);
    store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_and_filter),
        cmocka_unit_test(pruned_by_count_and_by_bytes),
        cmocka_unit_test(v5_database_is_migrated_keeping_its_rows),
        cmocka_unit_test(tune_lease_row),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
