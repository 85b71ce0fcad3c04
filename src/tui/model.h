/* model.h - what the dashboard shows, as plain structs filled from the
 * control API's JSON (GET /status, GET /modes/current, GET /results,
 * GET /route/default, a dry run's plan).  No ncurses, no sockets: the
 * functions take parsed JSON and fill caller-owned structs, so they are
 * tested with strings.  Fixed sizes: a dashboard shows at most
 * TUI_MAX_SVCS services (more are counted, not kept). */
#ifndef GPUMOD_TUI_MODEL_H
#define GPUMOD_TUI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "util/buf.h"

#define TUI_MAX_SVCS 128
#define TUI_MAX_GPUS 16
#define TUI_MAX_EVENTS 16
#define TUI_MAX_ORDERS 16

typedef struct tui_bar {
    uint64_t total, used, reserved; /* free = total - used - reserved */
} tui_bar;

typedef struct tui_gpu {
    int index;
    char name[64];
    bool unified;
    tui_bar bar;
} tui_gpu;

typedef struct tui_host {
    bool known; /* MemTotal/MemAvailable read */
    tui_bar bar;
    bool psi_known;
    double psi_some, psi_full;
    bool contig_known;
    uint64_t contig_bytes;
    size_t norders;
    int order[TUI_MAX_ORDERS];
    uint64_t pages[TUI_MAX_ORDERS];
} tui_host;

typedef struct tui_svc {
    char id[64];
    char state[16];
    char since[40];
    int port;
    int progress; /* -1: none */
    int queued;   /* 0: not queued */
    uint64_t foot, need;
    bool foot_known, need_known;
    bool configured;
    int64_t start_seq;
    char start_outcome[16];
    char start_msg[320];
} tui_svc;

typedef struct tui_event {
    int64_t id;
    char ts[40];
    char text[200];
} tui_event;

typedef struct tui_model {
    bool have; /* a GET /status was read */
    long pid;
    char version[32];
    bool shutting_down;
    char nvml[16];
    tui_host host;
    tui_gpu gpus[TUI_MAX_GPUS];
    size_t ngpus;
    tui_svc svcs[TUI_MAX_SVCS];
    size_t nsvcs, nsvcs_all;
    char slot_holder[64];
    tui_event events[TUI_MAX_EVENTS];
    size_t nevents;
} tui_model;

typedef struct tui_mode {
    bool have;
    char mode[64]; /* "" when null (no mode's set runs) */
    char base_mode[64];
    char running[256]; /* the running set, comma separated, when mode is null */
    long switch_id;    /* 0: none in progress */
    char sw_mode[64], sw_phase[32], sw_service[64];
} tui_mode;

typedef struct tui_result {
    bool have;
    long id;
    char ts[40];
    char text[240];
} tui_result;

/* GET /status -> m (cleared first).  0, or -1 when j is not a status. */
int model_from_status(tui_model *m, const cJSON *j);
/* GET /modes/current -> mo. */
void model_mode(tui_mode *mo, const cJSON *j);
/* The newest entry of GET /results?kind=... -> r (have false when none). */
void model_result(tui_result *r, const cJSON *j);
/* A dry run's plan as lines for people (what stops, keeps, starts, the
 * memory after each step, the verdict), one per line, into b. */
void model_plan_text(buf *b, const cJSON *plan);
/* The daemon's error JSON as one line: its message, else "HTTP N: body". */
void model_error_text(buf *b, int status, const char *body, size_t len);
/* A duration as "45s", "12m", "3h05m", "2d04h". */
void model_dur(buf *b, int64_t ms);

#endif
