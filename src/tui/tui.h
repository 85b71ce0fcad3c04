/* tui.h - the dashboard's application state, shared by main.c (options,
 * the terminal, the loop), fetch.c (the reads after each event), draw.c
 * (the screen) and keys.c (the actions).  One struct, owned by main(),
 * touched by the main thread only: the threads of feed.h hand over what
 * they got through their own mutexes. */
#ifndef GPUMOD_TUI_TUI_H
#define GPUMOD_TUI_TUI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "tui/feed.h"
#include "tui/model.h"
#include "util/buf.h"

typedef enum tui_overlay {
    OV_NONE,
    OV_HELP,
    OV_CONFIRM,    /* y/n on an action (start, stop, restart, a switch's plan) */
    OV_PICK_MODE,  /* choose the mode to switch to */
    OV_PICK_ROUTE, /* choose the router's default */
} tui_overlay;

typedef enum tui_act {
    TA_NONE,
    TA_START,
    TA_STOP,
    TA_RESTART,
    TA_DRYRUN, /* the plan of a switch, before its confirmation */
    TA_SWITCH,
    TA_ROUTE,
} tui_act;

enum { MSG_INFO, MSG_OK, MSG_ERR };

#define TUI_PICK_MAX 64

typedef struct tui_app {
    config_paths paths;
    char *sock; /* for the "not reachable" line */
    bool color, utf8;
    FILE *stamp; /* GPUMOD_TUI_STAMP, or NULL */

    /* what the daemon said at the last refresh */
    bool reachable; /* the last GET /status was answered */
    tui_model m;
    tui_mode mode;
    tui_result bench, eval;
    char res_for[64]; /* the service bench and eval are of */
    char route[64], route_src[32];
    bool route_known;
    int64_t results_at;  /* when bench/eval/route were read (ms, monotonic) */
    int64_t fetch_until; /* a refresh's requests share one deadline (ms, monotonic) */

    /* the screen */
    size_t sel;      /* the selected service, an index into m.svcs */
    char sel_id[64]; /* ... by id, kept across refreshes */
    bool log_pane;
    tui_overlay ov;
    char pick[TUI_PICK_MAX][64];
    size_t npick, pick_at;
    buf plan;          /* the dry run's plan shown for confirmation */
    char confirm[256]; /* the question */
    tui_act confirm_act;
    char act_target[64];
    char msg[600];
    int msg_kind;

    /* what is being followed */
    long switch_id; /* a switch this dashboard asked for, until its result */
    char switch_mode[64];
    char start_svc[64]; /* a start asked with wait=0, until its outcome */
    int64_t start_seq;
    char busy[128]; /* the action in flight, "" when none */

    int wake_fd[2]; /* the threads' bytes */
    tui_feed *feed;
    tui_logs *logs;
    char logs_for[64];
    tui_jobs *jobs;
} tui_app;

/* fetch.c: read the state again (GET /status, /modes/current; results and
 * the route default when the selection changed or `full`). */
void fetch_all(tui_app *a, bool full);
/* After fetch_all: what a followed switch or start came to, as a message. */
void fetch_follow(tui_app *a);
/* A finished action's outcome, as a message (and what to follow next). */
void fetch_job_done(tui_app *a, tui_job *j);

/* draw.c */
void draw_init_colors(tui_app *a);
void draw_screen(tui_app *a);

/* keys.c: one key; false when the dashboard should end. */
bool keys_handle(tui_app *a, int ch);
/* Sets a's message (printf-style). */
void app_msg(tui_app *a, int kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The log follower for the selected service, when the pane is open. */
void app_sync_logs(tui_app *a);
/* The selected service, or NULL. */
const tui_svc *app_selected(const tui_app *a);

#endif
