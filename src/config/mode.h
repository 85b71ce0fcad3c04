/* mode.h - parse one mode file's tree. */
#ifndef GPUMOD_MODE_H
#define GPUMOD_MODE_H

#include <stdbool.h>

#include "config/config.h"
#include "config/schema.h"
#include "config/yaml.h"
#include "util/buf.h"

extern const field mode_fields[];
int mode_parse(mode *out, const ynode *root, const char *file, diags *d);
void mode_release(mode *m);
void mode_show(buf *out, const mode *m, bool json);

#endif
