/* db.h - the state database (SQLite, WAL): schema versioning and the
 * tables later parts fill.  This version holds measured footprints; the
 * daemon adds events and the switch journal through new migrations. */
#ifndef GPUMOD_DB_H
#define GPUMOD_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"

typedef struct store store;

#define STORE_FILE "gpumod.db"

/* Open <state_dir>/gpumod.db.  create: make the directory and the file
 * and apply migrations; else open read-only and fail with ENOENT-like
 * "no state database" (*missing = true) when there is none.  Every call
 * waits at most busy_ms on a lock held by another process. */
int store_open(store **out, const char *state_dir, bool create, int busy_ms, bool *missing, char *err,
               size_t errlen);
void store_close(store *s);
int store_schema_version(store *s);
extern const int store_schema_latest;

typedef struct footprint {
    char hash[65];
    char service[65];
    int64_t measured_at_ms; /* Unix ms */
    uint64_t host_bytes;
    size_t ngpu;
    struct {
        int index;
        uint64_t bytes;
    } gpu[HOST_MAX_GPUS];
} footprint;

int store_footprint_put(store *s, const footprint *f, char *err, size_t errlen);
/* 1 found, 0 none, -1 error. */
int store_footprint_get(store *s, const char *hash, footprint *out, char *err, size_t errlen);

#endif
