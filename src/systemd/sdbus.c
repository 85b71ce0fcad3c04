/* sdbus.c - sd-bus through dlopen (see sdbus.h).
 *
 * The symbol table is the whole contract with libsystemd: a later systemd
 * runner adds the readers it needs (sd_bus_message_read, match slots) as
 * rows here and keeps sdbus_call() as its one way to call a method, so
 * every call it makes has a deadline: sd_bus_call()'s usec argument, not
 * the library default of 25 s. */
#include "systemd/sdbus.h"

#include "util/buf.h"
#include "util/errf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sd_bus_error as libsystemd lays it out (sd-bus.h, stable ABI) */
typedef struct sd_err {
    const char *name;
    const char *message;
    int need_free;
} sd_err;

static struct {
    bool tried;
    int rc;
    char err[256];
    void *h;
    int (*open_user)(void **bus);
    int (*open_system)(void **bus);
    void *(*flush_close_unref)(void *bus);
    int (*new_method_call)(void *bus, void **m, const char *dest, const char *path, const char *iface,
                           const char *member);
    int (*appendv)(void *m, const char *types, va_list ap);
    int (*call)(void *bus, void *m, uint64_t usec, sd_err *e, void **reply);
    void *(*msg_unref)(void *m);
    void (*error_free)(sd_err *e);
} L;

struct sdbus {
    void *bus;
    bool user;
};

#define SYM(f, n) {#n, (void **)&L.f}
static const struct {
    const char *name;
    void **slot;
} syms[] = {
    SYM(open_user, sd_bus_open_user),
    SYM(open_system, sd_bus_open_system),
    SYM(flush_close_unref, sd_bus_flush_close_unref),
    SYM(new_method_call, sd_bus_message_new_method_call),
    SYM(appendv, sd_bus_message_appendv),
    SYM(call, sd_bus_call),
    SYM(msg_unref, sd_bus_message_unref),
    SYM(error_free, sd_bus_error_free),
};
#undef SYM

static int load_once(void)
{
    const char *lib = getenv("GPUMOD_LIBSYSTEMD");
    if (!lib || !*lib) lib = "libsystemd.so.0";
    dlerror();
    L.h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!L.h) {
        const char *why = dlerror();
        errf(L.err, sizeof L.err, "cannot load '%s': %s (install libsystemd0)", lib, why ? why : "dlopen failed");
        return -1;
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(L.h, syms[i].name);
        if (!p) {
            errf(L.err, sizeof L.err, "cannot load '%s': no symbol '%s' (systemd 240 or later expected)", lib,
                 syms[i].name);
            dlclose(L.h);
            L.h = NULL;
            return -1;
        }
        memcpy(syms[i].slot, &p, sizeof p);
    }
    return 0;
}

int sdbus_load(char *err, size_t errlen)
{
    if (!L.tried) {
        L.tried = true;
        L.rc = load_once();
    }
    if (L.rc) errf(err, errlen, "%s", L.err);
    return L.rc;
}

const char *sdbus_scope(const sdbus *b)
{
    return b->user ? "user" : "system";
}

int sdbus_open(sdbus **out, bool user, char *err, size_t errlen)
{
    *out = NULL;
    if (sdbus_load(err, errlen)) return -1;
    void *bus = NULL;
    int r = user ? L.open_user(&bus) : L.open_system(&bus);
    if (r < 0) {
        const char *addr = getenv(user ? "DBUS_SESSION_BUS_ADDRESS" : "DBUS_SYSTEM_BUS_ADDRESS");
        const char *rt = getenv("XDG_RUNTIME_DIR");
        char where[512];
        if (addr && *addr)
            snprintf(where, sizeof where, "%s", addr);
        else if (rt && *rt)
            snprintf(where, sizeof where, "%s/bus", rt);
        else
            snprintf(where, sizeof where, "no DBUS_SESSION_BUS_ADDRESS or XDG_RUNTIME_DIR");
        if (user)
            errf(err, errlen, "cannot connect to the user bus (%s): %s; is a user session running?", where,
                 strerror(-r));
        else
            errf(err, errlen, "cannot connect to the system bus (%s): %s", addr && *addr ? addr
                 : "/run/dbus/system_bus_socket", strerror(-r));
        return -1;
    }
    sdbus *b = xcalloc(1, sizeof *b);
    b->bus = bus;
    b->user = user;
    *out = b;
    return 0;
}

void sdbus_close(sdbus *b)
{
    if (!b) return;
    if (b->bus) L.flush_close_unref(b->bus);
    free(b);
}

void sdbus_msg_free(sdbus_msg *m)
{
    if (m) L.msg_unref(m);
}

int sdbus_call(sdbus *b, const char *dest, const char *path, const char *iface, const char *member,
               int64_t timeout_ms, sdbus_msg **reply, char *err, size_t errlen, const char *types, ...)
{
    if (reply) *reply = NULL;
    void *m = NULL, *rep = NULL;
    int r = L.new_method_call(b->bus, &m, dest, path, iface, member);
    if (r < 0) {
        errf(err, errlen, "%s.%s on the %s bus: cannot build the call: %s", iface, member, sdbus_scope(b),
             strerror(-r));
        return -1;
    }
    if (types && *types) {
        va_list ap;
        va_start(ap, types);
        r = L.appendv(m, types, ap);
        va_end(ap);
        if (r < 0) {
            errf(err, errlen, "%s.%s on the %s bus: cannot append arguments '%s': %s", iface, member,
                 sdbus_scope(b), types, strerror(-r));
            L.msg_unref(m);
            return -1;
        }
    }
    sd_err e = {0};
    uint64_t usec = timeout_ms > 0 ? (uint64_t)timeout_ms * 1000 : 1;
    r = L.call(b->bus, m, usec, &e, &rep);
    L.msg_unref(m);
    if (r < 0) {
        if (r == -ETIMEDOUT)
            errf(err, errlen, "%s.%s on the %s bus: no answer within %lld ms", iface, member, sdbus_scope(b),
                 (long long)timeout_ms);
        else if (e.name)
            errf(err, errlen, "%s.%s on the %s bus: %s: %s", iface, member, sdbus_scope(b), e.name,
                 e.message ? e.message : strerror(-r));
        else
            errf(err, errlen, "%s.%s on the %s bus: %s", iface, member, sdbus_scope(b), strerror(-r));
        L.error_free(&e);
        return -1;
    }
    L.error_free(&e);
    if (reply)
        *reply = rep;
    else
        L.msg_unref(rep);
    return 0;
}

int sdbus_systemd_reload(sdbus *b, int64_t timeout_ms, char *err, size_t errlen)
{
    return sdbus_call(b, "org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                      "Reload", timeout_ms, NULL, err, errlen, NULL);
}
