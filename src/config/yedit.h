/* yedit.h - change one scalar of a YAML file's text, keeping every other
 * byte (comments, order, blank lines, quoting, line endings), and show a
 * change as a unified diff.  `gpumod tune --apply` writes its winners into
 * a preset with these (issue 18): libyaml's emitter would drop comments.
 *
 * Pure: text in, text out; the caller reads and writes the file. */
#ifndef GPUMOD_YEDIT_H
#define GPUMOD_YEDIT_H

#include <stddef.h>

#include "util/buf.h"

/* Set the scalar at path (keys from the top-level mapping down, NULL-
 * terminated: {"unit_vars", "threads", NULL}) of the YAML document text
 * to value, which is YAML scalar text already (`8`, `q8_0`, `"1"`; see
 * yedit_quote).  The result replaces out's contents; 0, or -1 with err
 * set (what, the line, what to do) and out empty.
 *
 *  - a key written in a block mapping: its value's scalar is replaced in
 *    place (a comment after it on the line is kept); in a flow mapping
 *    (`{a: 1, b: 2}`) likewise;
 *  - a key missing from a block mapping: a line `key: value` is added
 *    after the mapping's last content line, at its keys' indentation; a
 *    missing section is created as a block (`unit_vars:` and the key
 *    indented below it, at the indentation step the file uses, 2 when
 *    it shows none); a section whose value is null (`env:`) gets its
 *    first key below it; a key missing from a flow mapping is added
 *    before the closing brace;
 *  - note (one line, no line break), when not NULL, becomes a comment
 *    `# note` on the line above the changed or added key, at that line's
 *    indentation; a comment line already there whose text starts with
 *    note_prefix (not NULL, not empty) is replaced, so that applying
 *    again does not pile notes up.
 *
 * Refused: invalid YAML; a document that is not a mapping (an empty one
 * is taken as an empty mapping); a value there that is a mapping or a
 * list; a block scalar (| or >) or a scalar spanning lines; an alias, an
 * anchored or tagged node on the path; a key that only a merge key
 * (`<<`) or an alias brings in; a value that is not one scalar.  The
 * result is parsed again and must hold the new value at path and be
 * unchanged everywhere else, or it is refused too. */
int yedit_set(const char *text, size_t len, const char *const *path, const char *value,
              const char *note, const char *note_prefix, buf *out, char *err, size_t errlen);

typedef struct yedit_op {
    const char *const *path;
    const char *value;
    const char *note;        /* NULL: none */
    const char *note_prefix; /* NULL: never replace an earlier note */
} yedit_op;

/* yedit_set for each op in order, each over the previous result (all or
 * nothing: on an error out is empty and err names the op's path). */
int yedit_apply(const char *text, size_t len, const yedit_op *ops, size_t nops, buf *out, char *err,
                size_t errlen);

/* Append s (UTF-8) as YAML scalar text that reads back as the string s in
 * a block or a flow mapping: plain when that is safe, else double-quoted
 * with escapes.  "8", "1.5", "on", "yes", "null", "~", "", " x", "a: b",
 * "a #b", "x,y" are quoted; "q8_0", "/srv/hf", "bf16" are not. */
void yedit_quote(const char *s, buf *out);

/* The unified diff of a and b by lines (---/+++ headers with the given
 * names, @@ hunks with 3 lines of context, "\ No newline at end of file"
 * as diff(1) writes it), appended to out; nothing when they are equal.
 * Minimal (Myers) up to a bound of changed lines; past it, still a
 * correct diff, with the differing middle as one block. */
void yedit_diff(const char *a, size_t alen, const char *b, size_t blen, const char *name_a,
                const char *name_b, buf *out);

#endif
