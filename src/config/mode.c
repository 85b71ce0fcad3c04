/* mode.c - one file of modes/: a named set of presets that run together, in
 * order.  The Python project's Mode schema plus nothing: the start order
 * is the list order (start_first presets aside, a plan's concern). */
#include "config/mode.h"
#include "config/schema.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M(m) offsetof(mode, m)

const field mode_fields[] = {
    {"id", F_STR, M(id), .flags = FL_REQUIRED, .doc = "unique mode id ('none' is reserved: the empty mode)"},
    {"name", F_STR, M(name), .doc = "display name (default: the id)"},
    {"description", F_STR, M(description), .flags = FL_TEXT, .doc = "free text"},
    {"services", F_STRV, M(services), .flags = FL_REQUIRED, .doc = "preset ids, in start order"},
    {"total_vram_mb", F_INT, M(total_vram_mb), 0, 16777216, .flags = FL_IGNORED | FL_NULLABLE_INT,
     .deflt = "null", .doc = "gpumod computes each service's need itself"},
    {NULL},
};

int mode_parse(mode *out, const ynode *root, const char *file, diags *d)
{
    mode m;
    memset(&m, 0, sizeof m);
    schema_defaults(mode_fields, &m);
    m.pos = ypos(file, root);
    schema_ctx c = {file, d, "", false};
    if (!root || root->kind != Y_MAP) {
        schema_error(&c, root, "a mode file holds one mapping (id, name, services), found %s", ykind_name(root));
    } else {
        const ynode *id = ymap_get(root, "id");
        if (id && id->kind == Y_SCALAR && !text_has_control(id->s, false))
            snprintf(c.subject, sizeof c.subject, "mode '%s'", id->s);
        schema_parse(&c, mode_fields, root, &m);
        const ynode *sv = ymap_get(root, "services");
        if (sv && sv->kind == Y_SEQ) {
            /* positions of the entries that were kept, for cross-file errors */
            m.service_pos = xcalloc(m.services.n + 1, sizeof *m.service_pos);
            size_t k = 0;
            for (size_t i = 0; i < sv->n && k < m.services.n; i++)
                if (sv->items[i]->kind == Y_SCALAR && !strcmp(sv->items[i]->s, m.services.v[k]))
                    m.service_pos[k++] = ypos(file, sv->items[i]);
        }
        if (m.id && !strcmp(m.id, "none"))
            schema_error(&c, ymap_get(root, "id"), "mode id 'none' is reserved: it is the empty mode");
        if (!m.name && m.id) m.name = xstrdup(m.id);
    }
    *out = m;
    return c.failed ? -1 : 0;
}

void mode_release(mode *m)
{
    schema_release(mode_fields, m);
    free(m->service_pos);
    memset(m, 0, sizeof *m);
}

void mode_show(buf *out, const mode *m, bool json)
{
    if (json)
        schema_show_json(out, mode_fields, m);
    else
        schema_show_text(out, mode_fields, m, 0);
}
