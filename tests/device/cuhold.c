/* device check: hold 1 GiB of GPU memory through the CUDA driver API */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    int (*ctx)(void **, unsigned, int) = (int (*)(void **, unsigned, int))dlsym(h, "cuCtxCreate_v2");
    int (*alloc)(unsigned long long *, size_t) = (int (*)(unsigned long long *, size_t))dlsym(h, "cuMemAlloc_v2");
    int dev = 0; void *c = NULL; unsigned long long p = 0;
    int r1 = init(0), r2 = get(&dev, 0), r3 = ctx(&c, 0, dev), r4 = alloc(&p, 1ull << 30);
    printf("cuInit=%d cuDeviceGet=%d cuCtxCreate=%d cuMemAlloc=%d pid=%d\n", r1, r2, r3, r4, (int)getpid());
    fflush(stdout);
    sleep(60);
    return 0;
}
