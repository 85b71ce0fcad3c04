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
#include "core/tier.h"

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

/* sleep footprints (v8): round trip, wake_ms -1 keeps, tiers apart; a v7 database migrates */
static void sleep_footprints_round_trip_and_migrate(void **state)
{
    store *s;
    char err[256];
    char sub[128];
    snprintf(sub, sizeof sub, "%s/zz", dir);
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    sleep_fp g;
    assert_int_equal(store_sleep_get(s, "h1", TIER_L1, &g, err, sizeof err), 0);
    sleep_fp f = {.hash = "h1", .tier = TIER_L1, .sleep_ms = 1200, .wake_ms = -1};
    f.fp.measured_at_ms = 1764000000000;
    f.fp.host_bytes = 9ull << 30;
    f.fp.ngpu = 2;
    f.fp.gpu[0].index = 0;
    f.fp.gpu[0].bytes = 512ull << 20;
    f.fp.gpu[1].index = 3;
    f.fp.gpu[1].bytes = 1;
    assert_int_equal(store_sleep_put(s, &f, err, sizeof err), 0);
    assert_int_equal(store_sleep_get(s, "h1", TIER_L1, &g, err, sizeof err), 1);
    assert_string_equal(g.hash, "h1");
    assert_int_equal(g.fp.host_bytes, 9ull << 30);
    assert_int_equal(g.fp.ngpu, 2);
    assert_int_equal(g.fp.gpu[0].bytes, 512ull << 20);
    assert_int_equal(g.fp.gpu[1].index, 3);
    assert_int_equal(g.fp.gpu[1].bytes, 1);
    assert_int_equal(g.sleep_ms, 1200);
    assert_int_equal(g.wake_ms, -1);
    f.wake_ms = 800; /* a wake measured */
    assert_int_equal(store_sleep_put(s, &f, err, sizeof err), 0);
    f.wake_ms = -1; /* a later sleep keeps it */
    f.sleep_ms = 1000;
    f.fp.ngpu = 0;
    assert_int_equal(store_sleep_put(s, &f, err, sizeof err), 0);
    assert_int_equal(store_sleep_get(s, "h1", TIER_L1, &g, err, sizeof err), 1);
    assert_int_equal(g.wake_ms, 800);
    assert_int_equal(g.sleep_ms, 1000);
    assert_int_equal(g.fp.ngpu, 0);
    assert_int_equal(store_sleep_get(s, "h1", TIER_L1 + 1, &g, err, sizeof err), 0);
    store_close(s);
    /* back to v7: the table goes, a later open adds it again */
    sqlite3 *db;
    char path[256];
    snprintf(path, sizeof path, "%s/gpumod.db", sub);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE sleep_footprints; PRAGMA user_version = 7;", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(store_open(&s, sub, false, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_sleep_get(s, "h1", TIER_L1, &g, err, sizeof err), 0); /* read-only: v7 */
    store_close(s);
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), store_schema_latest);
    assert_int_equal(store_sleep_put(s, &f, err, sizeof err), 0);
    assert_int_equal(store_sleep_get(s, "h1", TIER_L1, &g, err, sizeof err), 1);
    store_close(s);
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
    f.gpu[1].how = FP_GPU_ADMITTED;
    snprintf(f.detail, sizeof f.detail, "gpu 1: per-process figures hidden");
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
    assert_int_equal(g.gpu[0].how, FP_GPU_NVML);
    assert_int_equal(g.gpu[1].how, FP_GPU_ADMITTED);
    assert_string_equal(g.detail, "gpu 1: per-process figures hidden");
    assert_true(footprint_partial(&g));
    g.gpu[1].how = FP_GPU_UNIFIED;
    assert_false(footprint_partial(&g));
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

static void note_id(int64_t id, void *ud)
{
    int64_t *seen = ud;
    seen[seen[0] + 1] = id;
    seen[0]++;
}

/* The kind filter (one kind, several) and the hook that the event
 * streams read on from: called once per recorded event, with its id,
 * never for a refused one. */
static void events_kinds_and_hook(void **state)
{
    char sub[128];
    snprintf(sub, sizeof sub, "%s/evk", dir);
    store *s;
    char err[256];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    int64_t seen[8] = {0}, id;
    store_on_event(s, note_id, seen);
    const char *kinds[] = {"state", "spawn", "exit", "state", "reload"};
    for (size_t i = 0; i < 5; i++) {
        store_event e = {.ts_ms = 10 + (int64_t)i, .service = "x", .kind = kinds[i]};
        assert_int_equal(store_event_add(s, &e, &id, err, sizeof err), 0);
        assert_int_equal(seen[0], (int64_t)i + 1);
        assert_int_equal(seen[i + 1], id);
    }
    store_event bad = {.ts_ms = 1, .kind = "explosion"};
    assert_int_equal(store_event_add(s, &bad, NULL, err, sizeof err), -1);
    assert_int_equal(seen[0], 5);
    assert_int_equal(store_event_kind_index("state"), 0);
    assert_int_equal(store_event_kind_index("nope"), -1);

    store_event_query q = {.kinds = 1u << store_event_kind_index("state")};
    store_event *v;
    size_t n;
    assert_int_equal(store_events_query(s, &q, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].id, seen[1]);
    assert_int_equal(v[1].id, seen[4]);
    store_events_free(v, n);

    q.kinds = 1u << store_event_kind_index("spawn") | 1u << store_event_kind_index("reload");
    q.since_id = seen[2];
    assert_int_equal(store_events_query(s, &q, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].kind, "reload");
    store_events_free(v, n);

    q = (store_event_query){.kinds = 1u << store_event_kind_index("exit"), .limit = 1, .tail = true};
    assert_int_equal(store_events_query(s, &q, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].kind, "exit");
    store_events_free(v, n);

    store_on_event(s, NULL, NULL);
    store_event e = {.ts_ms = 99, .kind = "state"};
    assert_int_equal(store_event_add(s, &e, NULL, err, sizeof err), 0);
    assert_int_equal(seen[0], 5);
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

static void v2_database_is_migrated_keeping_events_and_footprints(void **state)
{
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/v2", dir);
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
                                  "INSERT INTO footprint_gpus VALUES ('h', 0, 77);"
                                  "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL,"
                                  " service TEXT, kind TEXT NOT NULL, from_state TEXT, to_state TEXT, reason TEXT,"
                                  " data TEXT);"
                                  "CREATE INDEX events_service ON events(service, id);"
                                  "INSERT INTO events(ts_ms, service, kind, reason) VALUES (9, 's', 'state', 'kept');"
                                  "PRAGMA user_version = 2;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    store *s;
    char err[256];
    /* read-only (preflight, simulate) before any daemon migrated it: the old rows read */
    assert_int_equal(store_open(&s, sub, false, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), 2);
    footprint f0;
    assert_int_equal(store_footprint_get(s, "h", &f0, err, sizeof err), 1);
    assert_int_equal(f0.gpu[0].bytes, 77);
    assert_int_equal(f0.gpu[0].how, FP_GPU_NVML);
    store_close(s);
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), 8);
    assert_int_equal(store_schema_latest, 8);
    footprint f;
    assert_int_equal(store_footprint_get(s, "h", &f, err, sizeof err), 1);
    assert_int_equal(f.ngpu, 1);
    assert_int_equal(f.gpu[0].bytes, 77);
    /* a row from before v5 reads as NVML-measured, with no detail */
    assert_int_equal(f.gpu[0].how, FP_GPU_NVML);
    assert_string_equal(f.detail, "");
    assert_false(footprint_partial(&f));
    store_event *v;
    size_t n;
    assert_int_equal(store_events(s, 0, NULL, 0, &v, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].reason, "kept");
    store_events_free(v, n);

    /* the journal: nothing committed yet; a switch with phases, newest first */
    char mode[64];
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 0);
    int64_t id1, id2;
    assert_int_equal(store_switch_begin(s, "a", NULL, "cli", 100, &id1, err, sizeof err), 0);
    assert_int_equal(store_phase_begin(s, id1, 1, "plan", NULL, 100, err, sizeof err), 0);
    assert_int_equal(store_phase_end(s, id1, 1, 103, true, "{\"x\":1}", err, sizeof err), 0);
    assert_int_equal(store_phase_begin(s, id1, 2, "start", "q", 103, err, sizeof err), 0);
    assert_int_equal(store_switch_update(s, id1, "running", 0, NULL, "{\"ok\":true}", err, sizeof err), 0);
    assert_int_equal(store_switch_begin(s, "b", "a", "api", 200, &id2, err, sizeof err), 0);
    assert_int_equal(store_switch_update(s, id2, "committed", 250, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(store_committed_set(s, "b", id2, 250, err, sizeof err), 0);
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "b");

    store_switch *w;
    assert_int_equal(store_switches(s, 10, false, &w, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(w[0].id, id2);
    assert_string_equal(w[0].state, "committed");
    assert_string_equal(w[0].from_mode, "a");
    assert_int_equal(w[0].ended_ms, 250);
    assert_int_equal(w[1].nphases, 2);
    assert_string_equal(w[1].phases[0].phase, "plan");
    assert_int_equal(w[1].phases[0].ok, 1);
    assert_int_equal(w[1].phases[0].ended_ms, 103);
    assert_string_equal(w[1].phases[0].detail, "{\"x\":1}");
    assert_string_equal(w[1].phases[1].service, "q");
    assert_int_equal(w[1].phases[1].ok, -1);
    assert_int_equal(w[1].phases[1].ended_ms, 0);
    assert_null(w[1].from_mode);
    assert_string_equal(w[1].plan, "{\"ok\":true}");
    store_switches_free(w, n);

    /* the open one (left running) is what a restarted daemon finds */
    assert_int_equal(store_switches(s, 10, true, &w, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(w[0].id, id1);
    store_switches_free(w, n);
    assert_int_equal(store_switch_update(s, id1, "interrupted", 300, "daemon died", NULL, err, sizeof err), 0);
    assert_int_equal(store_switch_get(s, id1, &w, err, sizeof err), 1);
    assert_string_equal(w[0].state, "interrupted");
    assert_string_equal(w[0].error, "daemon died");
    assert_string_equal(w[0].plan, "{\"ok\":true}"); /* kept */
    store_switches_free(w, 1);
    assert_int_equal(store_switch_get(s, 999, &w, err, sizeof err), 0);
    /* a state outside the list is refused by the schema */
    assert_int_equal(store_switch_update(s, id1, "bogus", 0, NULL, NULL, err, sizeof err), -1);
    store_close(s);
}

/* Schema v3 -> v4: the journal keeps its rows and phases, the phases
 * still go with their switch, and 'refused' is a state. */
static void v3_journal_is_migrated_and_accepts_refused(void **state)
{
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/v3", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/%s", sub, STORE_FILE);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "PRAGMA foreign_keys = ON;"
                     "CREATE TABLE footprints (hash TEXT PRIMARY KEY, service TEXT NOT NULL, "
                     "measured_at_ms INTEGER NOT NULL, host_bytes INTEGER NOT NULL);"
                     "CREATE TABLE footprint_gpus (hash TEXT NOT NULL REFERENCES footprints(hash) ON DELETE CASCADE, "
                     "device INTEGER NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (hash, device));"
                     "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL,"
                     " service TEXT, kind TEXT NOT NULL, from_state TEXT, to_state TEXT, reason TEXT, data TEXT);"
                     "CREATE INDEX events_service ON events(service, id);"
                     "CREATE TABLE switches (id INTEGER PRIMARY KEY AUTOINCREMENT, mode TEXT NOT NULL, from_mode TEXT,"
                     " origin TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('planned','running','committed',"
                     "'rolled_back','failed','interrupted')), started_ms INTEGER NOT NULL, ended_ms INTEGER,"
                     " error TEXT, plan TEXT);"
                     "CREATE TABLE switch_phases (switch_id INTEGER NOT NULL REFERENCES switches(id) ON DELETE CASCADE,"
                     " seq INTEGER NOT NULL, phase TEXT NOT NULL, service TEXT, started_ms INTEGER NOT NULL,"
                     " ended_ms INTEGER, ok INTEGER, detail TEXT, PRIMARY KEY (switch_id, seq));"
                     "CREATE TABLE committed_mode (k INTEGER PRIMARY KEY CHECK (k = 1), mode TEXT NOT NULL,"
                     " switch_id INTEGER, at_ms INTEGER NOT NULL);"
                     "INSERT INTO switches VALUES (7, 'A', NULL, 'cli', 'committed', 10, 20, NULL, '{}');"
                     "INSERT INTO switches VALUES (8, 'B', 'A', 'cli', 'failed', 30, 40, 'did not fit', NULL);"
                     "INSERT INTO switch_phases VALUES (7, 1, 'plan', NULL, 10, 11, 1, '{}');"
                     "INSERT INTO switch_phases VALUES (8, 1, 'plan', NULL, 30, 31, 0, NULL);"
                     "INSERT INTO committed_mode VALUES (1, 'A', 7, 20);"
                     "PRAGMA user_version = 3;",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    store *s;
    char err[256];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    assert_int_equal(store_schema_version(s), store_schema_latest);
    store_switch *w;
    size_t n;
    assert_int_equal(store_switches(s, 10, false, &w, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(w[0].id, 8);
    assert_string_equal(w[0].error, "did not fit");
    assert_int_equal(w[1].nphases, 1);
    assert_string_equal(w[1].phases[0].phase, "plan");
    store_switches_free(w, n);
    char mode[64];
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "A");
    /* new ids go past the old ones; 'refused' is accepted now */
    int64_t id;
    assert_int_equal(store_switch_begin(s, "H", "A", "cli", 50, &id, err, sizeof err), 0);
    assert_true(id > 8);
    assert_int_equal(store_switch_update(s, id, "refused", 51, "does not fit", NULL, err, sizeof err), 0);
    assert_int_equal(store_switch_get(s, id, &w, err, sizeof err), 1);
    assert_string_equal(w[0].state, "refused");
    store_switches_free(w, 1);
    /* the phases' foreign key points at the new table: pruning a switch deletes its phases */
    int64_t ds = 0;
    store_retention r = {.switches_keep = 1, .now_ms = 100};
    assert_true(store_prune(s, &r, NULL, &ds, err, sizeof err) >= 0);
    assert_int_equal(ds, 2);
    store_close(s);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM switch_phases", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v3'", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A switch's end and the committed mode are one transaction: both or
 * neither (review #4). */
static void switch_finish_is_atomic(void **state)
{
    char sub[128];
    snprintf(sub, sizeof sub, "%s/fin", dir);
    store *s;
    char err[256], mode[64];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    int64_t a, b;
    assert_int_equal(store_switch_begin(s, "A", NULL, "cli", 1, &a, err, sizeof err), 0);
    assert_int_equal(store_switch_finish(s, a, "committed", 5, NULL, "A", err, sizeof err), 0);
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "A");
    store_switch *w;
    assert_int_equal(store_switch_get(s, a, &w, err, sizeof err), 1);
    assert_string_equal(w[0].state, "committed");
    assert_int_equal(w[0].ended_ms, 5);
    store_switches_free(w, 1);
    /* a switch that is not open (ended already, or unknown): nothing is written, not the mode either */
    assert_int_equal(store_switch_finish(s, a, "committed", 6, NULL, "B", err, sizeof err), -1);
    assert_non_null(strstr(err, "no such switch is open"));
    assert_int_equal(store_switch_finish(s, 999, "committed", 6, NULL, "B", err, sizeof err), -1);
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "A");
    /* a state the schema refuses rolls the mode back too */
    assert_int_equal(store_switch_begin(s, "B", "A", "cli", 7, &b, err, sizeof err), 0);
    assert_int_equal(store_switch_finish(s, b, "bogus", 8, NULL, "B", err, sizeof err), -1);
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "A");
    /* failed, settled in none, with its error */
    assert_int_equal(store_switch_finish(s, b, "failed", 9, "rollback failed", "none", err, sizeof err), 0);
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "none");
    assert_int_equal(store_switch_get(s, b, &w, err, sizeof err), 1);
    assert_string_equal(w[0].state, "failed");
    assert_string_equal(w[0].error, "rollback failed");
    store_switches_free(w, 1);
    /* without a mode: only the state */
    int64_t c;
    assert_int_equal(store_switch_begin(s, "C", "none", "cli", 10, &c, err, sizeof err), 0);
    assert_int_equal(store_switch_finish(s, c, "rolled_back", 11, "x", NULL, err, sizeof err), 0);
    assert_int_equal(store_committed_get(s, mode, sizeof mode, err, sizeof err), 1);
    assert_string_equal(mode, "none");
    store_close(s);
}

static size_t count_events(store *s, int64_t *first_ts)
{
    store_event *v;
    size_t n;
    char err[256];
    assert_int_equal(store_events(s, 0, NULL, 100000, &v, &n, err, sizeof err), 0);
    if (first_ts) *first_ts = n ? v[0].ts_ms : -1;
    store_events_free(v, n);
    return n;
}

static int64_t phases_of(const char *path, int64_t switch_id)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM switch_phases WHERE switch_id = ?", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, switch_id);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void prune_events_and_switches(void **state)
{
    char sub[128], path[192];
    snprintf(sub, sizeof sub, "%s/prune", dir);
    snprintf(path, sizeof path, "%s/%s", sub, STORE_FILE);
    store *s;
    char err[256];
    assert_int_equal(store_open(&s, sub, true, 100, NULL, err, sizeof err), 0);
    int64_t ne = -1, nsw = -1;

    /* an empty store: nothing to do */
    store_retention r = {.events_keep = 10, .events_max_age_ms = 1000, .switches_keep = 3, .now_ms = 5000};
    assert_int_equal(store_prune(s, &r, &ne, &nsw, err, sizeof err), 0);
    assert_int_equal(ne, 0);
    assert_int_equal(nsw, 0);

    /* 50 events, one a second from t = 1 s */
    for (int i = 0; i < 50; i++) {
        store_event e = {.ts_ms = 1000 + i * 1000, .service = "a", .kind = "state", .reason = "x"};
        assert_int_equal(store_event_add(s, &e, NULL, err, sizeof err), 0);
    }
    int64_t first;
    /* no limits: nothing goes */
    r = (store_retention){.now_ms = 1000000};
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 0);
    assert_int_equal(ne, 0);
    assert_int_equal(count_events(s, NULL), 50);

    /* by count: the 30 newest stay */
    r = (store_retention){.events_keep = 30, .now_ms = 1000000};
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 0);
    assert_int_equal(ne, 20);
    assert_int_equal(count_events(s, &first), 30);
    assert_int_equal(first, 21000);
    /* again: nothing more */
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 0);
    assert_int_equal(ne, 0);

    /* by age: older than 20 s at t = 60 s (before 40 s) go, a row limit that
     * allows more does not keep them */
    r = (store_retention){.events_keep = 1000, .events_max_age_ms = 20000, .now_ms = 60000};
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 0);
    assert_int_equal(ne, 19);
    assert_int_equal(count_events(s, &first), 11);
    assert_int_equal(first, 40000);

    /* bounded: a batch of 5 deletes 5 and says "more", then the rest */
    r = (store_retention){.events_keep = 3, .now_ms = 60000, .batch = 5};
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 1);
    assert_int_equal(ne, 5);
    assert_int_equal(count_events(s, NULL), 6);
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 0);
    assert_int_equal(ne, 3);
    assert_int_equal(count_events(s, &first), 3);
    assert_int_equal(first, 48000);

    /* every row too old: all go, and ids go on */
    r = (store_retention){.events_keep = 100, .events_max_age_ms = 1000, .now_ms = 1000000};
    assert_int_equal(store_prune(s, &r, &ne, NULL, err, sizeof err), 0);
    assert_int_equal(ne, 3);
    assert_int_equal(count_events(s, NULL), 0);
    store_event e = {.ts_ms = 2000000, .kind = "reload", .reason = "SIGHUP"};
    int64_t id;
    assert_int_equal(store_event_add(s, &e, &id, err, sizeof err), 0);
    assert_true(id > 50);
    assert_int_equal(count_events(s, NULL), 1);

    /* the journal: 8 switches with a phase each, #2 left running by a crash */
    int64_t ids[8];
    for (int i = 0; i < 8; i++) {
        assert_int_equal(store_switch_begin(s, "A", NULL, "cli", 1000 + i, &ids[i], err, sizeof err), 0);
        assert_int_equal(store_phase_begin(s, ids[i], 1, "plan", NULL, 1000 + i, err, sizeof err), 0);
        if (i != 1)
            assert_int_equal(store_switch_update(s, ids[i], "committed", 2000 + i, NULL, NULL, err, sizeof err), 0);
        else
            assert_int_equal(store_switch_update(s, ids[i], "running", 0, NULL, NULL, err, sizeof err), 0);
    }
    r = (store_retention){.switches_keep = 3, .now_ms = 3000000};
    assert_int_equal(store_prune(s, &r, &ne, &nsw, err, sizeof err), 0);
    assert_int_equal(ne, 0);
    assert_int_equal(nsw, 4); /* #1, #3, #4, #5: the 3 newest and the open one stay */
    store_switch *w;
    size_t n;
    assert_int_equal(store_switches(s, 100, false, &w, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(w[0].id, ids[7]);
    assert_int_equal(w[2].id, ids[5]);
    assert_int_equal(w[3].id, ids[1]);
    assert_string_equal(w[3].state, "running");
    assert_int_equal(w[3].nphases, 1);
    store_switches_free(w, n);
    assert_int_equal(phases_of(path, ids[0]), 0); /* the phases went with their switch */
    assert_int_equal(phases_of(path, ids[4]), 0);
    assert_int_equal(phases_of(path, ids[5]), 1);
    /* switches_keep 0: the journal is left alone */
    r = (store_retention){.switches_keep = 0, .events_keep = 1, .now_ms = 3000000};
    assert_int_equal(store_prune(s, &r, &ne, &nsw, err, sizeof err), 0);
    assert_int_equal(nsw, 0);
    assert_int_equal(store_switches(s, 100, false, &w, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    store_switches_free(w, n);
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
        cmocka_unit_test(events_kinds_and_hook),
        cmocka_unit_test(v1_database_is_migrated),
        cmocka_unit_test(sleep_footprints_round_trip_and_migrate),
        cmocka_unit_test(v2_database_is_migrated_keeping_events_and_footprints),
        cmocka_unit_test(v3_journal_is_migrated_and_accepts_refused),
        cmocka_unit_test(switch_finish_is_atomic),
        cmocka_unit_test(prune_events_and_switches),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
