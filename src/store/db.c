/* db.c - SQLite state: migrations and queries.
 *
 * Migrations are an ordered list of SQL scripts; PRAGMA user_version says
 * how many ran.  A database written by a newer gpumod (user_version above
 * what this build knows) is refused rather than guessed at.  Readers that
 * only look (preflight) open read-only and never create the file, so a
 * host that never ran the daemon pays nothing for SQLite.
 *
 * Durability: WAL with synchronous = NORMAL, so an event, a footprint or
 * a journal phase costs no fsync; each commit is still safe against the
 * daemon's own crash (kill -9), and only an OS crash or power loss can
 * lose the last few of them.  What a restart must find after any crash is
 * written with a full sync (durable_step): a switch's row when it begins
 * and when it ends, and the committed mode.  A full sync of the WAL also
 * makes every commit before it durable.
 *
 * Bench results (v6) are bounded on insert, in the insert's transaction:
 * the newest STORE_RESULTS_KEEP rows and at most STORE_RESULTS_MAX_BYTES of
 * documents are kept (the row just stored always), so the table needs no
 * setting and no periodic prune.
 *
 * The tune lease (v7) is one row: the lease a tune run holds, or the last
 * one that ended, with the run's state (at most 1 MiB: the API's body
 * limit), so `gpumod tune --resume` finds it after a daemon restart. */
#include "store/db.h"
#include "util/buf.h"

#include <errno.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct store {
    sqlite3 *db;
    store_event_cb on_event; /* the daemon's event streams (api_events.c) */
    void *on_event_ud;
};

static const char *const migrations[] = {
    /* 1: measured footprints, keyed by config hash */
    "CREATE TABLE footprints ("
    "  hash TEXT PRIMARY KEY,"
    "  service TEXT NOT NULL,"
    "  measured_at_ms INTEGER NOT NULL,"
    "  host_bytes INTEGER NOT NULL"
    ");"
    "CREATE TABLE footprint_gpus ("
    "  hash TEXT NOT NULL REFERENCES footprints(hash) ON DELETE CASCADE,"
    "  device INTEGER NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  PRIMARY KEY (hash, device)"
    ");",
    /* 2: events (docs/interfaces.md "Events"): every transition with its reason */
    "CREATE TABLE events ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  ts_ms INTEGER NOT NULL,"
    "  service TEXT,"
    "  kind TEXT NOT NULL,"
    "  from_state TEXT,"
    "  to_state TEXT,"
    "  reason TEXT,"
    "  data TEXT"
    ");"
    "CREATE INDEX events_service ON events(service, id);",
    /* 3: the mode-switch journal and the committed mode (docs/modes.md) */
    "CREATE TABLE switches ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  mode TEXT NOT NULL,"
    "  from_mode TEXT,"
    "  origin TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('planned','running','committed','rolled_back','failed','interrupted')),"
    "  started_ms INTEGER NOT NULL,"
    "  ended_ms INTEGER,"
    "  error TEXT,"
    "  plan TEXT"
    ");"
    "CREATE TABLE switch_phases ("
    "  switch_id INTEGER NOT NULL REFERENCES switches(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  phase TEXT NOT NULL,"
    "  service TEXT,"
    "  started_ms INTEGER NOT NULL,"
    "  ended_ms INTEGER,"
    "  ok INTEGER,"
    "  detail TEXT,"
    "  PRIMARY KEY (switch_id, seq)"
    ");"
    "CREATE TABLE committed_mode ("
    "  k INTEGER PRIMARY KEY CHECK (k = 1),"
    "  mode TEXT NOT NULL,"
    "  switch_id INTEGER,"
    "  at_ms INTEGER NOT NULL"
    ");",
    /* 4: state 'refused' (a plan that does not fit: nothing was touched).
     * SQLite cannot change a CHECK in place: both journal tables are
     * rebuilt (the phases' foreign key follows the renamed parent, so the
     * old pair is renamed first, copied, then dropped child first). */
    "ALTER TABLE switch_phases RENAME TO switch_phases_v3;"
    "ALTER TABLE switches RENAME TO switches_v3;"
    "CREATE TABLE switches ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  mode TEXT NOT NULL,"
    "  from_mode TEXT,"
    "  origin TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('planned','running','committed','rolled_back','failed','interrupted',"
    "'refused')),"
    "  started_ms INTEGER NOT NULL,"
    "  ended_ms INTEGER,"
    "  error TEXT,"
    "  plan TEXT"
    ");"
    "CREATE TABLE switch_phases ("
    "  switch_id INTEGER NOT NULL REFERENCES switches(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  phase TEXT NOT NULL,"
    "  service TEXT,"
    "  started_ms INTEGER NOT NULL,"
    "  ended_ms INTEGER,"
    "  ok INTEGER,"
    "  detail TEXT,"
    "  PRIMARY KEY (switch_id, seq)"
    ");"
    "INSERT INTO switches SELECT id, mode, from_mode, origin, state, started_ms, ended_ms, error, plan FROM switches_v3;"
    "INSERT INTO switch_phases SELECT switch_id, seq, phase, service, started_ms, ended_ms, ok, detail "
    "FROM switch_phases_v3;"
    "DROP TABLE switch_phases_v3;"
    "DROP TABLE switches_v3;",
    /* 5: how a footprint's figures were obtained (a unified device measured
     * through MemAvailable, a GPU whose per-process figures are hidden
     * standing in with its admitted bytes).  Older rows keep NULL: NVML. */
    "ALTER TABLE footprints ADD COLUMN detail TEXT;"
    "ALTER TABLE footprint_gpus ADD COLUMN how TEXT;",
    /* 6: bench results (docs/api.md "Results"): the document without its
     * raw requests, and what a list shows without reading it */
    "CREATE TABLE bench_results ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  ts_ms INTEGER NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  target TEXT NOT NULL,"
    "  service TEXT,"
    "  config_hash TEXT,"
    "  summary TEXT NOT NULL,"
    "  doc TEXT NOT NULL,"
    "  bytes INTEGER NOT NULL"
    ");"
    "CREATE INDEX bench_results_service ON bench_results(service, id);",
    /* 7: the tune lease (docs/api.md "Tune lease"): one row, the lease
     * held or the last one that ended, so a tune run resumes after a
     * daemon restart */
    "CREATE TABLE tune_lease ("
    "  k INTEGER PRIMARY KEY CHECK (k = 1),"
    "  doc TEXT NOT NULL,"
    "  held INTEGER NOT NULL"
    ");",
    /* 8: what a sleeping service holds, and its sleep and wake times, per
     * config hash and tier (docs/interfaces.md "Sleep footprints"); gpu is
     * "INDEX:BYTES" per device, comma-separated */
    "CREATE TABLE IF NOT EXISTS sleep_footprints ("
    "  hash TEXT NOT NULL,"
    "  tier INTEGER NOT NULL,"
    "  measured_at_ms INTEGER NOT NULL,"
    "  host_bytes INTEGER NOT NULL,"
    "  gpu TEXT NOT NULL,"
    "  sleep_ms INTEGER NOT NULL,"
    "  wake_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (hash, tier)"
    ");",
};

const char *const fp_gpu_how_names[] = {"nvml", "unified", "admitted", NULL};

bool footprint_partial(const footprint *f)
{
    for (size_t i = 0; i < f->ngpu; i++)
        if (f->gpu[i].how == FP_GPU_ADMITTED) return true;
    return false;
}

static fp_gpu_how how_by_name(const char *n)
{
    for (int i = 0; n && fp_gpu_how_names[i]; i++)
        if (!strcmp(n, fp_gpu_how_names[i])) return (fp_gpu_how)i;
    return FP_GPU_NVML;
}

const char *const store_event_kinds[] = {"state",  "spawn",   "exit",        "restart", "gate",
                                         "watchdog", "footprint", "switch.phase", "reload", "router.activation", "canary",
                                         "tune", "engine_bench", "sleep", "wake", "slots", NULL};

static bool kind_ok(const char *k)
{
    for (size_t i = 0; k && store_event_kinds[i]; i++)
        if (!strcmp(k, store_event_kinds[i])) return true;
    return false;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

int store_event_add(store *s, const store_event *e, int64_t *id, char *err, size_t errlen)
{
    if (!kind_ok(e->kind)) {
        snprintf(err, errlen, "event kind '%s' is not one of the documented kinds", e->kind ? e->kind : "(null)");
        return -1;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO events(ts_ms, service, kind, from_state, to_state, reason, data) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, e->ts_ms);
    bind_text_or_null(st, 2, e->service);
    sqlite3_bind_text(st, 3, e->kind, -1, SQLITE_STATIC);
    bind_text_or_null(st, 4, e->from);
    bind_text_or_null(st, 5, e->to);
    bind_text_or_null(st, 6, e->reason);
    bind_text_or_null(st, 7, e->data);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: cannot record a '%s' event: %s", e->kind, sqlite3_errmsg(s->db));
        return -1;
    }
    int64_t new_id = sqlite3_last_insert_rowid(s->db);
    if (id) *id = new_id;
    if (s->on_event) s->on_event(new_id, s->on_event_ud);
    return 0;
}

void store_on_event(store *s, store_event_cb cb, void *ud)
{
    s->on_event = cb;
    s->on_event_ud = ud;
}

int store_event_kind_index(const char *k)
{
    for (int i = 0; k && store_event_kinds[i]; i++)
        if (!strcmp(k, store_event_kinds[i])) return i;
    return -1;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? xstrdup((const char *)t) : NULL;
}

int store_events(store *s, int64_t since_id, const char *service, size_t limit, store_event **out, size_t *n,
                 char *err, size_t errlen)
{
    store_event_query q = {.since_id = since_id, .service = service, .limit = limit};
    return store_events_query(s, &q, out, n, err, errlen);
}

int store_events_query(store *s, const store_event_query *q, store_event **out, size_t *n, char *err,
                       size_t errlen)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    /* the tail is the last `limit` rows in descending order, put back in
     * ascending order by the outer query */
    char sql[1024], kinds[256] = "";
    if (q->kinds) {
        size_t kl = 0;
        kl += (size_t)snprintf(kinds, sizeof kinds, " AND kind IN (");
        for (int k = 0; store_event_kinds[k]; k++)
            if (q->kinds & (1u << k)) kl += (size_t)snprintf(kinds + kl, sizeof kinds - kl, "?,");
        kinds[kl - 1] = ')';
    }
    snprintf(sql, sizeof sql,
             "%sSELECT id, ts_ms, service, kind, from_state, to_state, reason, data FROM events "
             "WHERE id > ? AND ts_ms >= ?%s%s ORDER BY id%s LIMIT ?%s",
             q->tail ? "SELECT * FROM (" : "", q->service ? " AND service = ?" : "", kinds, q->tail ? " DESC" : "",
             q->tail ? ") ORDER BY id" : "");
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    int i = 1;
    sqlite3_bind_int64(st, i++, q->since_id);
    sqlite3_bind_int64(st, i++, q->since_ts_ms);
    if (q->service) sqlite3_bind_text(st, i++, q->service, -1, SQLITE_STATIC);
    for (int k = 0; q->kinds && store_event_kinds[k]; k++)
        if (q->kinds & (1u << k)) sqlite3_bind_text(st, i++, store_event_kinds[k], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, i, (sqlite3_int64)(q->limit ? q->limit : 1000));
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        store_event *e = &(*out)[(*n)++];
        e->id = sqlite3_column_int64(st, 0);
        e->ts_ms = sqlite3_column_int64(st, 1);
        e->service = col_dup(st, 2);
        e->kind = col_dup(st, 3);
        e->from = col_dup(st, 4);
        e->to = col_dup(st, 5);
        e->reason = col_dup(st, 6);
        e->data = col_dup(st, 7);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        store_events_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

void store_events_free(store_event *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)v[i].service);
        free((char *)v[i].kind);
        free((char *)v[i].from);
        free((char *)v[i].to);
        free((char *)v[i].reason);
        free((char *)v[i].data);
    }
    free(v);
}
const int store_schema_latest = (int)(sizeof migrations / sizeof *migrations);

static int mkdirs(const char *path, char *err, size_t errlen)
{
    char *p = xstrdup(path);
    for (char *q = p + 1; *q; q++) {
        if (*q != '/') continue;
        *q = '\0';
        if (mkdir(p, 0700) && errno != EEXIST) {
            snprintf(err, errlen, "cannot create '%s': %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *q = '/';
    }
    int rc = 0;
    if (mkdir(p, 0700) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create '%s': %s", p, strerror(errno));
        rc = -1;
    }
    free(p);
    return rc;
}

static int exec(store *s, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int store_schema_version(store *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

static int migrate(store *s, char *err, size_t errlen)
{
    int v = store_schema_version(s);
    if (v < 0) {
        snprintf(err, errlen, "state database: cannot read its schema version: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    if (v > store_schema_latest) {
        snprintf(err, errlen, "state database schema %d is newer than this gpumod knows (%d): upgrade gpumod", v,
                 store_schema_latest);
        return -1;
    }
    for (int i = v; i < store_schema_latest; i++) {
        char sql[64];
        if (exec(s, "BEGIN IMMEDIATE", err, errlen)) return -1;
        if (exec(s, migrations[i], err, errlen)) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", i + 1);
        if (exec(s, sql, err, errlen) || exec(s, "COMMIT", err, errlen)) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    return 0;
}

int store_open(store **out, const char *state_dir, bool create, int busy_ms, bool *missing, char *err,
               size_t errlen)
{
    *out = NULL;
    if (missing) *missing = false;
    char *path = xasprintf("%s/%s", state_dir, STORE_FILE);
    struct stat st;
    if (!create && stat(path, &st) != 0) {
        if (missing) *missing = true;
        snprintf(err, errlen, "no state database at '%s'", path);
        free(path);
        return -1;
    }
    if (create && mkdirs(state_dir, err, errlen)) {
        free(path);
        return -1;
    }
    store *s = xcalloc(1, sizeof *s);
    int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
    if (sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open '%s': %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        store_close(s);
        free(path);
        return -1;
    }
    sqlite3_busy_timeout(s->db, busy_ms > 0 ? busy_ms : 2000);
    int rc = 0;
    if (create) {
        rc = exec(s, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;", err,
                  errlen);
        if (!rc) rc = migrate(s, err, errlen);
    } else {
        int v = store_schema_version(s);
        if (v < 0 || v > store_schema_latest) {
            snprintf(err, errlen, v < 0 ? "state database '%s' is unreadable" :
                                          "state database '%s' is from a newer gpumod",
                     path);
            rc = -1;
        }
    }
    free(path);
    if (rc) {
        store_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

void store_close(store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

int store_footprint_put(store *s, const footprint *f, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (exec(s, "BEGIN IMMEDIATE", err, errlen)) return -1;
    int ok = sqlite3_prepare_v2(s->db,
                                "INSERT OR REPLACE INTO footprints(hash, service, measured_at_ms, host_bytes, detail) "
                                "VALUES (?, ?, ?, ?, ?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, f->hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, f->service, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, f->measured_at_ms);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)f->host_bytes);
        bind_text_or_null(st, 5, f->detail[0] ? f->detail : NULL);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (ok) {
        ok = sqlite3_prepare_v2(s->db, "DELETE FROM footprint_gpus WHERE hash = ?", -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(st, 1, f->hash, -1, SQLITE_STATIC);
            ok = sqlite3_step(st) == SQLITE_DONE;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    for (size_t i = 0; ok && i < f->ngpu; i++) {
        ok = sqlite3_prepare_v2(s->db, "INSERT INTO footprint_gpus(hash, device, bytes, how) VALUES (?, ?, ?, ?)", -1,
                                &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(st, 1, f->hash, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 2, f->gpu[i].index);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)f->gpu[i].bytes);
            unsigned how = (unsigned)f->gpu[i].how;
            sqlite3_bind_text(st, 4, fp_gpu_how_names[how <= FP_GPU_ADMITTED ? how : 0], -1, SQLITE_STATIC);
            ok = sqlite3_step(st) == SQLITE_DONE;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (!ok) {
        snprintf(err, errlen, "state database: cannot store the footprint of '%s': %s", f->service,
                 sqlite3_errmsg(s->db));
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return exec(s, "COMMIT", err, errlen);
}

int store_footprint_get(store *s, const char *hash, footprint *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    /* a read-only open does not migrate: a database from before v5 has no detail or how columns */
    bool v5 = store_schema_version(s) >= 5;
    if (sqlite3_prepare_v2(s->db,
                           v5 ? "SELECT service, measured_at_ms, host_bytes, detail FROM footprints WHERE hash = ?"
                              : "SELECT service, measured_at_ms, host_bytes, NULL FROM footprints WHERE hash = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_finalize(st);
        return 0;
    }
    if (rc != SQLITE_ROW) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return -1;
    }
    snprintf(out->hash, sizeof out->hash, "%s", hash);
    snprintf(out->service, sizeof out->service, "%s", (const char *)sqlite3_column_text(st, 0));
    out->measured_at_ms = sqlite3_column_int64(st, 1);
    out->host_bytes = (uint64_t)sqlite3_column_int64(st, 2);
    const unsigned char *det = sqlite3_column_text(st, 3);
    if (det) snprintf(out->detail, sizeof out->detail, "%s", (const char *)det);
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(s->db,
                           v5 ? "SELECT device, bytes, how FROM footprint_gpus WHERE hash = ? ORDER BY device"
                              : "SELECT device, bytes, NULL FROM footprint_gpus WHERE hash = ? ORDER BY device",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && out->ngpu < HOST_MAX_GPUS) {
        out->gpu[out->ngpu].index = sqlite3_column_int(st, 0);
        out->gpu[out->ngpu].bytes = (uint64_t)sqlite3_column_int64(st, 1);
        out->gpu[out->ngpu].how = how_by_name((const char *)sqlite3_column_text(st, 2));
        out->ngpu++;
    }
    sqlite3_finalize(st);
    return 1;
}

/* ---- the switch journal ------------------------------------------------ */

static int prep(store *s, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK) return 0;
    snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
    return -1;
}

static int step_done(store *s, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE) return 0;
    snprintf(err, errlen, "state database: cannot %s: %s", what, sqlite3_errmsg(s->db));
    return -1;
}

/* step_done, committed with synchronous = FULL (the WAL fsynced before it
 * returns), then back to NORMAL. */
static int durable_step(store *s, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
    sqlite3_exec(s->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    int rc = step_done(s, st, what, err, errlen);
    sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    return rc;
}

int store_switch_begin(store *s, const char *mode, const char *from_mode, const char *origin, int64_t started_ms,
                       int64_t *id, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s, "INSERT INTO switches(mode, from_mode, origin, state, started_ms) VALUES (?, ?, ?, 'planned', ?)",
             &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 1, mode, -1, SQLITE_STATIC);
    bind_text_or_null(st, 2, from_mode);
    sqlite3_bind_text(st, 3, origin, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, started_ms);
    if (durable_step(s, st, "record a switch", err, errlen)) return -1;
    if (id) *id = sqlite3_last_insert_rowid(s->db);
    return 0;
}

int store_switch_update(store *s, int64_t id, const char *state, int64_t ended_ms, const char *error,
                        const char *plan_json, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s,
             "UPDATE switches SET state = ?, ended_ms = COALESCE(?, ended_ms), error = COALESCE(?, error), "
             "plan = COALESCE(?, plan) WHERE id = ?",
             &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
    if (ended_ms > 0)
        sqlite3_bind_int64(st, 2, ended_ms);
    else
        sqlite3_bind_null(st, 2);
    bind_text_or_null(st, 3, error);
    bind_text_or_null(st, 4, plan_json);
    sqlite3_bind_int64(st, 5, id);
    /* the end of a switch is durable; a state on the way is not */
    return ended_ms > 0 ? durable_step(s, st, "update a switch", err, errlen)
                        : step_done(s, st, "update a switch", err, errlen);
}

int store_phase_begin(store *s, int64_t id, int seq, const char *phase, const char *service, int64_t started_ms,
                      char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s, "INSERT INTO switch_phases(switch_id, seq, phase, service, started_ms) VALUES (?, ?, ?, ?, ?)", &st,
             err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, seq);
    sqlite3_bind_text(st, 3, phase, -1, SQLITE_STATIC);
    bind_text_or_null(st, 4, service);
    sqlite3_bind_int64(st, 5, started_ms);
    return step_done(s, st, "record a switch phase", err, errlen);
}

int store_phase_end(store *s, int64_t id, int seq, int64_t ended_ms, bool ok, const char *detail_json, char *err,
                    size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s, "UPDATE switch_phases SET ended_ms = ?, ok = ?, detail = ? WHERE switch_id = ? AND seq = ?", &st,
             err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, ended_ms);
    sqlite3_bind_int(st, 2, ok ? 1 : 0);
    bind_text_or_null(st, 3, detail_json);
    sqlite3_bind_int64(st, 4, id);
    sqlite3_bind_int(st, 5, seq);
    return step_done(s, st, "end a switch phase", err, errlen);
}

static int load_phases(store *s, store_switch *w, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s,
             "SELECT seq, phase, service, started_ms, ended_ms, ok, detail FROM switch_phases WHERE switch_id = ? "
             "ORDER BY seq",
             &st, err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, w->id);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (w->nphases == cap) {
            cap = cap ? cap * 2 : 16;
            w->phases = xrealloc(w->phases, cap * sizeof *w->phases);
        }
        store_phase *p = &w->phases[w->nphases++];
        p->seq = sqlite3_column_int(st, 0);
        p->phase = col_dup(st, 1);
        p->service = col_dup(st, 2);
        p->started_ms = sqlite3_column_int64(st, 3);
        p->ended_ms = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 4);
        p->ok = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 5);
        p->detail = col_dup(st, 6);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

static int query_switches(store *s, int64_t one_id, size_t limit, bool open_only, store_switch **out, size_t *n,
                          char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    const char *sql = one_id > 0 ? "SELECT id, mode, from_mode, origin, state, started_ms, ended_ms, error, plan "
                                   "FROM switches WHERE id = ?"
                      : open_only ? "SELECT id, mode, from_mode, origin, state, started_ms, ended_ms, error, plan "
                                    "FROM switches WHERE state IN ('planned','running') ORDER BY id DESC LIMIT ?"
                                  : "SELECT id, mode, from_mode, origin, state, started_ms, ended_ms, error, plan "
                                    "FROM switches ORDER BY id DESC LIMIT ?";
    if (prep(s, sql, &st, err, errlen)) return -1;
    sqlite3_bind_int64(st, 1, one_id > 0 ? one_id : (sqlite3_int64)(limit ? limit : 100));
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        store_switch *w = &(*out)[(*n)++];
        memset(w, 0, sizeof *w);
        w->id = sqlite3_column_int64(st, 0);
        w->mode = col_dup(st, 1);
        w->from_mode = col_dup(st, 2);
        w->origin = col_dup(st, 3);
        w->state = col_dup(st, 4);
        w->started_ms = sqlite3_column_int64(st, 5);
        w->ended_ms = sqlite3_column_type(st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 6);
        w->error = col_dup(st, 7);
        w->plan = col_dup(st, 8);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        store_switches_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    for (size_t i = 0; i < *n; i++)
        if (load_phases(s, &(*out)[i], err, errlen)) {
            store_switches_free(*out, *n);
            *out = NULL;
            *n = 0;
            return -1;
        }
    return 0;
}

int store_switches(store *s, size_t limit, bool open_only, store_switch **out, size_t *n, char *err, size_t errlen)
{
    return query_switches(s, 0, limit, open_only, out, n, err, errlen);
}

int store_switch_get(store *s, int64_t id, store_switch **out, char *err, size_t errlen)
{
    size_t n = 0;
    if (query_switches(s, id > 0 ? id : -1, 1, false, out, &n, err, errlen)) return -1;
    if (!n) {
        store_switches_free(*out, 0);
        *out = NULL;
        return 0;
    }
    return 1;
}

void store_switches_free(store_switch *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        store_switch *w = &v[i];
        free(w->mode);
        free(w->from_mode);
        free(w->origin);
        free(w->state);
        free(w->error);
        free(w->plan);
        for (size_t k = 0; k < w->nphases; k++) {
            free(w->phases[k].phase);
            free(w->phases[k].service);
            free(w->phases[k].detail);
        }
        free(w->phases);
    }
    free(v);
}

int store_committed_set(store *s, const char *mode, int64_t switch_id, int64_t at_ms, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s, "INSERT OR REPLACE INTO committed_mode(k, mode, switch_id, at_ms) VALUES (1, ?, ?, ?)", &st, err,
             errlen))
        return -1;
    sqlite3_bind_text(st, 1, mode, -1, SQLITE_STATIC);
    if (switch_id > 0)
        sqlite3_bind_int64(st, 2, switch_id);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, at_ms);
    return durable_step(s, st, "record the committed mode", err, errlen);
}

int store_switch_finish(store *s, int64_t id, const char *state, int64_t ended_ms, const char *error,
                        const char *commit_mode, char *err, size_t errlen)
{
    if (exec(s, "PRAGMA synchronous = FULL; BEGIN IMMEDIATE", err, errlen)) {
        sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
        return -1;
    }
    sqlite3_stmt *st;
    int rc = prep(s,
                  "UPDATE switches SET state = ?, ended_ms = ?, error = COALESCE(?, error) WHERE id = ? "
                  "AND state IN ('planned','running')",
                  &st, err, errlen);
    if (!rc) {
        sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, ended_ms);
        bind_text_or_null(st, 3, error);
        sqlite3_bind_int64(st, 4, id);
        rc = step_done(s, st, "end a switch", err, errlen);
        if (!rc && sqlite3_changes(s->db) != 1) {
            snprintf(err, errlen, "state database: cannot end switch %lld as '%s': no such switch is open",
                     (long long)id, state);
            rc = -1;
        }
    }
    if (!rc && commit_mode) {
        rc = prep(s, "INSERT OR REPLACE INTO committed_mode(k, mode, switch_id, at_ms) VALUES (1, ?, ?, ?)", &st, err,
                  errlen);
        if (!rc) {
            sqlite3_bind_text(st, 1, commit_mode, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, id);
            sqlite3_bind_int64(st, 3, ended_ms);
            rc = step_done(s, st, "record the committed mode", err, errlen);
        }
    }
    if (!rc) rc = exec(s, "COMMIT", err, errlen);
    if (rc) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    return rc;
}

int store_committed_get(store *s, char *out, size_t outlen, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s, "SELECT mode FROM committed_mode WHERE k = 1", &st, err, errlen)) return -1;
    int rc = sqlite3_step(st);
    int found = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(out, outlen, "%s", t ? (const char *)t : "none");
        found = 1;
    } else if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        found = -1;
    }
    sqlite3_finalize(st);
    return found;
}

/* ---- the tune lease ---------------------------------------------------- */

int store_tune_put(store *s, const char *doc, bool held, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (prep(s, "INSERT INTO tune_lease (k, doc, held) VALUES (1, ?, ?) "
                "ON CONFLICT(k) DO UPDATE SET doc = excluded.doc, held = excluded.held",
             &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 1, doc, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, held ? 1 : 0);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc) snprintf(err, errlen, "state database: cannot record the tune lease: %s", sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return rc;
}

int store_tune_get(store *s, char **doc, bool *held, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    *doc = NULL;
    *held = false;
    if (prep(s, "SELECT doc, held FROM tune_lease WHERE k = 1", &st, err, errlen)) return -1;
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        *doc = xstrdup(t ? (const char *)t : "null");
        *held = sqlite3_column_int(st, 1) != 0;
        found = 1;
    } else if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: cannot read the tune lease: %s", sqlite3_errmsg(s->db));
        found = -1;
    }
    sqlite3_finalize(st);
    return found;
}

/* ---- retention --------------------------------------------------------- */

int store_prune(store *s, const store_retention *r, int64_t *events_deleted, int64_t *switches_deleted, char *err,
                size_t errlen)
{
    if (events_deleted) *events_deleted = 0;
    if (switches_deleted) *switches_deleted = 0;
    int64_t batch = r->batch ? (int64_t)r->batch : STORE_PRUNE_BATCH;
    bool full = false;
    /* Every row below a bound id goes, the bound being the larger of two
     * (a row beyond either limit goes): the keep-th newest row, and the
     * first row young enough (none: every row is too old).  Both walk the
     * primary key from one end and stop early; a limit of 0 gives 0. */
    sqlite3_stmt *st;
    if (prep(s,
             "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < max("
             "  CASE WHEN ?1 > 0 THEN COALESCE((SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?1 - 1), 0)"
             "       ELSE 0 END,"
             "  CASE WHEN ?2 > 0 THEN COALESCE((SELECT id FROM events WHERE ts_ms >= ?3 ORDER BY id LIMIT 1),"
             "                                 (SELECT COALESCE(max(id), 0) + 1 FROM events))"
             "       ELSE 0 END)"
             " ORDER BY id LIMIT ?4)",
             &st, err, errlen))
        return -1;
    sqlite3_bind_int64(st, 1, r->events_keep > 0 ? r->events_keep : 0);
    sqlite3_bind_int64(st, 2, r->events_max_age_ms > 0 ? r->events_max_age_ms : 0);
    sqlite3_bind_int64(st, 3, r->now_ms - (r->events_max_age_ms > 0 ? r->events_max_age_ms : 0));
    sqlite3_bind_int64(st, 4, batch);
    if (step_done(s, st, "prune events", err, errlen)) return -1;
    int64_t n = sqlite3_changes64(s->db);
    if (events_deleted) *events_deleted = n;
    if (n >= batch) full = true;

    if (r->switches_keep > 0) {
        if (prep(s,
                 "DELETE FROM switches WHERE id IN (SELECT id FROM switches WHERE id < "
                 "  COALESCE((SELECT id FROM switches ORDER BY id DESC LIMIT 1 OFFSET ?1 - 1), 0)"
                 "  AND state NOT IN ('planned','running') ORDER BY id LIMIT ?2)",
                 &st, err, errlen))
            return -1;
        sqlite3_bind_int64(st, 1, r->switches_keep);
        sqlite3_bind_int64(st, 2, batch);
        if (step_done(s, st, "prune the switch journal", err, errlen)) return -1;
        n = sqlite3_changes64(s->db);
        if (switches_deleted) *switches_deleted = n;
        if (n >= batch) full = true;
    }
    return full ? 1 : 0;
}

/* ---- bench results ------------------------------------------------------ */

int store_result_add(store *s, const store_result *r, int64_t keep, int64_t max_bytes, int64_t *id,
                     int64_t *pruned, char *err, size_t errlen)
{
    if (pruned) *pruned = 0;
    if (keep <= 0) keep = STORE_RESULTS_KEEP;
    if (max_bytes <= 0) max_bytes = STORE_RESULTS_MAX_BYTES;
    if (exec(s, "BEGIN IMMEDIATE", err, errlen)) return -1;
    sqlite3_stmt *st;
    int rc = prep(s,
                  "INSERT INTO bench_results(ts_ms, kind, target, service, config_hash, summary, doc, bytes) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                  &st, err, errlen);
    int64_t new_id = 0;
    if (!rc) {
        sqlite3_bind_int64(st, 1, r->ts_ms);
        sqlite3_bind_text(st, 2, r->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->target ? r->target : "", -1, SQLITE_STATIC);
        bind_text_or_null(st, 4, r->service);
        bind_text_or_null(st, 5, r->config_hash);
        sqlite3_bind_text(st, 6, r->summary ? r->summary : "{}", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, r->doc ? r->doc : "{}", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 8, r->doc ? (sqlite3_int64)strlen(r->doc) : 2);
        rc = step_done(s, st, "store a bench result", err, errlen);
        new_id = sqlite3_last_insert_rowid(s->db);
    }
    /* Newest first: a row goes when it is beyond the keep-th or when the
     * documents up to and including it pass max_bytes; never the new one.
     * At most keep + 1 rows exist here, so the window is small. */
    if (!rc)
        rc = prep(s,
                  "DELETE FROM bench_results WHERE id IN (SELECT id FROM ("
                  "  SELECT id, row_number() OVER w AS rn, sum(bytes) OVER w AS cum FROM bench_results"
                  "  WINDOW w AS (ORDER BY id DESC ROWS UNBOUNDED PRECEDING))"
                  " WHERE (rn > ?1 OR cum > ?2) AND id <> ?3)",
                  &st, err, errlen);
    if (!rc) {
        sqlite3_bind_int64(st, 1, keep);
        sqlite3_bind_int64(st, 2, max_bytes);
        sqlite3_bind_int64(st, 3, new_id);
        rc = step_done(s, st, "prune bench results", err, errlen);
        if (!rc && pruned) *pruned = sqlite3_changes64(s->db);
    }
    if (!rc) rc = exec(s, "COMMIT", err, errlen);
    if (rc) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (id) *id = new_id;
    return 0;
}

static int query_results(store *s, int64_t one_id, const char *service, const char *kind, size_t limit,
                         store_result **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    const char *sql =
        one_id > 0 ? "SELECT id, ts_ms, kind, target, service, config_hash, summary, bytes, doc FROM bench_results "
                     "WHERE id = ?1"
                   : "SELECT id, ts_ms, kind, target, service, config_hash, summary, bytes, NULL FROM bench_results "
                     "WHERE (?2 IS NULL OR service = ?2) AND (?3 IS NULL OR kind = ?3) ORDER BY id DESC LIMIT ?1";
    if (prep(s, sql, &st, err, errlen)) return -1;
    sqlite3_bind_int64(st, 1, one_id > 0 ? one_id : (sqlite3_int64)(limit ? limit : 100));
    if (one_id <= 0 && service) sqlite3_bind_text(st, 2, service, -1, SQLITE_STATIC);
    if (one_id <= 0 && kind) sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        store_result *r = &(*out)[(*n)++];
        r->id = sqlite3_column_int64(st, 0);
        r->ts_ms = sqlite3_column_int64(st, 1);
        r->kind = col_dup(st, 2);
        r->target = col_dup(st, 3);
        r->service = col_dup(st, 4);
        r->config_hash = col_dup(st, 5);
        r->summary = col_dup(st, 6);
        r->bytes = sqlite3_column_int64(st, 7);
        r->doc = col_dup(st, 8);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "state database: cannot read bench results: %s", sqlite3_errmsg(s->db));
        store_results_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

int store_results(store *s, const char *service, const char *kind, size_t limit, store_result **out, size_t *n,
                  char *err, size_t errlen)
{
    return query_results(s, 0, service, kind, limit, out, n, err, errlen);
}

int store_result_get(store *s, int64_t id, store_result **out, char *err, size_t errlen)
{
    size_t n = 0;
    *out = NULL;
    if (id <= 0) return 0;
    if (query_results(s, id, NULL, NULL, 1, out, &n, err, errlen)) return -1;
    if (!n) {
        store_results_free(*out, 0);
        *out = NULL;
        return 0;
    }
    return 1;
}

void store_results_free(store_result *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].kind);
        free(v[i].target);
        free(v[i].service);
        free(v[i].config_hash);
        free(v[i].summary);
        free(v[i].doc);
    }
    free(v);
}

/* ---- sleep footprints (schema v8) ------------------------------------- */

int store_sleep_put(store *s, const sleep_fp *f, char *err, size_t errlen)
{
    buf g = BUF_INIT;
    for (size_t i = 0; i < f->fp.ngpu && i < HOST_MAX_GPUS; i++)
        buf_printf(&g, "%s%d:%llu", i ? "," : "", f->fp.gpu[i].index, (unsigned long long)f->fp.gpu[i].bytes);
    sqlite3_stmt *st = NULL;
    int rc = prep(s,
                  "INSERT INTO sleep_footprints(hash, tier, measured_at_ms, host_bytes, gpu, sleep_ms, wake_ms) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(hash, tier) DO UPDATE SET "
                  "measured_at_ms = ?3, host_bytes = ?4, gpu = ?5, sleep_ms = ?6, "
                  "wake_ms = CASE WHEN ?7 < 0 THEN wake_ms ELSE ?7 END",
                  &st, err, errlen);
    if (!rc) {
        sqlite3_bind_text(st, 1, f->hash, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, f->tier);
        sqlite3_bind_int64(st, 3, f->fp.measured_at_ms);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)f->fp.host_bytes);
        sqlite3_bind_text(st, 5, g.p ? g.p : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, f->sleep_ms);
        sqlite3_bind_int64(st, 7, f->wake_ms);
        rc = step_done(s, st, "store a sleep footprint", err, errlen);
    }
    buf_release(&g);
    return rc;
}

int store_sleep_get(store *s, const char *hash, int tier, sleep_fp *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (store_schema_version(s) < 8) return 0; /* a read-only open of an older database */
    sqlite3_stmt *st = NULL;
    if (prep(s,
             "SELECT measured_at_ms, host_bytes, gpu, sleep_ms, wake_ms FROM sleep_footprints "
             "WHERE hash = ? AND tier = ?",
             &st, err, errlen))
        return -1;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, tier);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        if (rc != SQLITE_DONE) snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : -1;
    }
    snprintf(out->hash, sizeof out->hash, "%s", hash);
    snprintf(out->fp.hash, sizeof out->fp.hash, "%s", hash);
    out->tier = tier;
    out->fp.measured_at_ms = sqlite3_column_int64(st, 0);
    out->fp.host_bytes = (uint64_t)sqlite3_column_int64(st, 1);
    const char *g = (const char *)sqlite3_column_text(st, 2);
    while (g && *g && out->fp.ngpu < HOST_MAX_GPUS) {
        int idx;
        unsigned long long bytes;
        int used = 0;
        if (sscanf(g, "%d:%llu%n", &idx, &bytes, &used) != 2) break;
        out->fp.gpu[out->fp.ngpu].index = idx;
        out->fp.gpu[out->fp.ngpu].bytes = bytes;
        out->fp.ngpu++;
        g += used;
        if (*g == ',') g++;
    }
    out->sleep_ms = sqlite3_column_int64(st, 3);
    out->wake_ms = sqlite3_column_int64(st, 4);
    sqlite3_finalize(st);
    return 1;
}
