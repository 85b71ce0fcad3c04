/* overrides.h - a start's overrides: preset keys and environment
 * variables a single start (or restart, or a preflight's dry run) runs
 * with instead of the preset's, as the control API takes them
 * ({"overrides": {"context_size": 4096, "threads": 8, "env": {...}}}).
 *
 * The keys are the preset's own (unit_vars keys and the top-level
 * context_size), each checked by the field the preset file is parsed with
 * (config/preset.c: same type, range, driver and value checks), so an
 * override can hold nothing a preset file could not.  Only the keys that
 * tune a run are taken (docs/configuration.md "Start overrides" lists
 * them); the rest of a preset (its model, port, devices) is what it is.
 *
 * Layer 1: the daemon parses and applies them, the tune client validates
 * a variant and applies it to its own copy of the preset. */
#ifndef GPUMOD_OVERRIDES_H
#define GPUMOD_OVERRIDES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/buf.h"

struct cJSON;
struct field;

/* One key's value, typed as its field: i for integers (n_gpu_layers: -1
 * is all), booleans and tri-states (TRI_ON, TRI_OFF, TRI_UNSET for
 * "auto"); d for numbers; s for strings (owned). */
typedef struct ov_item {
    const char *key;        /* the canonical name (static) */
    const struct field *f;  /* the preset's field (static) */
    int64_t i;
    double d;
    char *s;
} ov_item;

/* Zeroed is none.  Items are in the order of the key table, env in the
 * order given; both owned (overrides_release). */
typedef struct overrides {
    ov_item *v;
    size_t n;
    kvlist env; /* NAME -> value, merged over the preset's env */
} overrides;

#define OVERRIDES_ENV_MAX 64          /* variables in one env override */
#define OVERRIDES_ENV_VALUE_MAX 4096  /* bytes in one value */

/* Parse obj (the "overrides" member: an object or JSON null) for a preset
 * of driver (-1: not known, e.g. no such preset: the keys and values are
 * checked, not the driver).  null, and a key whose value is null, keep the
 * preset's.  0, or -1 with err naming the key, the value and what was
 * expected ("overrides.batch_size: the vllm driver takes no batch_size
 * (keys for vllm: ...)"); out is empty after -1.  Caller releases out. */
int overrides_parse(const struct cJSON *obj, int driver, overrides *out, char *err, size_t errlen);
bool overrides_any(const overrides *ov);
/* Deep copy into dst (released first); src NULL copies none. */
void overrides_copy(overrides *dst, const overrides *src);
void overrides_release(overrides *ov);
/* The same keys with the same values (env as a set). */
bool overrides_equal(const overrides *a, const overrides *b);

/* The same shape as the input, canonical key names, keys in table order;
 * "null" when none. */
void overrides_json(buf *out, const overrides *ov);
/* For people: "context_size 512, threads 8, env FOO=1" ("" when none). */
void overrides_text(buf *out, const overrides *ov);

/* p with ov applied, into out: a shallow copy of p whose overridden
 * fields are ov's, whose env is a new list (p's, then ov's over it), and
 * which passes the preset's checks across keys (ubatch_size <= batch_size).
 * out borrows every pointer but env from p and ov: use it only while both
 * live, and release it with overrides_applied_release (its env), also
 * after -1.  -1 with err when p's driver takes a key of ov (the
 * configuration changed since ov was parsed) or a check fails. */
int overrides_apply(const preset *p, const overrides *ov, preset *out, char *err, size_t errlen);
void overrides_applied_release(preset *out);

/* The keys of ov whose value differs from what p has (p: what runs,
 * with its own overrides applied), for a conflict's message: have gets
 * "context_size 512" (or "no context_size set"), want "context_size
 * 1024", several joined by ", ".  false when ov asks nothing p does not
 * already have. */
bool overrides_differ(const preset *p, const overrides *ov, buf *have, buf *want);

/* The CLI's --set KEY=VALUE (env false) or --env NAME=VALUE (env true),
 * added to the JSON object obj as the daemon takes it: the value typed by
 * the key's field (integers and numbers as JSON numbers, booleans as
 * true/false, n_gpu_layers "all", flash_attn on/off/auto, strings as
 * strings), env values into obj's "env" object.  -1 with err (no '=', an
 * unknown key, a value of the wrong type, a key given twice). */
int overrides_add_arg(struct cJSON *obj, const char *arg, bool env, char *err, size_t errlen);

/* The key table for docs/configuration.md: | key | drivers | type | range |. */
void overrides_doc_markdown(buf *out);

#endif
