/* sdbus.h - the little of sd-bus gpumod needs, through dlopen.
 *
 * gpumod never links libsystemd (docs/startup.md: every CLI call would pay
 * for loading it); the commands that talk to systemd load
 * libsystemd.so.0 on first use (GPUMOD_LIBSYSTEMD names another file, for
 * tests).  Every call has a deadline; errors are text: what was called, on
 * which bus, and systemd's own error name and message. */
#ifndef GPUMOD_SDBUS_H
#define GPUMOD_SDBUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sdbus sdbus;
typedef struct sdbus_msg sdbus_msg; /* an sd_bus_message, opaque */

/* Load libsystemd (once per process); 0, or -1 with err. */
int sdbus_load(char *err, size_t errlen);

/* Connect to the user bus (the caller's systemd --user) or the system
 * bus, connection and authentication within SDBUS_CONNECT_TIMEOUT_MS.
 * 0 with *out set, or -1 with err (a timeout: "the user bus (ADDRESS)
 * timed out after N s ..."). */
#define SDBUS_CONNECT_TIMEOUT_MS 15000
int sdbus_open(sdbus **out, bool user, char *err, size_t errlen);
/* The same within timeout_ms. */
int sdbus_open_within(sdbus **out, bool user, int64_t timeout_ms, char *err, size_t errlen);
void sdbus_close(sdbus *b);
/* "user" or "system" */
const char *sdbus_scope(const sdbus *b);

/* Call dest path iface.member with arguments as sd_bus_message_append
 * takes them (types NULL or "": none), waiting at most timeout_ms.  reply
 * (may be NULL): the reply, freed with sdbus_msg_free.  0, or -1 with err
 * naming the member, the bus and systemd's error. */
int sdbus_call(sdbus *b, const char *dest, const char *path, const char *iface, const char *member,
               int64_t timeout_ms, sdbus_msg **reply, char *err, size_t errlen, const char *types, ...);
void sdbus_msg_free(sdbus_msg *m);

/* org.freedesktop.systemd1.Manager.Reload: systemd reads its unit files
 * again (systemctl daemon-reload). */
int sdbus_systemd_reload(sdbus *b, int64_t timeout_ms, char *err, size_t errlen);

/* ---- on a libuv loop (the daemon's systemd runner) ----
 *
 * sdbus_attach drives the connection from the loop: a uv_poll_t on the
 * bus's fd with the events sd-bus asks for, a uv_timer_t at its next
 * deadline, sd_bus_process until it has nothing left.  A blocking
 * sdbus_call still works on an attached bus (what it read meanwhile is
 * dispatched on the next turn).  on_disconnect (may be NULL) runs once
 * when the connection is lost; every call still pending has been answered
 * with an error by then.  The loop must outlive the bus; sdbus_close
 * detaches (the handles close on the loop's next turn). */
struct uv_loop_s;
int sdbus_attach(sdbus *b, struct uv_loop_s *loop, void (*on_disconnect)(const char *why, void *ud), void *ud,
                 char *err, size_t errlen);
bool sdbus_connected(const sdbus *b);

typedef struct sdbus_slot sdbus_slot;
/* A reply, or err (NULL on success) naming the member, the bus and the
 * error: systemd's, "no answer within N ms", or "connection closed".
 * reply is borrowed for the callback (NULL when err).  Called exactly
 * once for every call that was sent, also when the bus is closed. */
typedef void (*sdbus_reply_cb)(sdbus_msg *reply, const char *err, void *ud);
/* Inside an sdbus_reply_cb: what kind of answer err is (SDBUS_OK when
 * err is NULL): systemd's error, the call's deadline passed, or the
 * connection went before the answer (err then says so, not "no answer"). */
typedef enum { SDBUS_OK, SDBUS_E_METHOD, SDBUS_E_TIMEOUT, SDBUS_E_CLOSED } sdbus_errkind;
sdbus_errkind sdbus_reply_kind(void);
/* As sdbus_call, but the answer comes to cb on the loop.  0, or -1 with
 * err (cb is then never called). */
int sdbus_call_async(sdbus *b, const char *dest, const char *path, const char *iface, const char *member,
                     int64_t timeout_ms, sdbus_reply_cb cb, void *ud, char *err, size_t errlen, const char *types,
                     ...);
/* Signals from sender (may be NULL) on path (NULL: any) of iface.member
 * (member NULL: any) to cb, msg borrowed, until sdbus_slot_free.  The
 * match is installed asynchronously (the bus daemon's AddMatch). */
typedef void (*sdbus_signal_cb)(sdbus_msg *msg, void *ud);
int sdbus_match_signal(sdbus *b, sdbus_slot **out, const char *sender, const char *path, const char *iface,
                       const char *member, sdbus_signal_cb cb, void *ud, char *err, size_t errlen);
void sdbus_slot_free(sdbus_slot *s);

/* ---- reading messages ---- */

/* The next argument, of basic type type ('s', 'o', 'u', 'i', 't', 'x',
 * 'b', 'y', 'q', 'n', 'd'); for 's' and 'o' *p is a const char * borrowed
 * from the message.  0, or -1 with err. */
int sdbus_msg_read_basic(sdbus_msg *m, char type, void *p, char *err, size_t errlen);
const char *sdbus_msg_path(sdbus_msg *m);
const char *sdbus_msg_member(sdbus_msg *m);

/* One property value: integers in i (signed types and 'b') or u
 * (unsigned), strings ('s', 'o') copied in s; a '(uo)' (a unit's Job)
 * as type 'r' with the id in i and u and the path in s; other types are
 * skipped. */
typedef struct sdbus_prop {
    char *name;
    char type; /* 0: a type not kept */
    int64_t i;
    uint64_t u;
    char *s;
} sdbus_prop;
typedef struct sdbus_props {
    sdbus_prop *v;
    size_t n;
} sdbus_props;
/* Append the properties of the a{sv} at the read position (a GetAll
 * reply; a PropertiesChanged signal after its interface name: read that
 * 's' first).  0, or -1 with err. */
int sdbus_msg_read_props(sdbus_msg *m, sdbus_props *out, char *err, size_t errlen);
/* The variant at the read position (a Get reply) as property name. */
int sdbus_msg_read_variant(sdbus_msg *m, const char *name, sdbus_props *out, char *err, size_t errlen);
const sdbus_prop *sdbus_props_get(const sdbus_props *p, const char *name);
void sdbus_props_release(sdbus_props *p);

/* The object path systemd gives a unit: /org/freedesktop/systemd1/unit/
 * and the name with every byte outside [A-Za-z0-9] as _XX (lowercase
 * hex), a leading digit too (sd_bus_path_encode).  Caller frees. */
char *sdbus_unit_path(const char *unit);

#endif
