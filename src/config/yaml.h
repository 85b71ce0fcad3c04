/* yaml.h - YAML files as a small tree whose every node keeps its line and
 * column, in the YAML 1.1 dialect the Python gpumod reads.
 *
 * Built over libyaml's document API.  Aliases are resolved and `<<` merge
 * keys are applied while the tree is built (explicit keys win over merged
 * ones, earlier merge sources win over later ones, as PyYAML does); a
 * duplicate explicit key is an error.  Alias expansion is bounded, so a
 * "billion laughs" file is an error, not an allocation storm. */
#ifndef GPUMOD_YAML_H
#define GPUMOD_YAML_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "util/buf.h"

typedef enum { Y_SCALAR, Y_SEQ, Y_MAP } ykind;

typedef struct ynode ynode;
typedef struct ypair {
    ynode *key; /* always a scalar */
    ynode *val;
} ypair;

struct ynode {
    ykind kind;
    int line, col; /* 1-based */
    bool plain;    /* plain scalar: null/bool/int resolution applies */
    char *s;       /* scalar text, NUL-terminated */
    size_t len;
    ynode **items; /* Y_SEQ */
    size_t n;
    ypair *pairs;  /* Y_MAP, after merges */
    size_t npairs;
};

typedef struct ydoc {
    ynode *root;   /* NULL for an empty document */
    void *arena;
} ydoc;

/* Parse path (file is the borrowed name used in diags).  Returns 0, or -1
 * with an error diag; doc must be released either way. */
int yaml_load_file(ydoc *doc, const char *path, const char *file, diags *d);
int yaml_load_string(ydoc *doc, const char *text, size_t len, const char *file, diags *d);
/* The text of path appended to out, read as yaml_load_file reads it
 * (never blocking on a FIFO, at most 4 MiB).  0, or -1 with an error diag. */
int yaml_read_file(buf *out, const char *path, const char *file, diags *d);
/* The value of key in the top-level mapping of text, reading only as far
 * as that key: libyaml's events, no tree (a preset's id is its first line,
 * most often).  1: found, *val the scalar's text (caller frees); 0: the
 * document has no such key (empty, not a mapping, or a mapping without
 * it); -1: only yaml_load_string can tell (a merge key or an alias before
 * the key, a value that is not a scalar, invalid YAML up to it). */
int yaml_peek_key(const char *text, size_t len, const char *key, char **val);
void yaml_release(ydoc *doc);

const ynode *ymap_get(const ynode *map, const char *key);
const char *ykind_name(const ynode *n);
srcpos ypos(const char *file, const ynode *n);

/* YAML 1.1 scalar resolution (plain scalars only, as PyYAML). */
bool yscalar_is_null(const ynode *n);
int yscalar_bool(const ynode *n); /* 1, 0, or -1 when not a boolean */

#endif
