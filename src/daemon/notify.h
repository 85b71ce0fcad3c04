/* notify.h - systemd's readiness protocol (sd_notify) without libsystemd:
 * one datagram to $NOTIFY_SOCKET ("READY=1", "STOPPING=1", "WATCHDOG=1",
 * "STATUS=..."), so Type=notify units know when the daemon is up. */
#ifndef GPUMOD_NOTIFY_H
#define GPUMOD_NOTIFY_H

#include <stddef.h>

/* 1 sent, 0 when NOTIFY_SOCKET is unset (not under systemd), -1 on error. */
int notify_send(const char *state, char *err, size_t errlen);
/* The watchdog interval systemd asks for ($WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or ours), in ms; 0 when none. */
long long notify_watchdog_ms(void);

#endif
