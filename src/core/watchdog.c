/* watchdog.c (core) - the memory watchdog's decision (see watchdog.h for
 * the rules and their order).
 *
 * Pure, like the gate: the daemon measures, this judges, so every rule,
 * tie and boundary is tested on plain structs.  Arithmetic is on bytes
 * and saturating; reasons are in MiB with each side rounded the way that
 * can never print a crossing the bytes did not make (the host's side
 * down and the limit up for the floor; the usage up and the limit down
 * for over-need only where the bytes really are past it). */
#include "core/watchdog.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)

static unsigned long long mib_down(uint64_t x)
{
    return (unsigned long long)(x / MIB);
}

static unsigned long long mib_up(uint64_t x)
{
    return (unsigned long long)(x / MIB + (x % MIB != 0));
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t watchdog_limit(uint64_t need_bytes, const wd_policy *p)
{
    double f = p->over_need_factor;
    if (!(f >= 1)) f = 1; /* NaN or below 1: never tighter than the need itself */
    double x = (double)need_bytes * f;
    uint64_t scaled;
    if (x >= 18446744073709551615.0)
        scaled = UINT64_MAX;
    else {
        /* "1.25" from YAML is exact, "1.1" is not: within a hundredth of a
         * byte of an integer is that integer, else round up */
        double r = nearbyint(x);
        scaled = fabs(x - r) < 0.01 ? (uint64_t)r : (uint64_t)ceil(x);
    }
    return sat_add(scaled, p->over_need_margin_bytes);
}

/* How far past its need a service is; 0 when not past it or unknown. */
static uint64_t over_by(const wd_service *s, const wd_policy *p)
{
    (void)p;
    if (!s->need_known || !s->used_known || s->used_bytes <= s->need_bytes) return 0;
    return s->used_bytes - s->need_bytes;
}

/* a beats b on a tie of the primary figure */
static bool tie_wins(const wd_service *a, const wd_service *b)
{
    if (a->started_ms != b->started_ms) return a->started_ms > b->started_ms;
    return strcmp(a->id ? a->id : "", b->id ? b->id : "") < 0;
}

typedef uint64_t (*score_fn)(const wd_service *s, const wd_policy *p);

enum { ANY, LOADING, ASLEEP }; /* which services pick() considers */

/* The candidate with the largest score (> 0 unless allow_zero), or -1,
 * among those of kind (ANY, only LOADING, only ASLEEP). */
static long pick(const wd_service *v, size_t n, const wd_policy *p, score_fn score, int kind,
                 bool allow_zero)
{
    long best = -1;
    uint64_t best_score = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].stopping || (kind == LOADING && !v[i].loading) || (kind == ASLEEP && !v[i].asleep))
            continue;
        uint64_t sc = score(&v[i], p);
        if (!allow_zero && sc == 0) continue;
        if (best < 0 || sc > best_score || (sc == best_score && tie_wins(&v[i], &v[best]))) {
            best = (long)i;
            best_score = sc;
        }
    }
    return best;
}

static uint64_t score_used(const wd_service *s, const wd_policy *p)
{
    (void)p;
    return s->used_known ? s->used_bytes : 0;
}

/* How far over its need, counting only services past their limit. */
static uint64_t score_over_limit(const wd_service *s, const wd_policy *p)
{
    if (!s->need_known || !s->used_known) return 0;
    if (s->used_bytes <= watchdog_limit(s->need_bytes, p)) return 0;
    uint64_t o = over_by(s, p);
    return o ? o : 1;
}

static void addf(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void addf(char *dst, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(dst);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + len, cap - len, fmt, ap);
    va_end(ap);
}

/* "'chat' (loading; uses 3000 MiB, need 2000 MiB)" */
static void describe(char *dst, size_t cap, const wd_service *s, const char *why)
{
    addf(dst, cap, "'%s' (%s; uses ", s->id ? s->id : "", why);
    if (s->used_known)
        addf(dst, cap, "%llu MiB", mib_up(s->used_bytes));
    else
        addf(dst, cap, "an unknown amount");
    if (s->need_known)
        addf(dst, cap, ", need %llu MiB)", mib_up(s->need_bytes));
    else
        addf(dst, cap, ", need unknown)");
}

static void choose(wd_decision *out, const wd_service *v, long i)
{
    out->stop = true;
    out->index = (size_t)i;
    out->service = v[i].id;
}

void watchdog_decide(const wd_host *h, const wd_service *v, size_t n, const wd_policy *p,
                     wd_decision *out)
{
    memset(out, 0, sizeof *out);

    char host_why[160] = "";
    const char *trigger = NULL;
    if (!h->meminfo_ok) {
        addf(out->note, sizeof out->note,
             "MemAvailable unknown (meminfo unreadable): the floor of %llu MiB cannot be checked",
             mib_up(p->floor_bytes));
    } else if (h->mem_available_bytes < p->floor_bytes) {
        trigger = "host.mem_available";
        snprintf(host_why, sizeof host_why, "MemAvailable %llu MiB < floor %llu MiB",
                 mib_down(h->mem_available_bytes), mib_up(p->floor_bytes));
    }
    if (!h->psi_ok) {
        addf(out->note, sizeof out->note, "%sPSI unreadable: full avg10 cannot be checked",
             out->note[0] ? "; " : "");
    } else if (!trigger && h->psi_full_avg10 > p->psi_full_avg10_max) {
        trigger = "host.psi_full";
        snprintf(host_why, sizeof host_why, "memory PSI full avg10 %g%% > %g%%", h->psi_full_avg10,
                 p->psi_full_avg10_max);
    }

    if (trigger) {
        const char *why = "asleep: it serves nothing";
        long i = pick(v, n, p, score_used, ASLEEP, false);
        if (i < 0) {
            why = "loading";
            i = pick(v, n, p, score_used, LOADING, true);
        }
        if (i < 0) {
            why = "furthest over its need";
            i = pick(v, n, p, over_by, ANY, false);
        }
        if (i < 0) {
            why = "largest user, none is over its need";
            i = pick(v, n, p, score_used, ANY, true);
        }
        if (i < 0) {
            bool any = false;
            for (size_t k = 0; k < n; k++)
                any = any || v[k].stopping;
            addf(out->note, sizeof out->note, "%s%s, but no service can be stopped (%s)",
                 out->note[0] ? "; " : "", host_why,
                 any ? "every one is already stopping" : "none is running");
            return;
        }
        choose(out, v, i);
        snprintf(out->trigger, sizeof out->trigger, "%s", trigger);
        snprintf(out->reason, sizeof out->reason, "%s: stopping ", host_why);
        describe(out->reason, sizeof out->reason, &v[i], why);
        return;
    }

    long i = pick(v, n, p, score_over_limit, ANY, false);
    if (i < 0) return;
    const wd_service *s = &v[i];
    uint64_t lim = watchdog_limit(s->need_bytes, p);
    choose(out, v, i);
    snprintf(out->trigger, sizeof out->trigger, "service.over_need");
    snprintf(
        out->reason, sizeof out->reason,
        "'%s' uses %llu MiB > limit %llu MiB (admitted need %llu MiB x %g + %llu MiB): stopping it",
        s->id ? s->id : "", mib_up(s->used_bytes), mib_down(lim), mib_up(s->need_bytes),
        p->over_need_factor, mib_up(p->over_need_margin_bytes));
}
