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

/* ---- one key at a time: a start's overrides (config/overrides.c), held
 * to the preset file's own definitions ---- */
struct field;
/* The field a preset file parses key with: a unit_vars key, or the
 * top-level context_size.  NULL: no such key. */
const struct field *preset_key_field(const char *key);
/* Whether driver acts on unit_vars key (context_size: llamacpp, vllm). */
bool preset_key_applies(const char *key, int driver);
/* Where f's value lives in p; NULL for a field whose value is kept
 * outside a preset while it loads (unit_vars.model_path, ctx_size, ...). */
void *preset_key_at(preset *p, const struct field *f);
/* The checks beyond a field's type and range, shared with overrides:
 * key cache_type_k or cache_type_v with value v (NULL: unset) one of
 * llama.cpp's KV cache types; the rules across keys (ubatch_size at most
 * batch_size).  -1 with err ("ubatch_size 4096 is larger than ..."). */
int preset_check_cache_type(const char *key, const char *v, char *err, size_t errlen);
int preset_check_across(const preset *p, char *err, size_t errlen);
void unit_vars_doc_markdown(buf *out);

#endif
