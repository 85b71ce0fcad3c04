/* dur.c - durations as text (dur.h). */
#include "util/dur.h"

void dur_exact(buf *out, int64_t ms)
{
    if (ms < 0)
        buf_adds(out, "null");
    else if (ms % 3600000 == 0 && ms)
        buf_printf(out, "%lldh", (long long)(ms / 3600000));
    else if (ms % 60000 == 0 && ms)
        buf_printf(out, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0)
        buf_printf(out, "%llds", (long long)(ms / 1000));
    else
        buf_printf(out, "%lldms", (long long)ms);
}

void dur_human(buf *b, int64_t ms)
{
    if (ms < 0) ms = 0;
    if (ms < 1000) {
        buf_printf(b, "%lldms", (long long)ms);
        return;
    }
    long long s = ms / 1000;
    if (s < 60)
        buf_printf(b, "%lld.%llds", s, (long long)(ms % 1000) / 100);
    else if (s < 3600)
        buf_printf(b, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        buf_printf(b, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    else
        buf_printf(b, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
}
