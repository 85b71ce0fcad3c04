/* schema.h - declarative field tables that drive parsing, defaults,
 * validation, `config show` and the reference docs of every YAML surface.
 *
 * A table is an array of `field`, ended by a {NULL} entry.  Offsets are
 * absolute within the object the caller passes, so nested sections
 * (F_SECTION) share the object and only group the keys. */
#ifndef GPUMOD_SCHEMA_H
#define GPUMOD_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/yaml.h"
#include "util/buf.h"

typedef enum {
    F_STR,      /* char* */
    F_INT,      /* int64_t */
    F_FLOAT,    /* double */
    F_BOOL,     /* bool */
    F_TRI,      /* tri: bool, or "auto" for unset */
    F_DURATION, /* int64_t ms: integer seconds or "250ms" "30s" "10m" "1h" */
    F_ENUM,     /* int (enum), names[] */
    F_STRV,     /* strv: list of strings */
    F_ENV,      /* kvlist: mapping of NAME: scalar */
    F_SECTION,  /* nested mapping, sub table, same object */
    F_CUSTOM,   /* fn parses; show_fn shows */
} ftype;

enum {
    FL_REQUIRED = 1 << 0,
    FL_IGNORED = 1 << 1, /* accepted, not acted on: a warning */
    FL_TEXT = 1 << 2,    /* free text: tabs and newlines allowed */
    FL_PATH = 1 << 3,    /* expand a leading ~/ */
    FL_ENVEXP = 1 << 4,  /* expand $VAR / ${VAR} as os.path.expandvars */
    FL_NULLABLE_INT = 1 << 5, /* null or "auto" -> -1 */
};

typedef struct schema_ctx {
    const char *file;
    diags *d;
    char subject[160]; /* "preset 'qwen3'", prefixed to messages */
    bool failed;
} schema_ctx;

typedef struct field field;
typedef void (*field_parse_fn)(schema_ctx *c, const field *f, const ynode *n, void *obj);
typedef void (*field_show_fn)(buf *out, const field *f, const void *obj, bool json);

struct field {
    const char *key;
    ftype type;
    size_t off;
    double min, max;           /* F_INT, F_FLOAT, F_DURATION (ms); {0, 0}: unbounded */
    const char *const *names;  /* F_ENUM, NULL-terminated */
    const field *sub;          /* F_SECTION */
    field_parse_fn parse;      /* F_CUSTOM */
    field_show_fn show;        /* F_CUSTOM (optional) */
    unsigned flags;
    const char *deflt;         /* default as YAML text; NULL: zero / unset */
    const char *doc;           /* one line for config show and the reference docs */
};

/* Fill obj with the table's defaults (recursing into sections). */
void schema_defaults(const field *tab, void *obj);
/* Parse a mapping into obj.  Unknown keys are errors with "did you mean". */
void schema_parse(schema_ctx *c, const field *tab, const ynode *map, void *obj);
/* Parse one value for one field. */
void schema_parse_value(schema_ctx *c, const field *f, const ynode *n, void *obj);
/* Free what parsing allocated (strings, vectors). */
void schema_release(const field *tab, void *obj);

/* Emit the resolved values.  YAML-like text (indent spaces) or a JSON
 * object body (without braces when inner). */
void schema_show_text(buf *out, const field *tab, const void *obj, int indent);
void schema_show_json(buf *out, const field *tab, const void *obj);
/* A string list as a JSON array; an ordered map as a JSON object, or as
 * an indented YAML block (text). */
void schema_show_strv(buf *out, const strv *v, bool json);
void schema_show_kvlist(buf *out, const kvlist *kl, bool json, int indent);
/* Markdown reference table rows: | key | type | default | doc | */
void schema_doc_markdown(buf *out, const field *tab, const char *prefix);
/* Append text with table pipes escaped. */
void schema_md_text(buf *out, const char *s);

void schema_error(schema_ctx *c, const ynode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void schema_warn(schema_ctx *c, const ynode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Helpers shared with the custom parsers. */
const char *schema_did_you_mean(const char *key, const char *const *cands, size_t n);
bool text_has_control(const char *s, bool allow_newlines);
char *expand_vars(const char *s);  /* $VAR and ${VAR}; unknown names stay as written */
char *expand_home(const char *s);  /* leading ~/ */
int parse_duration_ms(const char *s, int64_t *out);
int parse_int64(const char *s, int64_t *out);
const char *ftype_name(const field *f);

#endif
