/* draw.c - the dashboard's screen (tui.h), redrawn whole from the model
 * after each refresh: the title with the mode, memory bars (host and each
 * GPU: in use '#', reserved by starts in flight '+', free '.'), one line
 * per service, the route default, the selected service's last bench and
 * eval, then the recent events or the selected service's log, a message
 * line and the keys.  Overlays (help, a confirmation with the switch's
 * plan, the pickers) are drawn over it.
 *
 * Only ASCII is drawn by the dashboard itself (the borders too), and
 * every attribute has a monochrome meaning: colours add to the glyphs,
 * they never carry information alone.  The whole screen is erased and
 * drawn each time; curses sends the difference. */
#include "tui/tui.h"
#include "util/clock.h"

#include <curses.h>
#include <stdarg.h>
#include <string.h>

enum { C_OK = 1, C_WARN, C_ERR, C_HEAD, C_RES, C_TITLE };

static bool color_on;

void draw_init_colors(tui_app *a)
{
    color_on = false;
    if (!a->color || !has_colors()) return;
    start_color();
    use_default_colors();
    init_pair(C_OK, COLOR_GREEN, -1);
    init_pair(C_WARN, COLOR_YELLOW, -1);
    init_pair(C_ERR, COLOR_RED, -1);
    init_pair(C_HEAD, COLOR_CYAN, -1);
    init_pair(C_RES, COLOR_MAGENTA, -1);
    init_pair(C_TITLE, COLOR_BLACK, COLOR_CYAN);
    color_on = true;
}

static attr_t col(int pair)
{
    return color_on ? COLOR_PAIR(pair) : A_NORMAL;
}

/* text at y,x cut at the screen's edge; control characters as spaces */
static void put(int y, int x, attr_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(int y, int x, attr_t at, const char *fmt, ...)
{
    if (y < 0 || y >= LINES || x >= COLS) return;
    buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < b.len; i++)
        if ((unsigned char)b.p[i] < 0x20 || b.p[i] == 0x7f) b.p[i] = ' ';
    attron(at);
    mvaddnstr(y, x, b.p, COLS - x);
    attroff(at);
    buf_release(&b);
}

static int state_pair(const char *st)
{
    if (!strcmp(st, "ready")) return C_OK;
    if (!strcmp(st, "starting") || !strcmp(st, "stopping") || !strcmp(st, "sleeping"))
        return C_WARN;
    if (!strcmp(st, "failed") || !strcmp(st, "unhealthy")) return C_ERR;
    return 0;
}

static void draw_bar(int y, int x, int w, const tui_bar *b)
{
    int used = 0, res = 0;
    if (b->total) {
        used = (int)((double)b->used / (double)b->total * w + 0.5);
        res = (int)((double)b->reserved / (double)b->total * w + 0.5);
        if (b->reserved && !res) res = 1;
    }
    if (used > w) used = w;
    if (res > w - used) res = w - used;
    put(y, x, A_NORMAL, "[");
    for (int i = 0; i < w; i++) {
        bool u = i < used, r = !u && i < used + res;
        put(y, x + 1 + i,
            u   ? col(C_ERR) | A_BOLD
            : r ? col(C_RES) | A_BOLD
                : col(C_OK),
            "%c",
            u   ? '#'
            : r ? '+'
                : '.');
    }
    put(y, x + w + 1, A_NORMAL, "]");
}

/* "used X  res Y  free Z / T" after a bar */
static void bar_text(buf *b, const tui_bar *bar)
{
    buf_adds(b, "used ");
    buf_bytes(b, bar->used);
    if (bar->reserved) {
        buf_adds(b, " res ");
        buf_bytes(b, bar->reserved);
    }
    buf_adds(b, " free ");
    buf_bytes(b, bar->total - bar->used - bar->reserved);
    buf_adds(b, "/");
    buf_bytes(b, bar->total);
}

static int draw_memory(tui_app *a, int y)
{
    const tui_model *m = &a->m;
    int bw = COLS >= 100 ? 30 : COLS >= 80 ? 20 : 10;
    buf b = BUF_INIT;
    put(y, 0, A_BOLD, "host");
    if (m->host.known) {
        draw_bar(y, 6, bw, &m->host.bar);
        bar_text(&b, &m->host.bar);
        put(y, bw + 9, A_NORMAL, "%s", b.p);
    } else {
        put(y, 6, A_NORMAL, "memory not read yet");
    }
    y++;
    buf_clear(&b);
    if (m->host.psi_known)
        buf_printf(&b, "psi some %.2f full %.2f", m->host.psi_some, m->host.psi_full);
    else
        buf_adds(&b, "psi unknown");
    if (m->host.contig_known) {
        buf_adds(&b, "  contig ");
        buf_bytes(&b, m->host.contig_bytes);
        buf_adds(&b, "  pages");
        for (size_t i = 0; i < m->host.norders; i++)
            buf_printf(&b, " %d:%llu", m->host.order[i], (unsigned long long)m->host.pages[i]);
    }
    put(y++, 6, m->host.psi_known && m->host.psi_full > 0 ? col(C_WARN) : A_NORMAL, "%s", b.p);
    /* the services need their rows too: at 80x24, six lines of GPUs */
    size_t room = LINES > 19 ? (size_t)(LINES - 18) : 1, shown = m->ngpus;
    if (shown > room) shown = room - 1;
    for (size_t i = 0; i < shown; i++) {
        const tui_gpu *g = &m->gpus[i];
        buf_clear(&b);
        put(y, 0, A_BOLD, "gpu%d", g->index);
        draw_bar(y, 6, bw, &g->bar);
        bar_text(&b, &g->bar);
        buf_printf(&b, "  %s%s", g->name, g->unified ? " (unified)" : "");
        put(y++, bw + 9, A_NORMAL, "%s", b.p);
    }
    if (shown < m->ngpus)
        put(y++, 0, A_NORMAL, "gpus  %zu more not shown (a taller terminal shows them)",
            m->ngpus - shown);
    if (!m->ngpus) put(y++, 0, A_NORMAL, "gpus  none (nvml %s)", m->nvml[0] ? m->nvml : "?");
    buf_release(&b);
    return y;
}

static void svc_line(tui_app *a, int y, size_t i)
{
    const tui_svc *s = &a->m.svcs[i];
    char load[16] = "", port[8] = "-";
    buf mem = BUF_INIT, up = BUF_INIT;
    if (s->queued)
        snprintf(load, sizeof load, "q#%d", s->queued);
    else if (s->progress >= 0 && !strcmp(s->state, "starting"))
        snprintf(load, sizeof load, "%d%%", s->progress);
    if (s->port > 0) snprintf(port, sizeof port, "%d", s->port);
    int64_t t;
    bool live = strcmp(s->state, "down") && strcmp(s->state, "failed");
    if (s->foot_known && live)
        buf_bytes(&mem, s->foot);
    else
        buf_adds(&mem, "-");
    buf_adds(&mem, " / ");
    if (s->need_known)
        buf_bytes(&mem, s->need);
    else
        buf_adds(&mem, "-");
    if (live && s->since[0] && !clock_parse_rfc3339(s->since, &t))
        model_dur(&up, clock_unix_ms() - t);
    else
        buf_adds(&up, "-");
    bool sel = i == a->sel;
    attr_t base = sel ? A_REVERSE : A_NORMAL;
    if (sel) {
        attron(A_REVERSE);
        mvhline(y, 0, ' ', COLS);
        attroff(A_REVERSE);
    }
    put(y, 0, base, "%s %-16.16s", sel ? ">" : " ", s->id);
    put(y, 19, base | (sel ? 0 : col(state_pair(s->state))) | A_BOLD, "%-10s", s->state);
    put(y, 30, base, "%5s %-21s %5s %6s%s", load, mem.p, port, up.p,
        s->configured ? "" : "  (removed)");
    buf_release(&mem);
    buf_release(&up);
}

static int draw_services(tui_app *a, int y, int last)
{
    put(y++, 0, col(C_HEAD) | A_BOLD, "  %-16s %-10s %5s %-21s %5s %6s", "SERVICE", "STATE", "LOAD",
        "MEM / NEED", "PORT", "UP");
    if (!a->m.nsvcs) put(y++, 2, A_NORMAL, "no services configured");
    /* scroll so that the selection is seen */
    size_t rows = last > y ? (size_t)(last - y) : 1, first = 0;
    if (a->sel >= rows) first = a->sel - rows + 1;
    for (size_t i = first; i < a->m.nsvcs && y < last; i++)
        svc_line(a, y++, i);
    if (a->m.nsvcs_all > a->m.nsvcs && y < last)
        put(y++, 2, A_NORMAL, "(%zu more not shown)", a->m.nsvcs_all - a->m.nsvcs);
    return y;
}

static void draw_title(tui_app *a)
{
    attron(col(C_TITLE) | A_REVERSE * !color_on);
    mvhline(0, 0, ' ', COLS);
    attroff(col(C_TITLE) | A_REVERSE * !color_on);
    attr_t t = col(C_TITLE) | (color_on ? 0 : A_REVERSE) | A_BOLD;
    buf b = BUF_INIT;
    const tui_mode *mo = &a->mode;
    if (!mo->have)
        buf_adds(&b, "mode ?");
    else if (mo->mode[0])
        buf_printf(&b, "mode %s", mo->mode);
    else
        buf_printf(&b, "mode (none of the modes: %s; last %s)", mo->running,
                   mo->base_mode[0] ? mo->base_mode : "-");
    if (mo->switch_id)
        buf_printf(&b, "  switching to %s: %s%s%s", mo->sw_mode, mo->sw_phase,
                   mo->sw_service[0] ? " " : "", mo->sw_service);
    put(0, 0, t, " gpumod  %.*s", COLS > 60 ? COLS - 25 : COLS - 9, b.p);
    if (COLS > 60 && a->m.have)
        put(0, COLS - 14, t, "%14s", a->m.shutting_down ? "shutting down" : "? help  q quit");
    buf_release(&b);
}

static void draw_selected(tui_app *a, int y)
{
    const tui_svc *s = app_selected(a);
    put(y, 0, A_NORMAL, "route default: %s%s%s%s",
        a->route_known ? (a->route[0] ? a->route : "(none)") : "?", a->route_src[0] ? " (" : "",
        a->route_src, a->route_src[0] ? ")" : "");
    if (a->m.slot_holder[0]) put(y, 40, col(C_WARN), "loading: %s", a->m.slot_holder);
    if (!s) return;
    put(y + 1, 0, A_NORMAL, "bench %s: %s", s->id, a->bench.have ? a->bench.text : "no result");
    put(y + 2, 0, A_NORMAL, "eval  %s: %s", s->id, a->eval.have ? a->eval.text : "no result");
}

/* the recent events, or the selected service's log, from row y to last */
static void draw_lower(tui_app *a, int y, int last)
{
    if (y >= last) return;
    if (a->log_pane && a->logs) {
        put(y++, 0, col(C_HEAD) | A_BOLD, "log %s (l: events)", a->logs_for);
        buf b = BUF_INIT;
        size_t n = logs_copy(a->logs, &b, (size_t)(last - y));
        (void)n;
        for (char *p = b.p, *nl; *p && y < last; p = nl + 1) {
            nl = strchr(p, '\n');
            *nl = '\0';
            put(y++, 0, A_NORMAL, "%s", p);
        }
        buf_release(&b);
        return;
    }
    put(y++, 0, col(C_HEAD) | A_BOLD, "recent events (l: log of the selected service)");
    size_t rows = (size_t)(last - y), n = a->m.nevents, first = n > rows ? n - rows : 0;
    if (first < n && n - first > 8) first = n - 8;
    for (size_t i = first; i < n; i++)
        put(y++, 0, A_NORMAL, "%s", a->m.events[i].text);
}

static void draw_bottom(tui_app *a)
{
    static const int pairs[] = {[MSG_INFO] = C_HEAD, [MSG_OK] = C_OK, [MSG_ERR] = C_ERR};
    int len = (int)strlen(a->msg);
    if (a->busy[0]) {
        put(LINES - 2, 0, col(C_WARN) | A_BOLD, "%s...", a->busy);
    } else if (len > COLS) { /* a daemon's reason is worth two lines */
        put(LINES - 3, 0, col(pairs[a->msg_kind]) | A_BOLD, "%.*s", COLS, a->msg);
        put(LINES - 2, 0, col(pairs[a->msg_kind]) | A_BOLD, "%s", a->msg + COLS);
    } else if (len) {
        put(LINES - 2, 0, col(pairs[a->msg_kind]) | A_BOLD, "%s", a->msg);
    }
    put(LINES - 1, 0, A_DIM, "%s",
        COLS >= 80
            ? "up/dn select  s start  x stop  r restart  m mode  d route  l log  ? help  q quit"
            : "s x r m d l ? q");
}

static void draw_main(tui_app *a)
{
    int y = 1;
    if (!a->reachable) {
        put(y++, 0, col(C_ERR) | A_BOLD, "daemon not reachable at %s %s reconnecting", a->sock,
            a->utf8 ? "\xe2\x80\x94" : "-");
    }
    if (!a->m.have) {
        put(y + 1, 2, A_NORMAL, "waiting for the daemon...");
        draw_bottom(a);
        return;
    }
    y = draw_memory(a, y);
    int lower = LINES - 2 - 1 - 8; /* the events pane: up to 8 events and its title */
    int svc_end = y + 1 + (int)(a->m.nsvcs ? a->m.nsvcs : 1) + (a->m.nsvcs_all > a->m.nsvcs);
    if (svc_end > lower - 3) svc_end = lower - 3 > y + 2 ? lower - 3 : y + 2;
    y = draw_services(a, y, svc_end);
    draw_selected(a, y);
    y += 3;
    draw_lower(a, y, LINES - 2 - (!a->busy[0] && (int)strlen(a->msg) > COLS));
    draw_bottom(a);
}

static const char help_text[] = "keys\n"
                                "  up/down, j/k   select a service\n"
                                "  s              start the selected service (y/n)\n"
                                "  x              stop it (y/n)\n"
                                "  r              restart it (y/n)\n"
                                "  m              switch mode: pick one, see the plan, y/n\n"
                                "  d              set the router's default service\n"
                                "  l              the selected service's log / recent events\n"
                                "  Ctrl-L         redraw\n"
                                "  ?              this help (any key closes it)\n"
                                "  q              quit (Esc closes a dialog)\n"
                                "bars: # in use, + reserved by starts in flight, . free\n"
                                "the screen follows the daemon's events: no polling";

/* b's lines wrapped at w columns into out (NUL-separated would do; a buf
 * of newline-ended lines keeps it simple) */
static void wrap(buf *out, const char *text, int w)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *ind = *p == ' ' ? "    " : "  ";
        bool first = true;
        do {
            size_t room = (size_t)w - (first ? 0 : strlen(ind)), k = n <= room ? n : room;
            if (k < n)
                for (size_t c = k; c > room / 2; c--)
                    if (p[c] == ' ') {
                        k = c;
                        break;
                    }
            buf_printf(out, "%s%.*s\n", first ? "" : ind, (int)k, p);
            p += k;
            n -= k;
            while (n && *p == ' ')
                p++, n--;
            first = false;
        } while (n);
        p = nl ? nl + 1 : p;
        if (!nl) break;
    }
}

/* a box over the screen with text (and the line `hl` highlighted, -1 none) */
static void draw_box(const char *title, const char *text, int hl, const char *footer)
{
    int w = COLS - 4 > 76 ? 76 : COLS - 4;
    if (w < 20) return;
    buf lines = BUF_INIT;
    wrap(&lines, text, w - 4);
    int n = 0;
    for (const char *p = lines.p; *p; p++)
        n += *p == '\n';
    int h = n + 2 + (footer ? 2 : 0), maxh = LINES - 2;
    if (h > maxh) h = maxh;
    int y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;
    for (int y = y0; y < y0 + h; y++) {
        mvhline(y, 0, ' ', COLS); /* nothing of the screen beside the box: it reads as one */
        put(y, x0, A_BOLD, "|");
        put(y, x0 + w - 1, A_BOLD, "|");
    }
    for (int x = x0; x < x0 + w; x++) {
        put(y0, x, A_BOLD, "%c", x == x0 || x == x0 + w - 1 ? '+' : '-');
        put(y0 + h - 1, x, A_BOLD, "%c", x == x0 || x == x0 + w - 1 ? '+' : '-');
    }
    put(y0, x0 + 2, col(C_HEAD) | A_BOLD, " %s ", title);
    int y = y0 + 1, i = 0, last = y0 + h - 2 - (footer ? 2 : 0);
    /* a long list scrolls so that the highlighted line is seen */
    int skip = hl >= 0 && hl >= last - y ? hl - (last - y) + 1 : 0;
    for (char *p = lines.p, *nl; *p && y <= last; p = nl + 1, i++) {
        nl = strchr(p, '\n');
        *nl = '\0';
        if (i < skip) continue;
        if (i == hl) {
            attron(A_REVERSE);
            mvhline(y, x0 + 1, ' ', w - 2);
            attroff(A_REVERSE);
        }
        put(y++, x0 + 2, i == hl ? A_REVERSE : A_NORMAL, "%s", p);
    }
    if (footer) put(y0 + h - 2, x0 + 2, col(C_WARN) | A_BOLD, "%s", footer);
    buf_release(&lines);
}

static void draw_overlay(tui_app *a)
{
    buf b = BUF_INIT;
    switch (a->ov) {
    case OV_HELP:
        draw_box("help", help_text, -1, NULL);
        break;
    case OV_CONFIRM:
        draw_box(a->confirm_act == TA_SWITCH || a->confirm_act == TA_NONE ? "plan of the switch"
                                                                          : "confirm",
                 a->plan.len ? a->plan.p : "", -1, a->confirm);
        break;
    case OV_PICK_MODE:
    case OV_PICK_ROUTE:
        for (size_t i = 0; i < a->npick; i++)
            buf_printf(&b, "%s\n", a->pick[i]);
        draw_box(a->ov == OV_PICK_MODE ? "switch to mode" : "router default", b.p, (int)a->pick_at,
                 "enter: choose  esc: cancel");
        break;
    default:
        break;
    }
    buf_release(&b);
}

void draw_screen(tui_app *a)
{
    erase();
    if (LINES < 10 || COLS < 40) {
        put(0, 0, A_BOLD, "gpumod tui: the terminal is too small (%dx%d; 40x10 at least)", COLS,
            LINES);
    } else {
        draw_title(a);
        draw_main(a);
        if (a->ov != OV_NONE) draw_overlay(a);
    }
    refresh();
}
