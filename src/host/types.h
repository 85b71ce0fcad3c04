/* types.h - the host's value types: one snapshot of what the host has
 * (GPUs from NVML, else nvidia-smi, else none; host memory from
 * /proc/meminfo, /proc/buddyinfo, /proc/pressure/memory) as plain values,
 * and the options of taking one.  No I/O is declared here: src/core,
 * model and doctor judge these values and include this header; the
 * readers that fill them are host/host.h's.  All byte figures are bytes. */
#ifndef GPUMOD_HOST_TYPES_H
#define GPUMOD_HOST_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_MAX_GPUS 16
#define HOST_MAX_ORDERS 16
/* The block size the contiguity rule counts from: 256 KiB, order 6 on a
 * 4 KiB-page kernel, the seed's canary ("order_6 = 0") for the
 * cudaHostAlloc freeze; by size, so 16 and 64 KiB pages read alike. */
#define HOST_CONTIG_BLOCK (256u << 10)
#define HOST_MAX_ZONES 64 /* NUMA hosts (GH200, 8 nodes x 4 zones) */

typedef enum { NVML_OK, NVML_ABSENT, NVML_HUNG, NVML_FAILED } nvml_state;
extern const char *const nvml_state_names[]; /* "ok" "absent" "hung" "failed" */

typedef enum { GPU_SRC_NONE, GPU_SRC_NVML, GPU_SRC_SMI } gpu_source;
extern const char *const gpu_source_names[]; /* "none" "nvml" "nvidia-smi" */

typedef struct gpu_proc {
    uint32_t pid;
    uint64_t used_bytes; /* UINT64_MAX: not available */
} gpu_proc;

typedef struct gpu_dev {
    int index;           /* NVML / PCI bus order */
    char uuid[96];
    char name[96];
    char bus_id[32];
    bool unified;        /* memory queries NOT_SUPPORTED (GB10): free = MemAvailable */
    int cc_major, cc_minor; /* CUDA compute capability (12.0 SM_120, 12.1 GB10); 0.0: unknown */
    uint64_t total_bytes, free_bytes, used_bytes, reserved_bytes;
    int util_gpu_pct, util_mem_pct; /* -1: unknown */
    int temp_c;                     /* -1: unknown */
    int64_t power_mw;               /* -1: unknown */
    gpu_proc *procs;
    size_t nprocs;
} gpu_dev;

typedef struct buddy_zone {
    int node;
    char zone[16];
    size_t norders;
    uint64_t count[HOST_MAX_ORDERS]; /* free blocks of order i */
} buddy_zone;

typedef struct host_mem {
    /* /proc/meminfo, bytes */
    uint64_t mem_total, mem_free, mem_available, buffers, cached, swap_total, swap_free;
    uint64_t shmem, anon_pages, mlocked, hugepages_total, hugepages_free, hugepage_size;
    bool meminfo_ok;
    /* /proc/buddyinfo */
    uint64_t page_size; /* sysconf, never assumed */
    buddy_zone zones[HOST_MAX_ZONES];
    size_t nzones;
    size_t norders;                         /* max over zones */
    /* The figures below count the Normal and Movable zones of every node
     * (DMA and DMA32 are left out: memory.md 6.4), or every zone when a
     * host has neither (zones_all). */
    uint64_t order_count[HOST_MAX_ORDERS];  /* summed over the counted zones */
    uint64_t contig_bytes;                  /* free bytes in blocks >= HOST_CONTIG_BLOCK: the gate's figure */
    int order_contig;                       /* the order of a HOST_CONTIG_BLOCK block at this page size */
    uint64_t contig_2m_bytes;               /* free bytes in blocks >= 2 MiB (shown, and doctor's index) */
    int order_2m;                           /* the order of a 2 MiB block at this page size */
    uint64_t buddy_free_bytes;              /* free bytes on the buddy lists of every zone: MemFree
                                               when the lists account for all free memory */
    double unusable_index_2m;               /* kernel's unusable_index at order_2m, counted zones summed; -1 unknown */
    bool zones_all;                         /* no Normal/Movable zone: every zone counted */
    bool buddyinfo_ok;
    /* /proc/pressure/memory, percent */
    double psi_some_avg10, psi_some_avg60, psi_some_avg300;
    double psi_full_avg10, psi_full_avg60, psi_full_avg300;
    bool psi_ok;
} host_mem;

typedef struct snapshot {
    host_mem host;
    gpu_dev gpus[HOST_MAX_GPUS];
    size_t ngpus;
    gpu_source source;
    nvml_state nvml;
    bool nvidia_driver; /* an NVIDIA driver is loaded (NVML answered, or /proc/driver/nvidia exists) */
    char driver_version[64];
    char gpu_error[256]; /* why NVML / nvidia-smi gave nothing, for display */
    char host_error[256]; /* why meminfo or buddyinfo could not be read, for display */
    int64_t nvml_ms;     /* how long the NVML part took; -1 when not used */
} snapshot;

typedef struct snapshot_opts {
    const char *proc_root;  /* NULL: $GPUMOD_PROC_ROOT, else "/proc" */
    const char *dev_root;   /* NULL: "/dev" (where nvidiactl and dxg are looked for) */
    /* NULL: $GPUMOD_NVML_LIB, else "libnvidia-ml.so.1", tried only when an
     * NVIDIA driver can be there: <proc_root>/driver/nvidia,
     * <dev_root>/nvidiactl or <dev_root>/dxg (WSL) exists.  A library
     * named here or in the environment is always tried. */
    const char *nvml_lib;
    const char *smi_path;   /* NULL: $GPUMOD_NVIDIA_SMI, else "nvidia-smi" in PATH, on the same terms */
    int64_t nvml_timeout_ms;
    int64_t smi_timeout_ms;
    bool skip_gpus;         /* host memory only */
} snapshot_opts;

#endif
