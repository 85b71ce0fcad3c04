/* sdbus.c - sd-bus through dlopen (see sdbus.h).
 *
 * The symbol table is the whole contract with libsystemd.  Every call
 * has a deadline: sd_bus_call()'s or sd_bus_call_async()'s usec argument,
 * not the library default of 25 s.  On a loop (the daemon's systemd
 * runner) the connection is driven by a uv_poll_t and a uv_timer_t; an
 * asynchronous call's context rides on its floating slot, whose destroy
 * callback answers "connection closed" when the bus goes before the
 * reply, so every callback runs exactly once. */
#include "systemd/sdbus.h"

#include "util/buf.h"
#include "util/errf.h"

#include <dlfcn.h>
#include <poll.h>
#include <time.h>
#include <uv.h>
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
    void (*close)(void *bus);
    void *(*unref)(void *bus);
    int (*is_ready)(void *bus);
    int (*wait)(void *bus, uint64_t usec);
    int (*get_address)(void *bus, const char **address);
    int (*new_method_call)(void *bus, void **m, const char *dest, const char *path, const char *iface,
                           const char *member);
    int (*appendv)(void *m, const char *types, va_list ap);
    int (*call)(void *bus, void *m, uint64_t usec, sd_err *e, void **reply);
    void *(*msg_unref)(void *m);
    void (*error_free)(sd_err *e);
    /* the loop and the readers */
    int (*get_fd)(void *bus);
    int (*get_events)(void *bus);
    int (*get_timeout)(void *bus, uint64_t *usec);
    int (*process)(void *bus, void **m);
    int (*call_async)(void *bus, void **slot, void *m, int (*cb)(void *m, void *ud, sd_err *e), void *ud,
                      uint64_t usec);
    int (*match_signal_async)(void *bus, void **slot, const char *sender, const char *path, const char *iface,
                              const char *member, int (*cb)(void *m, void *ud, sd_err *e),
                              int (*install)(void *m, void *ud, sd_err *e), void *ud);
    void *(*slot_unref)(void *slot);
    int (*slot_set_destroy)(void *slot, void (*cb)(void *ud));
    int (*slot_set_floating)(void *slot, int b);
    int (*is_method_error)(void *m, const char *name);
    const sd_err *(*get_error)(void *m);
    int (*read_basic)(void *m, char type, void *p);
    int (*enter)(void *m, char type, const char *contents);
    int (*exit_container)(void *m);
    int (*peek_type)(void *m, char *type, const char **contents);
    int (*skip)(void *m, const char *types);
    const char *(*get_path)(void *m);
    const char *(*get_member)(void *m);
} L;

struct sdbus {
    void *bus;
    bool user;
    /* attached to a loop */
    uv_poll_t *poll;
    uv_timer_t *timer;
    int poll_events;
    bool dead;
    void (*on_disconnect)(const char *why, void *ud);
    void *dud;
};

#define SYM(f, n) {#n, (void **)&L.f}
static const struct {
    const char *name;
    void **slot;
} syms[] = {
    SYM(open_user, sd_bus_open_user),
    SYM(open_system, sd_bus_open_system),
    SYM(close, sd_bus_close),
    SYM(unref, sd_bus_unref),
    SYM(is_ready, sd_bus_is_ready),
    SYM(wait, sd_bus_wait),
    SYM(get_address, sd_bus_get_address),
    SYM(new_method_call, sd_bus_message_new_method_call),
    SYM(appendv, sd_bus_message_appendv),
    SYM(call, sd_bus_call),
    SYM(msg_unref, sd_bus_message_unref),
    SYM(error_free, sd_bus_error_free),
    SYM(get_fd, sd_bus_get_fd),
    SYM(get_events, sd_bus_get_events),
    SYM(get_timeout, sd_bus_get_timeout),
    SYM(process, sd_bus_process),
    SYM(call_async, sd_bus_call_async),
    SYM(match_signal_async, sd_bus_match_signal_async),
    SYM(slot_unref, sd_bus_slot_unref),
    SYM(slot_set_destroy, sd_bus_slot_set_destroy_callback),
    SYM(slot_set_floating, sd_bus_slot_set_floating),
    SYM(is_method_error, sd_bus_message_is_method_error),
    SYM(get_error, sd_bus_message_get_error),
    SYM(read_basic, sd_bus_message_read_basic),
    SYM(enter, sd_bus_message_enter_container),
    SYM(exit_container, sd_bus_message_exit_container),
    SYM(peek_type, sd_bus_message_peek_type),
    SYM(skip, sd_bus_message_skip),
    SYM(get_path, sd_bus_message_get_path),
    SYM(get_member, sd_bus_message_get_member),
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

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* sd_bus_open_* only starts the connection; the first call would wait for
 * the authentication under libsystemd's own 90 s.  Drive it here, under
 * the caller's deadline, so that a bus that accepts and never answers
 * costs timeout_ms at most. */
static int wait_ready(void *bus, bool user, int64_t timeout_ms, char *err, size_t errlen)
{
    int64_t deadline = mono_ms() + timeout_ms;
    const char *addr = NULL;
    if (L.get_address(bus, &addr) < 0 || !addr) addr = "?";
    for (;;) {
        int r = L.is_ready(bus);
        if (r > 0) return 0;
        if (r == 0) r = L.process(bus, NULL);
        if (r > 0) continue;
        if (r == 0) {
            int64_t left = deadline - mono_ms();
            if (left <= 0) {
                errf(err, errlen, "the %s bus (%s) timed out after %lld s: connected, but the bus did not complete "
                                  "the authentication (a hung dbus-daemon or dbus-broker?)", user ? "user" : "system",
                     addr, (long long)((timeout_ms + 999) / 1000));
                return -1;
            }
            r = L.wait(bus, (uint64_t)left * 1000);
        }
        if (r < 0) {
            errf(err, errlen, "cannot connect to the %s bus (%s): %s", user ? "user" : "system", addr, strerror(-r));
            return -1;
        }
    }
}

int sdbus_open(sdbus **out, bool user, char *err, size_t errlen)
{
    return sdbus_open_within(out, user, SDBUS_CONNECT_TIMEOUT_MS, err, errlen);
}

int sdbus_open_within(sdbus **out, bool user, int64_t timeout_ms, char *err, size_t errlen)
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
    if (wait_ready(bus, user, timeout_ms > 0 ? timeout_ms : 1, err, errlen)) {
        L.close(bus);
        L.unref(bus);
        return -1;
    }
    sdbus *b = xcalloc(1, sizeof *b);
    b->bus = bus;
    b->user = user;
    *out = b;
    return 0;
}

static void handle_free(uv_handle_t *h)
{
    free(h);
}

static void detach(sdbus *b)
{
    if (b->poll) {
        uv_close((uv_handle_t *)b->poll, handle_free);
        b->poll = NULL;
    }
    if (b->timer) {
        uv_close((uv_handle_t *)b->timer, handle_free);
        b->timer = NULL;
    }
}

void sdbus_close(sdbus *b)
{
    if (!b) return;
    detach(b);
    /* pending calls are answered "connection closed" (their slots'
     * destroy callbacks) while the bus is freed */
    /* no flush: it waits for a running bus without a deadline; after a
     * blocking call nothing is left queued */
    if (b->bus) {
        L.close(b->bus);
        L.unref(b->bus);
    }
    free(b);
}

void sdbus_msg_free(sdbus_msg *m)
{
    if (m) L.msg_unref(m);
}

static void rearm(sdbus *b);

/* A method call with its arguments appended (types as
 * sd_bus_message_append takes them; NULL or "": none), or NULL with err. */
static void *build_call(sdbus *b, const char *dest, const char *path, const char *iface, const char *member,
                        char *err, size_t errlen, const char *types, va_list ap)
{
    void *m = NULL;
    int r = L.new_method_call(b->bus, &m, dest, path, iface, member);
    if (r < 0) {
        errf(err, errlen, "%s.%s on the %s bus: cannot build the call: %s", iface, member, sdbus_scope(b),
             strerror(-r));
        return NULL;
    }
    if (types && *types) {
        r = L.appendv(m, types, ap);
        if (r < 0) {
            errf(err, errlen, "%s.%s on the %s bus: cannot append arguments '%s': %s", iface, member,
                 sdbus_scope(b), types, strerror(-r));
            L.msg_unref(m);
            return NULL;
        }
    }
    return m;
}

int sdbus_call(sdbus *b, const char *dest, const char *path, const char *iface, const char *member,
               int64_t timeout_ms, sdbus_msg **reply, char *err, size_t errlen, const char *types, ...)
{
    if (reply) *reply = NULL;
    void *rep = NULL;
    va_list ap;
    va_start(ap, types);
    void *m = build_call(b, dest, path, iface, member, err, errlen, types, ap);
    va_end(ap);
    if (!m) return -1;
    sd_err e = {0};
    uint64_t usec = timeout_ms > 0 ? (uint64_t)timeout_ms * 1000 : 1;
    int r = L.call(b->bus, m, usec, &e, &rep);
    L.msg_unref(m);
    rearm(b); /* on a loop: what it read meanwhile is dispatched on the next turn */
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

/* ------------------------------------------------------------------ */
/* the loop */

static void lost(sdbus *b, int r)
{
    if (b->dead) return;
    b->dead = true;
    detach(b);
    char why[160];
    snprintf(why, sizeof why, "the %s bus connection was lost: %s", sdbus_scope(b), strerror(-r));
    if (b->on_disconnect) b->on_disconnect(why, b->dud);
}

static void pump(sdbus *b)
{
    if (b->dead) return;
    for (int i = 0; i < 4096; i++) { /* bounded: a flood yields to the loop, the timer comes back at once */
        int r = L.process(b->bus, NULL);
        if (r < 0) {
            lost(b, r);
            return;
        }
        if (r == 0) break;
    }
    rearm(b);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    (void)status, (void)events;
    pump(p->data);
}

static void on_timer(uv_timer_t *t)
{
    pump(t->data);
}

static void rearm(sdbus *b)
{
    if (b->dead || !b->poll) return;
    int ev = L.get_events(b->bus);
    if (ev < 0) {
        lost(b, ev);
        return;
    }
    int want = (ev & POLLIN ? UV_READABLE : 0) | (ev & POLLOUT ? UV_WRITABLE : 0);
    if (want != b->poll_events) {
        b->poll_events = want;
        uv_poll_start(b->poll, want, on_poll);
    }
    uint64_t usec = UINT64_MAX;
    if (L.get_timeout(b->bus, &usec) < 0) usec = UINT64_MAX;
    if (usec == UINT64_MAX) {
        uv_timer_stop(b->timer);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
    uint64_t ms = usec > now ? (usec - now + 999) / 1000 : 0;
    uv_timer_start(b->timer, on_timer, ms, 0);
}

int sdbus_attach(sdbus *b, struct uv_loop_s *loop, void (*on_disconnect)(const char *why, void *ud), void *ud,
                 char *err, size_t errlen)
{
    int fd = L.get_fd(b->bus);
    if (fd < 0) {
        errf(err, errlen, "the %s bus: no file descriptor to poll: %s", sdbus_scope(b), strerror(-fd));
        return -1;
    }
    b->poll = xcalloc(1, sizeof *b->poll);
    b->timer = xcalloc(1, sizeof *b->timer);
    int r = uv_poll_init(loop, b->poll, fd);
    if (r) {
        errf(err, errlen, "the %s bus: cannot poll fd %d: %s", sdbus_scope(b), fd, uv_strerror(r));
        free(b->poll);
        free(b->timer);
        b->poll = NULL;
        b->timer = NULL;
        return -1;
    }
    uv_timer_init(loop, b->timer);
    b->poll->data = b->timer->data = b;
    b->poll_events = 0;
    b->on_disconnect = on_disconnect;
    b->dud = ud;
    uv_timer_start(b->timer, on_timer, 0, 0); /* what is queued already */
    return 0;
}

bool sdbus_connected(const sdbus *b)
{
    return b && !b->dead;
}

/* ------------------------------------------------------------------ */
/* asynchronous calls and matches */

struct sdbus_slot {
    sdbus *b;
    void *slot;
    bool fired, is_match;
    sdbus_reply_cb rcb;
    sdbus_signal_cb scb;
    void *ud;
    char what[160]; /* iface.member on the bus, for errors */
    int64_t timeout_ms;
};

static sdbus_errkind reply_kind = SDBUS_OK;

sdbus_errkind sdbus_reply_kind(void)
{
    return reply_kind;
}

static void slot_destroyed(void *ud)
{
    sdbus_slot *c = ud;
    if (!c->is_match && !c->fired) {
        c->fired = true;
        char e[256];
        snprintf(e, sizeof e, "%s: connection closed before the answer", c->what);
        reply_kind = SDBUS_E_CLOSED;
        c->rcb(NULL, e, c->ud);
        reply_kind = SDBUS_OK;
    }
    free(c);
}

static int on_reply(void *m, void *ud, sd_err *ret)
{
    sdbus_slot *c = ud;
    (void)ret;
    if (c->fired) return 0;
    c->fired = true;
    if (L.is_method_error(m, NULL) > 0) {
        const sd_err *e = L.get_error(m);
        char msg[768];
        const char *name = e && e->name ? e->name : "error", *text = e && e->message ? e->message : "";
        /* sd-bus answers NoReply both for its own timeout ("Method call
         * timed out") and for a connection that went ("Connection
         * terminated") */
        bool noreply = !strcmp(name, "org.freedesktop.DBus.Error.NoReply");
        if ((noreply && strstr(text, "timed out")) || !strcmp(name, "org.freedesktop.DBus.Error.Timeout") ||
            !strcmp(name, "org.freedesktop.DBus.Error.TimedOut")) {
            reply_kind = SDBUS_E_TIMEOUT;
            snprintf(msg, sizeof msg, "%s: no answer within %lld ms", c->what, (long long)c->timeout_ms);
        } else if (noreply || c->b->dead) {
            reply_kind = SDBUS_E_CLOSED;
            snprintf(msg, sizeof msg, "%s: the connection was lost before the answer: %s", c->what,
                     *text ? text : name);
        } else {
            reply_kind = SDBUS_E_METHOD;
            snprintf(msg, sizeof msg, "%s: %s: %s", c->what, name, *text ? text : "failed");
        }
        c->rcb(NULL, msg, c->ud);
    } else {
        reply_kind = SDBUS_OK;
        c->rcb(m, NULL, c->ud);
    }
    reply_kind = SDBUS_OK;
    return 0;
}

int sdbus_call_async(sdbus *b, const char *dest, const char *path, const char *iface, const char *member,
                     int64_t timeout_ms, sdbus_reply_cb cb, void *ud, char *err, size_t errlen, const char *types,
                     ...)
{
    if (b->dead) {
        errf(err, errlen, "%s.%s on the %s bus: the connection was lost", iface, member, sdbus_scope(b));
        return -1;
    }
    va_list ap;
    va_start(ap, types);
    void *m = build_call(b, dest, path, iface, member, err, errlen, types, ap);
    va_end(ap);
    if (!m) return -1;
    sdbus_slot *c = xcalloc(1, sizeof *c);
    c->b = b;
    c->rcb = cb;
    c->ud = ud;
    c->timeout_ms = timeout_ms;
    snprintf(c->what, sizeof c->what, "%s.%s on the %s bus", iface, member, sdbus_scope(b));
    void *slot = NULL;
    uint64_t usec = timeout_ms > 0 ? (uint64_t)timeout_ms * 1000 : 1;
    int r = L.call_async(b->bus, &slot, m, on_reply, c, usec);
    L.msg_unref(m);
    if (r < 0) {
        errf(err, errlen, "%s: cannot send: %s", c->what, strerror(-r));
        free(c);
        return -1;
    }
    /* the bus owns the slot; c goes with it, after the answer (or the close) */
    L.slot_set_destroy(slot, slot_destroyed);
    L.slot_set_floating(slot, 1);
    L.slot_unref(slot);
    rearm(b);
    return 0;
}

static int on_signal(void *m, void *ud, sd_err *ret)
{
    sdbus_slot *c = ud;
    (void)ret;
    c->scb(m, c->ud);
    return 0;
}

static int on_match_installed(void *m, void *ud, sd_err *ret)
{
    sdbus_slot *c = ud;
    (void)ret;
    if (L.is_method_error(m, NULL) > 0) {
        const sd_err *e = L.get_error(m);
        /* sd-bus disconnects the slot itself; nothing more will come */
        fprintf(stderr, "gpumod: %s: cannot add a signal match: %s\n", c->what, e && e->message ? e->message : "?");
    }
    return 0;
}

int sdbus_match_signal(sdbus *b, sdbus_slot **out, const char *sender, const char *path, const char *iface,
                       const char *member, sdbus_signal_cb cb, void *ud, char *err, size_t errlen)
{
    *out = NULL;
    if (b->dead) {
        errf(err, errlen, "match on %s.%s on the %s bus: the connection was lost", iface, member ? member : "*",
             sdbus_scope(b));
        return -1;
    }
    sdbus_slot *c = xcalloc(1, sizeof *c);
    c->b = b;
    c->is_match = true;
    c->scb = cb;
    c->ud = ud;
    snprintf(c->what, sizeof c->what, "%s.%s on the %s bus", iface, member ? member : "*", sdbus_scope(b));
    int r = L.match_signal_async(b->bus, &c->slot, sender, path, iface, member, on_signal, on_match_installed, c);
    if (r < 0) {
        errf(err, errlen, "%s: cannot add a signal match: %s", c->what, strerror(-r));
        free(c);
        return -1;
    }
    rearm(b);
    *out = c;
    return 0;
}

void sdbus_slot_free(sdbus_slot *s)
{
    if (!s) return;
    if (s->slot) L.slot_unref(s->slot);
    free(s);
}

/* ------------------------------------------------------------------ */
/* reading */

int sdbus_msg_read_basic(sdbus_msg *m, char type, void *p, char *err, size_t errlen)
{
    int r = L.read_basic(m, type, p);
    if (r <= 0) {
        errf(err, errlen, "cannot read a '%c' from the message: %s", type, r == 0 ? "no more arguments" : strerror(-r));
        return -1;
    }
    return 0;
}

const char *sdbus_msg_path(sdbus_msg *m)
{
    return L.get_path(m);
}

const char *sdbus_msg_member(sdbus_msg *m)
{
    return L.get_member(m);
}

static void prop_add(sdbus_props *out, const char *name, sdbus_prop *pv)
{
    for (size_t i = 0; i < out->n; i++)
        if (!strcmp(out->v[i].name, name)) { /* a later value replaces it */
            free(out->v[i].s);
            pv->name = out->v[i].name;
            out->v[i] = *pv;
            return;
        }
    out->v = xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    pv->name = xstrdup(name);
    out->v[out->n++] = *pv;
}

/* The variant at the read position into out as name. */
static int read_variant(void *m, const char *name, sdbus_props *out, char *err, size_t errlen)
{
    char t = 0;
    const char *contents = NULL;
    int r = L.peek_type(m, &t, &contents);
    if (r <= 0 || t != 'v' || !contents) {
        errf(err, errlen, "property '%s': expected a variant", name);
        return -1;
    }
    sdbus_prop pv = {0};
    if (!strcmp(contents, "(uo)")) { /* a unit's Job: id in i, path in s */
        uint32_t id = 0;
        const char *jp = NULL;
        if (L.enter(m, 'v', contents) <= 0 || L.enter(m, 'r', "uo") <= 0 || L.read_basic(m, 'u', &id) <= 0 ||
            L.read_basic(m, 'o', &jp) <= 0) {
            errf(err, errlen, "property '%s': cannot read its '(uo)' value", name);
            return -1;
        }
        L.exit_container(m);
        L.exit_container(m);
        pv.type = 'r';
        pv.i = id;
        pv.u = id;
        pv.s = xstrdup(jp ? jp : "");
        prop_add(out, name, &pv);
        return 0;
    }
    if (strlen(contents) != 1 || !strchr("sobyqnuixt", contents[0])) {
        r = L.skip(m, "v");
        if (r < 0) {
            errf(err, errlen, "property '%s': cannot skip its '%s' value: %s", name, contents, strerror(-r));
            return -1;
        }
        prop_add(out, name, &pv);
        return 0;
    }
    char ct = contents[0];
    r = L.enter(m, 'v', contents);
    if (r <= 0) {
        errf(err, errlen, "property '%s': cannot open its variant", name);
        return -1;
    }
    union {
        const char *s;
        uint8_t y;
        int b;
        uint16_t q;
        int16_t n;
        uint32_t u;
        int32_t i;
        int64_t x;
        uint64_t t;
    } val;
    memset(&val, 0, sizeof val);
    r = L.read_basic(m, ct, &val);
    if (r <= 0) {
        errf(err, errlen, "property '%s': cannot read its '%c' value", name, ct);
        return -1;
    }
    pv.type = ct;
    switch (ct) {
    case 's':
    case 'o': pv.s = xstrdup(val.s ? val.s : ""); break;
    case 'b': pv.i = val.b ? 1 : 0; break;
    case 'y': pv.u = val.y; break;
    case 'q': pv.u = val.q; break;
    case 'n': pv.i = val.n; break;
    case 'u': pv.u = val.u; break;
    case 'i': pv.i = val.i; break;
    case 'x': pv.i = val.x; break;
    case 't': pv.u = val.t; break;
    default: break;
    }
    if (ct == 'y' || ct == 'q' || ct == 'u' || ct == 't') pv.i = pv.u > INT64_MAX ? INT64_MAX : (int64_t)pv.u;
    L.exit_container(m);
    prop_add(out, name, &pv);
    return 0;
}

int sdbus_msg_read_props(sdbus_msg *m, sdbus_props *out, char *err, size_t errlen)
{
    int r = L.enter(m, 'a', "{sv}");
    if (r <= 0) {
        errf(err, errlen, "expected a{sv} (properties)");
        return -1;
    }
    while ((r = L.enter(m, 'e', "sv")) > 0) {
        const char *name = NULL;
        if (L.read_basic(m, 's', &name) <= 0 || !name) {
            errf(err, errlen, "a property without a name");
            return -1;
        }
        if (read_variant(m, name, out, err, errlen)) return -1;
        L.exit_container(m);
    }
    if (r < 0) {
        errf(err, errlen, "cannot read the properties: %s", strerror(-r));
        return -1;
    }
    L.exit_container(m);
    return 0;
}

int sdbus_msg_read_variant(sdbus_msg *m, const char *name, sdbus_props *out, char *err, size_t errlen)
{
    return read_variant(m, name, out, err, errlen);
}

const sdbus_prop *sdbus_props_get(const sdbus_props *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->v[i].name, name)) return &p->v[i];
    return NULL;
}

void sdbus_props_release(sdbus_props *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].name);
        free(p->v[i].s);
    }
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

char *sdbus_unit_path(const char *unit)
{
    static const char hex[] = "0123456789abcdef";
    buf b = BUF_INIT;
    buf_adds(&b, "/org/freedesktop/systemd1/unit/");
    if (!*unit) buf_addc(&b, '_');
    for (const unsigned char *p = (const unsigned char *)unit; *p; p++) {
        bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9' && p != (const unsigned char *)unit);
        if (keep) {
            buf_addc(&b, (char)*p);
        } else {
            buf_addc(&b, '_');
            buf_addc(&b, hex[*p >> 4]);
            buf_addc(&b, hex[*p & 15]);
        }
    }
    return buf_detach(&b);
}
