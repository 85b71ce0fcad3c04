/* main.c - gpumod-mcp's main(): being written (issue 19); this first
 * version only says so, so that the build and the CLI's dispatch can be
 * tested before the server lands. */
#include <stdio.h>

int main(void)
{
    fputs("gpumod-mcp: not built yet in this commit\n", stderr);
    return 2;
}
