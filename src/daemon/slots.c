/* slots.c - see slots.h.  One request at a time, started from the op's
 * own timer (so the callback never runs inside slots_save/restore). */
#include "daemon/slots.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daemon/health.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"

struct slots_op {
    uv_loop_t *loop;
    uv_timer_t timer;
    health_probe *req;
    bool save, done;
    slots_spec sp; /* strings owned */
    int slot, ok, failed;
    int64_t t0;
    slots_cb cb;
    void *ud;
};

static void closed(uv_handle_t *h)
{
    slots_op *o = h->data;
    free((char *)o->sp.service);
    free((char *)o->sp.host);
    free((char *)o->sp.dir);
    free((char *)o->sp.hash);
    free(o);
}

static void finish(slots_op *o)
{
    if (o->done) return;
    o->done = true;
    uv_timer_stop(&o->timer);
    if (o->ok || o->failed)
        log_info("slots: '%s': %s %d of %d slot(s) in %lld ms%s", o->sp.service,
                 o->save ? "saved" : "restored", o->ok, o->sp.parallel,
                 (long long)(clock_mono_ms() - o->t0), o->failed ? " (failures logged above)" : "");
    if (o->cb) o->cb(o->ok, o->failed, o->ud);
    uv_close((uv_handle_t *)&o->timer, closed);
}

void slots_cancel(slots_op *o)
{
    if (!o || o->done) return;
    o->cb = NULL;
    if (o->req) health_cancel(o->req);
    o->req = NULL;
    finish(o);
}

static char *file_of(const slots_op *o, int slot)
{
    return xasprintf("%s-%d.bin", o->sp.hash, slot);
}

static void next(slots_op *o);

static void fired(uv_timer_t *t)
{
    next(t->data);
}

static void answered(int status, const char *body, size_t len, const char *err, void *ud)
{
    slots_op *o = ud;
    (void)len;
    o->req = NULL;
    char *name = file_of(o, o->slot);
    const char *what = o->save ? "save" : "restore";
    if (status >= 200 && status < 300) {
        o->ok++;
        char *path = xasprintf("%s/%s", o->sp.dir, name);
        if (!o->save) /* used now: the bound deletes it last */
            utimensat(AT_FDCWD, path, NULL, 0);
        log_info("slots: '%s': slot %d %s %s", o->sp.service, o->slot,
                 o->save ? "saved to" : "restored from", path);
        free(path);
        if (o->save) {
            char e[300];
            int n = slots_bound(o->sp.dir, (uint64_t)o->sp.max_mb << 20, e, sizeof e);
            if (n < 0)
                log_warn("slots: '%s': %s", o->sp.service, e);
            else if (n > 0)
                log_info("slots: '%s': deleted %d old slot file(s) of %s: over slots_max_mb %lld",
                         o->sp.service, n, o->sp.dir, (long long)o->sp.max_mb);
        }
    } else {
        o->failed++;
        char snip[160];
        snprintf(snip, sizeof snip, "%.150s", body ? body : "");
        for (char *p = snip; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        if (status)
            log_warn("slots: '%s': POST /slots/%d?action=%s {\"filename\":\"%s\"} answered %d: %s",
                     o->sp.service, o->slot, what, name, status, snip);
        else
            log_warn("slots: '%s': POST /slots/%d?action=%s on %s:%d: %s; the other slots are "
                     "not tried",
                     o->sp.service, o->slot, what, o->sp.host, o->sp.port, err ? err : "no answer");
    }
    free(name);
    if (!status) {
        finish(o);
        return;
    }
    o->slot++;
    uv_timer_start(&o->timer, fired, 0, 0);
}

/* The next slot (a restore skips those without a file), or the end. */
static void next(slots_op *o)
{
    for (; o->slot < o->sp.parallel; o->slot++) {
        char *name = file_of(o, o->slot);
        char *path = xasprintf("%s/%s", o->sp.dir, name);
        struct stat st;
        bool have = o->save || stat(path, &st) == 0;
        free(path);
        if (!have) {
            free(name);
            continue;
        }
        buf b = BUF_INIT;
        buf_adds(&b, "{\"filename\":");
        buf_json_str(&b, name);
        buf_addc(&b, '}');
        free(name);
        char url[64], err[256];
        snprintf(url, sizeof url, "/slots/%d?action=%s", o->slot, o->save ? "save" : "restore");
        o->req = health_request(o->loop, o->sp.host, o->sp.port, "POST", url, b.p, o->sp.call_ms,
                                answered, o, err, sizeof err);
        buf_release(&b);
        if (o->req) return;
        log_warn("slots: '%s': cannot send POST %s: %s", o->sp.service, url, err);
        o->failed++;
        break;
    }
    finish(o);
}

static slots_op *begin(uv_loop_t *loop, const slots_spec *sp, bool save, slots_cb cb, void *ud)
{
    slots_op *o = xcalloc(1, sizeof *o);
    o->loop = loop;
    o->save = save;
    o->sp = *sp;
    o->sp.service = xstrdup(sp->service ? sp->service : "?");
    o->sp.host = xstrdup(sp->host ? sp->host : "127.0.0.1");
    o->sp.dir = xstrdup(sp->dir);
    o->sp.hash = xstrdup(sp->hash);
    if (o->sp.call_ms <= 0) o->sp.call_ms = SLOTS_CALL_MS;
    o->t0 = clock_mono_ms();
    o->cb = cb;
    o->ud = ud;
    uv_timer_init(loop, &o->timer);
    o->timer.data = o;
    char why[300];
    if (save && o->sp.max_mb <= 0) {
        log_info("slots: '%s': the slots are not saved: supervisor.slots_max_mb is 0",
                 o->sp.service);
        o->slot = o->sp.parallel; /* nothing to do: ends on the timer */
    } else if (save && !slots_disk_ok(o->sp.dir, o->sp.max_mb, why, sizeof why)) {
        log_warn("slots: '%s': the slots are not saved: %s", o->sp.service, why);
        o->slot = o->sp.parallel;
    }
    uv_timer_start(&o->timer, fired, 0, 0);
    return o;
}

slots_op *slots_save(uv_loop_t *loop, const slots_spec *sp, slots_cb cb, void *ud)
{
    return begin(loop, sp, true, cb, ud);
}

slots_op *slots_restore(uv_loop_t *loop, const slots_spec *sp, slots_cb cb, void *ud)
{
    return begin(loop, sp, false, cb, ud);
}

/* ------------------------------------------------------------------ */
/* the directory */

static int make_one(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0700) == 0) return 0;
    struct stat st;
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    snprintf(err, errlen,
             "cannot create the slot directory '%s': %s (expected a directory, mode 0700)", path,
             errno == EEXIST ? "a file of that name exists" : strerror(errno));
    return -1;
}

int slots_make_dir(const char *state_dir, const char *id, char *err, size_t errlen)
{
    char *top = xasprintf("%s/slots", state_dir);
    char *mine = xasprintf("%s/%s", top, id);
    int rc = make_one(top, err, errlen);
    if (rc == 0) rc = make_one(mine, err, errlen);
    free(top);
    free(mine);
    return rc;
}

typedef struct sfile {
    char *name;
    uint64_t bytes;
    struct timespec mt;
} sfile;

static int older(const void *a, const void *b)
{
    const sfile *x = a, *y = b;
    if (x->mt.tv_sec != y->mt.tv_sec) return x->mt.tv_sec < y->mt.tv_sec ? -1 : 1;
    if (x->mt.tv_nsec != y->mt.tv_nsec) return x->mt.tv_nsec < y->mt.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static size_t list_files(DIR *d, const char *dir, sfile **out, uint64_t *total)
{
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *path = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                *out = xrealloc(*out, cap * sizeof **out);
            }
            (*out)[n++] = (sfile){xstrdup(e->d_name), (uint64_t)st.st_size, st.st_mtim};
            *total += (uint64_t)st.st_size;
        }
        free(path);
    }
    return n;
}

int slots_bound(const char *dir, uint64_t max_bytes, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot list the slot directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    sfile *f = NULL;
    uint64_t total = 0;
    size_t n = list_files(d, dir, &f, &total);
    closedir(d);
    if (n > 1) qsort(f, n, sizeof *f, older);
    int deleted = 0;
    for (size_t i = 0; i < n && total > max_bytes; i++) {
        char *path = xasprintf("%s/%s", dir, f[i].name);
        if (unlink(path) == 0) {
            total -= f[i].bytes;
            deleted++;
        } else if (errno != ENOENT) {
            log_warn("slots: cannot delete '%s': %s", path, strerror(errno));
        }
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
    return deleted;
}

bool slots_disk_ok(const char *dir, int64_t max_mb, char *why, size_t len)
{
    struct statvfs vf;
    if (statvfs(dir, &vf) != 0) {
        snprintf(why, len, "cannot read the free space of '%s': %s", dir, strerror(errno));
        return false;
    }
    uint64_t free_b = (uint64_t)vf.f_bavail * (uint64_t)vf.f_frsize;
    uint64_t want = SLOTS_DISK_FLOOR + ((uint64_t)(max_mb > 0 ? max_mb : 0) << 20) / 4;
    if (free_b >= want) return true;
    snprintf(why, len,
             "%llu MiB free on the file system of '%s', %llu MiB wanted (1 GiB + slots_max_mb/4)",
             (unsigned long long)(free_b >> 20), dir, (unsigned long long)(want >> 20));
    return false;
}
