/* install.h - write the files gpumod owns in a systemd unit directory.
 *
 * A file is gpumod's when its first line is the marker (core/unit.h);
 * any other existing file is left alone unless force.  A write is atomic
 * (a temporary file in the same directory, fsync, rename, fsync of the
 * directory), so systemd never reads half a unit.  Before a file changes,
 * the caller gets a unified diff of old against new. */
#ifndef GPUMOD_INSTALL_H
#define GPUMOD_INSTALL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef enum { INSTALL_SAME, INSTALL_NEW, INSTALL_CHANGED } install_change;

/* The directory units go to: dir when given (--unit-dir), else
 * $GPUMOD_UNIT_DIR, else for user ${XDG_CONFIG_HOME:-~/.config}/systemd/user
 * and for system /etc/systemd/system.  Caller frees; NULL with err when
 * neither HOME nor XDG_CONFIG_HOME is set for a user directory. */
char *install_unit_dir(bool user, const char *dir, char *err, size_t errlen);

/* Compare text with the file at path: *chg says how it differs, and diff
 * gets the unified diff (a new file: against /dev/null).  apply: write it
 * (creating the directories), unless it is the same.  A file without the
 * marker is refused (-1, err says --force) unless force.  A symlink is
 * refused, force or not (a link to /dev/null as masked).  -1 with err on
 * any I/O error. */
int install_file(const char *path, const char *text, bool apply, bool force, install_change *chg, buf *diff,
                 char *err, size_t errlen);

/* Write text to path atomically, mode 0644. */
int install_write_atomic(const char *path, const char *text, char *err, size_t errlen);

/* A unified diff (3 lines of context) of a against b, labelled; nothing
 * when they are equal.  A missing final newline shows as diff -u shows
 * it ("\ No newline at end of file"). */
void install_diff(buf *out, const char *a_label, const char *a, const char *b_label, const char *b);

#endif
