/* preset.h - parse one preset file's tree into a typed preset. */
#ifndef GPUMOD_PRESET_H
#define GPUMOD_PRESET_H

#include <stdbool.h>

#include "config/config.h"
#include "config/yaml.h"
#include "util/buf.h"

/* Fill out from root; every problem goes to d.  Returns -1 when the
 * preset has errors (it is still filled, flagged has_errors). */
int preset_parse(preset *out, const ynode *root, const char *file, diags *d);
void preset_release(preset *p);
/* Make relative file paths absolute against base (the config dir). */
void preset_resolve_paths(preset *p, const char *base);
void preset_show(buf *out, const preset *p, bool json);
/* The driver options resolved from unit_vars, for this preset's driver. */
void preset_show_unit_vars(buf *out, const preset *p, bool json);
void preset_doc_markdown(buf *out);
void unit_vars_doc_markdown(buf *out);

#endif
