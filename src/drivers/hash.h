/* hash.h - the config hash of a preset: SHA-256 over a canonical form of
 * what decides its memory footprint (docs/interfaces.md "Config hash"). */
#ifndef GPUMOD_CONFIG_HASH_H
#define GPUMOD_CONFIG_HASH_H

#include <stddef.h>

#include "config/config.h"
#include "util/buf.h"

/* The canonical text (for tests and `config show -v`) and its hash, as
 * lowercase hex into out[65].  0, or -1 with err (the preset cannot be
 * built).  Reads the model file's size and mtime (stat); a missing model
 * file hashes as size -1. */
int config_hash(const preset *p, const settings *s, char out[65], buf *canonical, char *err, size_t errlen);

#endif
