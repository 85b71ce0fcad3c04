/* db.c - SQLite state: migrations and queries.
 *
 * Migrations are an ordered list of SQL scripts; PRAGMA user_version says
 * how many ran.  A database written by a newer gpumod (user_version above
 * what this build knows) is refused rather than guessed at.  Readers that
 * only look (preflight) open read-only and never create the file, so a
 * host that never ran the daemon pays nothing for SQLite. */
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
};

const char *const store_event_kinds[] = {"state",  "spawn",   "exit",        "restart", "gate",
                                         "watchdog", "footprint", "switch.phase", "reload", "router.activation",
                                         NULL};

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
    if (id) *id = sqlite3_last_insert_rowid(s->db);
    return 0;
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
    char sql[512];
    snprintf(sql, sizeof sql,
             "%sSELECT id, ts_ms, service, kind, from_state, to_state, reason, data FROM events "
             "WHERE id > ? AND ts_ms >= ?%s ORDER BY id%s LIMIT ?%s",
             q->tail ? "SELECT * FROM (" : "", q->service ? " AND service = ?" : "", q->tail ? " DESC" : "",
             q->tail ? ") ORDER BY id" : "");
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    int i = 1;
    sqlite3_bind_int64(st, i++, q->since_id);
    sqlite3_bind_int64(st, i++, q->since_ts_ms);
    if (q->service) sqlite3_bind_text(st, i++, q->service, -1, SQLITE_STATIC);
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
        rc = exec(s, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;", err, errlen);
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
                                "INSERT OR REPLACE INTO footprints(hash, service, measured_at_ms, host_bytes) "
                                "VALUES (?, ?, ?, ?)",
                                -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, f->hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, f->service, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, f->measured_at_ms);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)f->host_bytes);
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
        ok = sqlite3_prepare_v2(s->db, "INSERT INTO footprint_gpus(hash, device, bytes) VALUES (?, ?, ?)", -1, &st,
                                NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_text(st, 1, f->hash, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 2, f->gpu[i].index);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)f->gpu[i].bytes);
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
    if (sqlite3_prepare_v2(s->db, "SELECT service, measured_at_ms, host_bytes FROM footprints WHERE hash = ?", -1,
                           &st, NULL) != SQLITE_OK) {
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
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(s->db, "SELECT device, bytes FROM footprint_gpus WHERE hash = ? ORDER BY device", -1, &st,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "state database: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && out->ngpu < HOST_MAX_GPUS) {
        out->gpu[out->ngpu].index = sqlite3_column_int(st, 0);
        out->gpu[out->ngpu].bytes = (uint64_t)sqlite3_column_int64(st, 1);
        out->ngpu++;
    }
    sqlite3_finalize(st);
    return 1;
}
