/* check.h - the checks that need more than one file (ids, aliases, modes,
 * ports) and those that look at the machine (files, binaries, flags). */
#ifndef GPUMOD_CHECK_H
#define GPUMOD_CHECK_H

#include "config/config.h"

void config_check_cross(config *cfg);
/* What only `config check` and `config show` need: every preset's argv
 * built and looked at (a repeated flag, a placeholder the driver cannot
 * fill).  Left out of the start paths (preflight) for speed. */
void config_lint(config *cfg);
/* Model files and directories exist, driver binaries are found in PATH,
 * and every flag gpumod would pass is one the installed binary lists in
 * its --help (cached by path and mtime under <state_dir>/cache). */
void config_check_files(config *cfg);
/* Absolute path of a program name looked up in PATH (or the name itself
 * when it contains a '/'), if it is an executable file.  Caller frees. */
char *find_program(const char *name);

#endif
