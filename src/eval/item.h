/* item.h - one suite item from its mapping: the key tables of native and
 * imported items, and what each scorer requires (suite.h describes the
 * format).  Used by suite.c, which reads the files; YAML and JSONL items
 * both arrive here as ynode mappings, so both are checked by the same
 * tables and say their mistakes alike. */
#ifndef GPUMOD_EVAL_ITEM_H
#define GPUMOD_EVAL_ITEM_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "config/yaml.h"
#include "eval/suite.h"

/* A file's defaults (the YAML header's `defaults`): -1 / NULL when unset. */
typedef struct item_defaults {
    int scorer;
    int64_t max_tokens;
    const char *category; /* never NULL: the file's name when the header sets none */
    const char *system;
} item_defaults;

/* The item at mapping m of file (borrowed: it->pos.file points to it).
 * genid is the id when the item has none ("smoke.yaml:12").  0 with *it
 * filled, or -1 with the errors added to d and of *it only id and pos
 * (so that a repeated id is found even where an item failed); release it
 * with item_release either way. */
int item_parse(eval_item *it, const ynode *m, const char *file, const char *genid, const item_defaults *def,
               diags *d);
void item_release(eval_item *it);

/* A YAML value as JSON: plain scalars resolve as YAML 1.1 does (null,
 * booleans, numbers), quoted ones are strings.  Caller frees. */
cJSON *ynode_to_json(const ynode *n);

#endif
