/* presetgen.c (models) - placeholder until its issue-20 part lands (refuses). */
#include "models/models.h"

#include <stdio.h>

#include "util/exitcode.h"

int preset_new_cmd(mctx *c, int argc, char **argv)
{
    (void)c, (void)argc, (void)argv;
    fprintf(stderr, "gpumod: not built yet\n");
    return EXIT_USAGE;
}
