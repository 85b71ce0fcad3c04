/* rules.h - engine knowledge as data: flag constraints per engine and
 * GPU, each with an id, a severity, the condition, the text a person
 * reads and its source (the table is in rules.c; docs/rules.md renders
 * it).  Pure: a preset and a few GPU facts in, the rules that fire out.
 *
 * Who applies them: `gpumod config check` (refuse -> error, warn ->
 * warning, naming the preset file and the rule id) and `gpumod tune` for
 * every variant (refuse -> SKIPPED with the text, warn -> measured and
 * flagged).  A rule that needs a GPU fact (a compute capability, unified
 * memory) fires only when the fact is known: without NVML only the
 * GPU-independent rules run. */
#ifndef GPUMOD_RULES_H
#define GPUMOD_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "host/types.h"
#include "util/buf.h"

typedef enum { RULE_WARN, RULE_REFUSE } rule_severity;
extern const char *const rule_severity_names[]; /* "warn" "refuse" */

/* The GPU a preset runs on, as far as it is known; 0 / false: unknown.
 * From host/types.h's gpu_dev (cc_major, cc_minor, unified). */
typedef struct rule_host {
    int cc_major, cc_minor;
    bool unified;
} rule_host;

#define RULE_TEXT_MAX 512
typedef struct rule_hit {
    const char *id;        /* static */
    int severity;          /* rule_severity */
    char text[RULE_TEXT_MAX]; /* "<the preset's setting>: <the rule's text>" */
} rule_hit;

/* The GPU facts for p from a host snapshot: the device its `devices`
 * names first (an index or a UUID), else GPU 0.  false (h zeroed) when
 * s is NULL or has no such GPU: then pass NULL to rules_check. */
bool rules_host_of(const preset *p, const snapshot *s, rule_host *h);
/* The rules p breaks on host h (NULL: no GPU facts), in table order, at
 * most max of them into out; returns how many fired (which may exceed
 * max: only max are written). */
size_t rules_check(const preset *p, const rule_host *h, rule_hit *out, size_t max);
/* The number of rules in the table (an upper bound for rules_check). */
size_t rules_count(void);
/* The table as Markdown: id, engine, GPU, severity, text, source. */
void rules_doc_markdown(buf *out);

#endif
