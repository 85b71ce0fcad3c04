/* cuda.c - FAKELLM_CUDA_MB: hold real GPU memory through the CUDA driver
 * API (libcuda.so.1 by dlopen: fakellm links nothing of CUDA), for the
 * device checks (tests/device/run-daemon.sh), where the daemon must see a
 * real process's memory in NVML, measure it as the footprint and watch it
 * come back after a stop.  Device: the first of CUDA_VISIBLE_DEVICES as
 * CUDA numbers it (0).  Everything here runs in the process that holds
 * (the parent, or the worker with FAKELLM_FORK_WORKER). */
#include "fakellm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_dev_fn)(int *, int);
typedef int (*cu_ctx_fn)(void **, unsigned, int);
typedef int (*cu_ctxd_fn)(void *);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);

static void *ctx;
static unsigned long long mem;
static cu_ctxd_fn ctx_destroy;
static cu_free_fn mem_free;

int cuda_hold(long mb, char *err, size_t errlen)
{
    if (mb <= 0 || ctx)
        return 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "FAKELLM_CUDA_MB: cannot load libcuda.so.1: %s", dlerror());
        return -1;
    }
    cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
    cu_dev_fn get = (cu_dev_fn)dlsym(h, "cuDeviceGet");
    cu_ctx_fn create = (cu_ctx_fn)dlsym(h, "cuCtxCreate_v2");
    cu_alloc_fn alloc = (cu_alloc_fn)dlsym(h, "cuMemAlloc_v2");
    ctx_destroy = (cu_ctxd_fn)dlsym(h, "cuCtxDestroy_v2");
    mem_free = (cu_free_fn)dlsym(h, "cuMemFree_v2");
    if (!init || !get || !create || !alloc || !ctx_destroy || !mem_free) {
        snprintf(err, errlen, "FAKELLM_CUDA_MB: libcuda.so.1 lacks a driver API symbol");
        return -1;
    }
    int dev = 0, rc;
    if ((rc = init(0)) || (rc = get(&dev, 0)) || (rc = create(&ctx, 0, dev))) {
        snprintf(err, errlen, "FAKELLM_CUDA_MB: CUDA init/context failed (CUresult %d)", rc);
        ctx = NULL;
        return -1;
    }
    if ((rc = alloc(&mem, (size_t)mb << 20))) {
        snprintf(err, errlen, "FAKELLM_CUDA_MB: cuMemAlloc of %ld MiB failed (CUresult %d)", mb, rc);
        mem = 0;
        return -1;
    }
    return 0;
}

void cuda_release(void)
{
    if (mem)
        mem_free(mem);
    if (ctx)
        ctx_destroy(ctx);
    mem = 0;
    ctx = NULL;
}
