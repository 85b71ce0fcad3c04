/* pidlock.h - one daemon per state directory: an flock on
 * <state_dir>/gpumod.lock holding the owner's pid.  The kernel drops the
 * lock when the process dies, however it dies, so a stale file never
 * blocks a restart and no pid is ever guessed alive. */
#ifndef GPUMOD_PIDLOCK_H
#define GPUMOD_PIDLOCK_H

#include <stddef.h>
#include <sys/types.h>

#define PIDLOCK_FILE "gpumod.lock"

/* 0 with *fd held (keep it open for the daemon's life, close-on-exec);
 * 1 when another process holds it (*holder = its pid, 0 if unreadable);
 * -1 on error (err set). */
int pidlock_acquire(const char *state_dir, int *fd, pid_t *holder, char *err, size_t errlen);
/* The pid holding the lock, 0 when none does. */
pid_t pidlock_holder(const char *state_dir);

#endif
