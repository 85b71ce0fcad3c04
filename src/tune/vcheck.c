/* vcheck.c (tune) - the checks before a variant starts (vcheck.h). */
#include "tune/vcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

bool vcheck_variant(vcheck *vc, tlink *l, const tune_space *s, const tune_variant *v, tune_row *row)
{
    (void)vc;
    buf ov = BUF_INIT;
    variant_overrides_json(s, v, &ov);
    char why[1024];
    int ok = tlink_preflight(l, ov.p, why, sizeof why);
    buf_release(&ov);
    if (ok == 1) return true;
    row->outcome = TO_SKIPPED;
    row->reason = xasprintf("%s%s", ok == 0 ? "the gate: " : "", why);
    return false;
}
