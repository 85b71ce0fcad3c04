/* main.c - gpumod-tui, the terminal dashboard `gpumod tui [--no-color]`
 * execs (docs/tui.md): its options, the terminal, and the loop.
 *
 * The loop sleeps in one poll() on three descriptors: the keyboard, the
 * wake pipe of the threads (feed.h: an event came, the stream opened or
 * failed, a log line, an action's answer) and the signal pipe (SIGWINCH,
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT: their handlers only write the signal's number
 * there).  It does not poll the daemon: a refresh follows an event.  The
 * only timeouts are a 500 ms refresh while something is in motion that
 * the events do not report step by step (a load's progress_pct, a switch
 * or a start this dashboard follows) and a redraw each minute while a
 * service is up (its uptime), which asks the daemon nothing.
 *
 * The terminal is given back (endwin) on q, on those signals, at exit()
 * (atexit) and before a fatal message; the daemon going away is not
 * fatal: the screen says so and the follower reconnects. */
#include "tui/tui.h"
#include "client/ctl.h"
#include "util/clock.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: gpumod tui [--no-color]\n"
    "The terminal dashboard: memory, services, the mode, events; actions with\n"
    "confirmation (? inside for the keys).  Colours are off with --no-color or\n"
    "when NO_COLOR is set.  Exit: 0 on q or a signal, 2 usage or no terminal.\n";

static int sig_fd[2] = {-1, -1};
static bool curses_on;

static void on_signal(int sig)
{
    int e = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t n = write(sig_fd[1], &c, 1);
    (void)n;
    errno = e;
}

static void restore_terminal(void)
{
    if (curses_on && !isendwin()) endwin();
    curses_on = false;
}

static void fatal(const char *what)
{
    restore_terminal();
    fprintf(stderr, "gpumod tui: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void pipe_nb(int fd[2])
{
    if (pipe2(fd, O_CLOEXEC | O_NONBLOCK)) fatal("pipe");
}

static void signals_init(void)
{
    pipe_nb(sig_fd);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    /* installed before initscr: curses then leaves these to us */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL); /* Ctrl-\ in cbreak mode: leave cleanly, not with a core */
    sigaction(SIGWINCH, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    feed_signals_init();
}

static int parse_args(int argc, char **argv, bool *no_color)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-color") || !strcmp(argv[i], "--no-colour")) {
            *no_color = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage_text, stdout);
            exit(0);
        } else {
            fprintf(stderr, "gpumod tui: unknown option '%s'\n%s", argv[i], usage_text);
            return EXIT_USAGE;
        }
    }
    return 0;
}

static void screen_init(tui_app *a)
{
    if (!newterm(NULL, stdout, stdin)) {
        fprintf(stderr, "gpumod tui: cannot use the terminal '%s' (terminfo)\n",
                getenv("TERM") ? getenv("TERM") : "");
        exit(EXIT_USAGE);
    }
    curses_on = true;
    atexit(restore_terminal);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    draw_init_colors(a);
}

static void on_resize(void)
{
    struct winsize ws;
    if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col)
        resizeterm(ws.ws_row, ws.ws_col);
    clearok(curscr, TRUE);
}

/* what one wait's timeout should be: -1 (none) unless something moves */
static int wait_ms(const tui_app *a)
{
    if (a->switch_id || a->start_svc[0] || a->mode.switch_id) return 500;
    bool up = false;
    for (size_t i = 0; i < a->m.nsvcs; i++) {
        const char *st = a->m.svcs[i].state;
        if (!strcmp(st, "starting") || !strcmp(st, "stopping")) return 500;
        if (strcmp(st, "down") && strcmp(st, "failed")) up = true;
    }
    return up ? 60000 : -1;
}

static void write_stamps(tui_app *a, const feed_stamp *st, size_t n)
{
    if (!a->stamp || !n) return;
    long long now = (long long)clock_unix_ms();
    for (size_t i = 0; i < n; i++)
        fprintf(a->stamp, "%lld %s %lld\n", (long long)st[i].id, st[i].ts, now);
    fflush(a->stamp);
}

static void drain(int fd, unsigned char *seen, size_t cap, size_t *n)
{
    unsigned char b[64];
    ssize_t r;
    while ((r = read(fd, b, sizeof b)) > 0)
        for (ssize_t i = 0; i < r; i++)
            if (seen && *n < cap) seen[(*n)++] = b[i];
}

/* the threads woke us: refresh when the daemon's state may have changed */
static void on_wake(tui_app *a, feed_stamp *st, size_t *nst, bool *refresh, bool *redraw)
{
    drain(a->wake_fd[0], NULL, 0, NULL);
    bool changed;
    bool on = feed_connected(a->feed, &changed);
    if (changed) {
        *refresh = true;
        if (on && !a->reachable) a->results_at = 0; /* back: read everything again */
    }
    *nst = feed_take(a->feed, st, 4096);
    if (*nst) *refresh = true;
    tui_job *j = jobs_done(a->jobs);
    if (j) {
        fetch_job_done(a, j);
        job_free(j);
        *refresh = true;
    }
    *redraw = true; /* a log line, at least */
}

static int run(tui_app *a)
{
    static feed_stamp st[4096];
    fetch_all(a, true);
    draw_screen(a);
    for (;;) {
        struct pollfd pf[3] = {{.fd = STDIN_FILENO, .events = POLLIN},
                               {.fd = a->wake_fd[0], .events = POLLIN},
                               {.fd = sig_fd[0], .events = POLLIN}};
        int r = poll(pf, 3, wait_ms(a));
        if (r < 0 && errno != EINTR) fatal("poll");
        bool refresh = r == 0 && wait_ms(a) != 60000, redraw = r == 0, full = false;
        size_t nst = 0;
        if (r > 0 && (pf[2].revents & POLLIN)) {
            unsigned char sigs[16];
            size_t ns = 0;
            drain(sig_fd[0], sigs, sizeof sigs, &ns);
            for (size_t i = 0; i < ns; i++) {
                if (sigs[i] != SIGWINCH) return 0;
                on_resize();
                redraw = true;
            }
        }
        if (r > 0 && (pf[1].revents & POLLIN)) on_wake(a, st, &nst, &refresh, &redraw);
        if (r > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            if (pf[0].revents & (POLLHUP | POLLERR)) return 0; /* the terminal went away */
            char was[64];
            snprintf(was, sizeof was, "%s", a->sel_id);
            for (int ch; (ch = getch()) != ERR;) {
                if (!keys_handle(a, ch)) return 0;
                redraw = true;
            }
            if (strcmp(was, a->sel_id)) full = refresh = true; /* results of the new selection */
        }
        if (refresh) {
            fetch_all(a, full);
            fetch_follow(a);
        }
        app_sync_logs(a);
        if (refresh || redraw) draw_screen(a);
        write_stamps(a, st, nst);
    }
}

int main(int argc, char **argv)
{
    bool no_color = false;
    int rc = parse_args(argc, argv, &no_color);
    if (rc) return rc;
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fputs("gpumod tui: needs a terminal\n", stderr);
        return EXIT_USAGE;
    }
    setlocale(LC_ALL, "");
    tui_app a = {0};
    a.paths = (config_paths){getenv("GPUMOD_CONFIG_DIR"), getenv("GPUMOD_STATE_DIR"),
                             getenv("GPUMOD_SOCKET")};
    a.sock = ctl_socket_path(&a.paths);
    a.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    const char *nc = getenv("NO_COLOR");
    a.color = !no_color && !(nc && *nc);
    buf_init(&a.plan);
    const char *sf = getenv("GPUMOD_TUI_STAMP");
    if (sf && *sf && !(a.stamp = fopen(sf, "ae"))) {
        fprintf(stderr, "gpumod tui: GPUMOD_TUI_STAMP: cannot open '%s': %s\n", sf,
                strerror(errno));
        return EXIT_USAGE;
    }
    signals_init();
    pipe_nb(a.wake_fd);
    a.reachable = true; /* until the first read says otherwise */
    screen_init(&a);
    a.jobs = jobs_start(&a.paths, a.wake_fd[1]);
    a.feed = feed_start(&a.paths, a.wake_fd[1]);
    if (!a.jobs || !a.feed) fatal("pthread_create");
    rc = run(&a);
    restore_terminal();
    feed_stop(a.feed);
    logs_stop(a.logs);
    jobs_abandon(a.jobs);
    if (a.stamp) fclose(a.stamp);
    buf_release(&a.plan);
    free(a.sock);
    return rc;
}
