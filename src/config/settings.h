/* settings.h - the gpumod.yaml field table (parsing, show, docs). */
#ifndef GPUMOD_SETTINGS_H
#define GPUMOD_SETTINGS_H

#include "config/schema.h"

extern const field settings_fields[];

#endif
