/* check.h - the checks that need more than one file (ids, aliases,
 * modes, ports); config_load runs them.  The checks that look at the
 * machine (files, binaries, flags) are drivers/check.h's. */
#ifndef GPUMOD_CHECK_H
#define GPUMOD_CHECK_H

#include "config/config.h"

void config_check_cross(config *cfg);

#endif
