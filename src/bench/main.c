/* main.c - gpumod-bench (being written: replaced by the bench CLI). */
#include <stdio.h>
int main(void)
{
    fputs("gpumod-bench: not built yet\n", stderr);
    return 2;
}
