/* test_store.c - the state database: migrations, versions, footprints. */
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
    snprintf(dir, sizeof dir, "/tmp/gpumod-store-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    rm_rf(dir);
    return 0;
}

static void missing_db_read_only(void **state)
{
    store *s;
    bool missing;
    char err[256];
    assert_int_equal(store_open(&s, dir, false, 100, &missing, err, sizeof err), -1);
    assert_true(missing);
    assert_non_null(strstr(err, "no state database"));
    assert_int_not_equal(access(dir, F_OK), -1);
}

static void create_migrates_and_round_trips(void **state)
{
    store *s;
    char err[256];
    char sub[128];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), store_schema_latest);
    footprint f = {.hash = "abc", .service = "qwen", .measured_at_ms = 1764000000000, .host_bytes = 123, .ngpu = 2};
    f.gpu[0].index = 0;
    f.gpu[0].bytes = 20ull << 30;
    f.gpu[1].index = 1;
    f.gpu[1].bytes = 4ull << 30;
    assert_int_equal(store_footprint_put(s, &f, err, sizeof err), 0);
    f.gpu[1].bytes = 5ull << 30; /* replace */
    assert_int_equal(store_footprint_put(s, &f, err, sizeof err), 0);
    store_close(s);

    assert_int_equal(store_open(&s, sub, false, 100, NULL, err, sizeof err), 0);
    footprint g;
    assert_int_equal(store_footprint_get(s, "abc", &g, err, sizeof err), 1);
    assert_string_equal(g.service, "qwen");
    assert_int_equal(g.host_bytes, 123);
    assert_int_equal(g.ngpu, 2);
    assert_int_equal(g.gpu[1].bytes, 5ull << 30);
    assert_int_equal(store_footprint_get(s, "nope", &g, err, sizeof err), 0);
    /* read-only: writes fail with a clear error */
    assert_int_equal(store_footprint_put(s, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, "state database"));
    store_close(s);
}

static void newer_schema_is_refused(void **state)
{
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/new", dir);
    store *s;
    char err[256];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    store_close(s);
    snprintf(path, sizeof path, "%s/%s", sub, STORE_FILE);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "schema 99 is newer than this gpumod knows"));
    assert_int_equal(store_open(&s, sub, false, 100, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "from a newer gpumod"));
}

static void unwritable_dir(void **state)
{
    store *s;
    char err[256];
    if (geteuid() == 0) { /* root writes anywhere: use a path under a file */
        char f[128];
        snprintf(f, sizeof f, "%s/file", dir);
        FILE *fp = fopen(f, "w");
        fclose(fp);
        char sub[160];
        snprintf(sub, sizeof sub, "%s/x", f);
        assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), -1);
        assert_non_null(strstr(err, "cannot create"));
        return;
    }
    assert_int_equal(store_open(&s, "/proc/gpumod-nope", true, 100, NULL, err, sizeof err), -1);
}

static void events_round_trip_and_filter(void **state)
{
    char sub[128];
    snprintf(sub, sizeof sub, "%s/ev", dir);
    store *s;
    char err[256];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    int64_t id1, id2, id3;
    store_event a = {.ts_ms = 1000, .service = "qwen", .kind = "state", .from = "down", .to = "starting",
                     .reason = "start requested by the CLI"};
    store_event b = {.ts_ms = 1001, .service = NULL, .kind = "reload", .reason = "SIGHUP", .data = "{\"errors\":0}"};
    store_event c = {.ts_ms = 1002, .service = "qwen", .kind = "gate", .reason = "MemAvailable 1 MiB < required 2 MiB"};
    assert_int_equal(store_event_add(s, &a, &id1, err, sizeof err), 0);
    assert_int_equal(store_event_add(s, &b, &id2, err, sizeof err), 0);
    assert_int_equal(store_event_add(s, &c, &id3, err, sizeof err), 0);
    assert_true(id1 < id2 && id2 < id3);

    store_event *v;
    size_t n;
    assert_int_equal(store_events(s, 0, NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].to, "starting");
    assert_null(v[1].service);
    assert_string_equal(v[1].data, "{\"errors\":0}");
    store_events_free(v, n);

    assert_int_equal(store_events(s, id1, "qwen", 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].kind, "gate");
    store_events_free(v, n);

    assert_int_equal(store_events(s, 0, NULL, 2, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    store_events_free(v, n);

    store_event bad = {.ts_ms = 1, .kind = "explosion"};
    assert_int_equal(store_event_add(s, &bad, NULL, err, sizeof err), -1);
    assert_string_equal(err, "event kind 'explosion' is not one of the documented kinds");
    store_close(s);
}

static void v1_database_is_migrated(void **state)
{
    /* a database written by the previous schema gains the events table */
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/old", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/%s", sub, STORE_FILE);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE footprints (hash TEXT PRIMARY KEY, service TEXT NOT NULL, "
                                  "measured_at_ms INTEGER NOT NULL, host_bytes INTEGER NOT NULL);"
                                  "CREATE TABLE footprint_gpus (hash TEXT NOT NULL, device INTEGER NOT NULL, "
                                  "bytes INTEGER NOT NULL, PRIMARY KEY (hash, device));"
                                  "INSERT INTO footprints VALUES ('h', 's', 1, 2);"
                                  "PRAGMA user_version = 1;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    store *s;
    char err[256];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), store_schema_latest);
    footprint f;
    assert_int_equal(store_footprint_get(s, "h", &f, err, sizeof err), 1);
    store_event e = {.ts_ms = 5, .service = "s", .kind = "footprint"};
    assert_int_equal(store_event_add(s, &e, NULL, err, sizeof err), 0);
    store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_db_read_only),
        cmocka_unit_test(create_migrates_and_round_trips),
        cmocka_unit_test(newer_schema_is_refused),
        cmocka_unit_test(unwritable_dir),
        cmocka_unit_test(events_round_trip_and_filter),
        cmocka_unit_test(v1_database_is_migrated),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
