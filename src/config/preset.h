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
/* The range the schema allows for a preset's integer key, into *lo and
 * *hi (a start's overrides are held to the same); false when key is no
 * integer key of a preset. */
bool preset_int_range(const char *key, int64_t *lo, int64_t *hi);
/* p with another context size (a start's override), as a shallow copy
 * into out: its pointers are p's, so out is valid only as long as p's
 * configuration (use it within the call that made it).  Both copies of
 * the size change: context_size (llama-server -c, the estimate) and
 * vllm.max_model_len (--max-model-len).  -1 with err for a driver that
 * takes no context size from gpumod (fastapi, docker, command, remote). */
int preset_with_context(const preset *p, int64_t ctx, preset *out, char *err, size_t errlen);
void unit_vars_doc_markdown(buf *out);

#endif
