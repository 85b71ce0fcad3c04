/* hostview.c - shared output of the memory commands (see hostview.h). */
#include "cli/hostview.h"
#include "core/contig.h"
#include "model/estimate.h"

#include <stdio.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

void snapshot_for(const settings *s, snapshot *snap)
{
    snapshot_opts o;
    snapshot_opts_from_settings(s, &o);
    snapshot_take(snap, &o);
}

void fmt_bar(buf *b, uint64_t used, uint64_t total, int w)
{
    int fill = total ? (int)((double)used / (double)total * w + 0.5) : 0;
    if (fill > w) fill = w;
    buf_addc(b, '[');
    for (int i = 0; i < w; i++) buf_addc(b, i < fill ? '#' : '.');
    buf_addc(b, ']');
}

void need_text(buf *b, const need_detail *nd)
{
    buf_printf(b, "need (%s): host ", nd->n.source);
    buf_bytes(b, nd->n.host_bytes);
    for (size_t i = 0; i < nd->n.ngpu; i++) {
        buf_printf(b, ", gpu %d ", nd->n.gpu[i].index);
        buf_bytes(b, nd->n.gpu[i].bytes);
    }
    buf_addc(b, '\n');
    if (nd->detail[0]) buf_printf(b, "  %s\n", nd->detail);
}

