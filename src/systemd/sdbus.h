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

typedef struct sdbus sdbus;
typedef struct sdbus_msg sdbus_msg; /* an sd_bus_message, opaque */

/* Load libsystemd (once per process); 0, or -1 with err. */
int sdbus_load(char *err, size_t errlen);

/* Connect to the user bus (the caller's systemd --user) or the system
 * bus.  0 with *out set, or -1 with err. */
int sdbus_open(sdbus **out, bool user, char *err, size_t errlen);
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

#endif
