/* check.h - what `config check` (and `config show`) look at beyond the
 * files: diagnostics added to cfg->diags, which the caller sorts. */
#ifndef GPUMOD_DRIVERS_CHECK_H
#define GPUMOD_DRIVERS_CHECK_H

#include "config/config.h"

/* Every preset's argv built and looked at (a repeated flag, a placeholder
 * the driver cannot fill).  Left out of the start paths for speed. */
void drivers_lint(config *cfg);
/* Model files and directories exist, driver binaries are found in PATH,
 * and every flag gpumod would pass is one the installed binary lists in
 * its --help (cached by path and mtime under <state_dir>/cache). */
void drivers_check_files(config *cfg);
/* Absolute path of a program name looked up in PATH (or the name itself
 * when it contains a '/'), if it is an executable file.  Caller frees. */
char *find_program(const char *name);

#endif
