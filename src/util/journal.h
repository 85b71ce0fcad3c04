/* journal.h - one message to the systemd journal, without libsystemd.
 *
 * A datagram of the journal's native protocol (MESSAGE=, PRIORITY=,
 * SYSLOG_IDENTIFIER=, one KEY=VALUE a line) to /run/systemd/journal/socket
 * (GPUMOD_JOURNAL_SOCKET names another, for tests).  For a process whose
 * stdout systemd sends elsewhere (StandardOutput=append:) that still has
 * to be heard in `journalctl -u UNIT`: systemd attributes the datagram to
 * the unit by the sender's cgroup. */
#ifndef GPUMOD_JOURNAL_H
#define GPUMOD_JOURNAL_H

#include <stdbool.h>

/* Send msg (newlines become spaces: one field, one line) at priority
 * (0 emerg .. 7 debug) under ident.  Never blocks; true when the datagram
 * was sent, false when there is no journal socket or it refused it. */
bool journal_send(const char *ident, int priority, const char *msg);

#endif
