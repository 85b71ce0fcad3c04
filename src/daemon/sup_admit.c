/* sup_admit.c - admission (supervisor.h sup_start): the load slot, the
 * port check, the gate, and the ledger of reservations.
 *
 * The load slot: one start at a time from admission (need + gate + port)
 * until the start ends (ready and measured, refused, or failed and its
 * group verified gone).  Restarts queue on it like any other start.
 *
 * The ledger: a start admitted holds a reservation (the need it was
 * admitted with) until its footprint is measured or the start ends
 * otherwise; the gate of every later admission, and of preflight through
 * the daemon, counts each reservation in flight (sup_reservations). */
#include "daemon/sup_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/policy.h"
#include "daemon/need.h"
#include "daemon/verdict.h"
#include "drivers/driver.h"
#include "drivers/hash.h"
#include "host/ports.h"
#include "util/clock.h"
#include "util/log.h"

/* ------------------------------------------------------------------ */
/* the port check */

/* ports_owner reads /proc/net/tcp and tcp6, which the kernel makes by
 * walking its whole connection hash (~5 ms each on a VM with a big one)
 * even when the port is free.  A bind test tells "free" in microseconds:
 * bind(2) with SO_REUSEADDR fails with EADDRINUSE while any LISTEN socket
 * holds the port on this address or a wildcard covering it.  Only "both
 * binds worked" is trusted, and only where ports_owner would read the real
 * /proc (not a GPUMOD_PROC_ROOT fixture with a net/ directory); every
 * other outcome (in use, EACCES below 1024, an IPv6 literal, a name) goes
 * to ports_owner as before.  The second bind, [::] IPv6-only, makes it
 * conservative: any IPv6 listener on the port sends the check to /proc. */
static bool bind_ok(int family, const void *addr, uint16_t port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return family == AF_INET6 && errno == EAFNOSUPPORT; /* no IPv6: no IPv6 listener */
    int one = 1;
    bool ok = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0;
    if (ok && family == AF_INET) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        memcpy(&sa.sin_addr, addr, 4);
        ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    } else if (ok) {
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_any};
        ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) == 0 &&
             bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    }
    close(fd);
    return ok;
}

/* ports_owner reads the real /proc (not a GPUMOD_PROC_ROOT fixture with
 * a net/ directory): the pids it names are real processes. */
bool sv_ports_read_real_proc(const sup *s)
{
    if (s->proc_root && *s->proc_root) return false;
    const char *e = getenv("GPUMOD_PROC_ROOT");
    if (e && *e) {
        char net[4096];
        struct stat st;
        snprintf(net, sizeof net, "%s/net", e);
        if (stat(net, &st) == 0) return false;
    }
    return true;
}

bool sv_port_surely_free(const sup *s, const char *host, int port)
{
    if (port <= 0 || port > 65535) return false;
    if (!sv_ports_read_real_proc(s)) return false; /* a fixture: ports_owner reads it */
    struct in_addr a4 = {.s_addr = htonl(INADDR_ANY)};
    if (host && *host && strcmp(host, "::") != 0 && inet_pton(AF_INET, host, &a4) != 1) return false;
    return bind_ok(AF_INET, &a4, (uint16_t)port) && bind_ok(AF_INET6, NULL, (uint16_t)port);
}

/* ------------------------------------------------------------------ */
/* admission and the load slot */

static void refuse(svc *v, const sup_result *r, const char *words)
{
    if (v->waking) /* a wake refused: the engine sleeps on, untouched */
        sv_feed(v, EV_SLEPT, words);
    else
        sv_feed(v, EV_REFUSED, words);
    sv_release_reservation(v);
    sv_end_result(v, "refused", r);
}

/* The preset v's start runs (its overrides applied to the preset of
 * now: tmp holds the copy, for this loop turn only), or NULL after the
 * start was refused: no preset any more, or an override its driver does
 * not take (the configuration was reloaded since the start was asked). */
static const preset *run_preset_or_refuse(svc *v, preset *tmp)
{
    char err[512];
    const preset *p = sv_run_preset(v, tmp, err, sizeof err);
    if (p) return p;
    bool gone = !sv_preset_of(v);
    char *m = gone ? xstrdup(err) : xasprintf("cannot start '%s' with overrides: %s", v->id, err);
    refuse(v, &(sup_result){.outcome = gone ? SUP_NOT_FOUND : SUP_BAD_REQUEST, .message = m},
           gone ? "no longer configured" : "overrides do not apply");
    free(m);
    return NULL;
}

/* Admit v's start of p (its preset with the start's overrides), or refuse it. */
static void admit_preset(svc *v, const preset *p, const snapshot *snap)
{
    sup *s = v->s;
    const settings *st = sv_set_of(s);
    char err[512], hash[65];
    if (config_hash(p, st, hash, NULL, err, sizeof err) != 0) hash[0] = 0;
    if (v->waking && strcmp(hash, v->run_hash) != 0) {
        /* a sleeper of an older configuration: compared before the record
         * takes the new host, port and timeouts, so the stop runs with what
         * the old engine runs with */
        sv_set_str(&v->wake_fail, "its configuration changed since it went to sleep");
        sv_set_pending(v, SUP_START_FAILED, "the configuration changed since it went to sleep");
        sv_feed(v, EV_EXITED, "a wake of an older configuration: stopped, then started cold");
        return;
    }
    sv_copy_running(v, p, st);
    if (health_check_host(v->host, err, sizeof err) != 0) {
        char *m = xasprintf("cannot start '%s': %s", v->id, err);
        refuse(v, &(sup_result){.outcome = SUP_START_FAILED, .message = m}, "host not usable");
        free(m);
        return;
    }
    snprintf(v->run_hash, sizeof v->run_hash, "%s", hash);

    need_detail nd;
    memset(&nd, 0, sizeof nd);
    if (service_need(p, st, snap, s->env.st, &nd, err, sizeof err) != 0) {
        char *m = xasprintf("cannot tell what '%s' needs: %s", v->id, err);
        refuse(v, &(sup_result){.outcome = SUP_NEED_UNKNOWN, .message = m}, "need unknown");
        free(m);
        return;
    }
    reservation res[64];
    size_t nres = sup_reservations(s, res, 64);
    gate_policy pol;
    policy_from_settings(st, &pol);
    verdict vd;
    need full = nd.n; /* what it is admitted with: once awake it holds all of it */
    if (v->waking) sv_wake_need(v, &nd.n); /* the gate judges the delta: the rest is there */
    gate_check(snap, &nd.n, res, nres, v->id, &pol, &vd);
    buf vj = BUF_INIT;
    verdict_json(&vj, "daemon", v->id, &vd, &nd, snap);
    sv_emit(s, v->id, "gate", NULL, NULL, vd.ok ? "admitted" : vd.reason, vj.p);
    if (!vd.ok) {
        char *m = xasprintf("refused: '%s': %s", v->id, vd.reason);
        char *w = xasprintf("gate refused: %s", vd.reason);
        sup_gate_refusal g = {.service = v->id, .vd = &vd, .nd = &nd, .snap = snap};
        refuse(v, &(sup_result){.outcome = SUP_GATE_REFUSED, .message = m, .gate = &g}, w);
        free(m);
        free(w);
        buf_release(&vj);
        return;
    }
    buf_release(&vj);

    port_owner o;
    int held = v->port > 0 && !v->waking && !sv_port_surely_free(s, v->host, v->port)
                   ? ports_owner(s->proc_root, v->host, (uint16_t)v->port, &o, err, sizeof err)
                   : 0;
    if (held < 0) log_warn("supervisor: '%s': cannot check port %d: %s", v->id, v->port, err);
    if (held == 1) {
        char desc[512];
        ports_describe(&o, desc, sizeof desc);
        char *m = xasprintf("refused: '%s': %s", v->id, desc);
        refuse(v, &(sup_result){.outcome = SUP_PORT_HELD, .message = m, .holder = &o, .port = v->port}, desc);
        free(m);
        return;
    }
    v->admitted = full;
    v->wake_delta = nd.n;
    v->has_admitted = true;
    v->adm_mem_available = snap->host.mem_available;
    v->adm_meminfo_ok = snap->host.meminfo_ok;
    v->reserved = true;
    if (v->waking)
        sv_wake_it(v, p);
    else
        sv_spawn_it(v, p);
}

static void admit_with(svc *v, const snapshot *snap)
{
    v->admitting = false;
    if (v->state != SVC_STARTING) return;
    preset tmp;
    const preset *p = run_preset_or_refuse(v, &tmp);
    if (p) admit_preset(v, p, snap);
    sv_run_preset_done(&tmp);
}

static void admit(svc *v)
{
    sup *s = v->s;
    preset tmp;
    const preset *p = sv_preset_of(v);
    if (p && overrides_any(&v->ov)) {
        bool ok = run_preset_or_refuse(v, &tmp) != NULL;
        sv_run_preset_done(&tmp);
        if (!ok) return;
    }
    if (p && p->driver == DRV_REMOTE) {
        /* remote: no process, no port, no gate; ready as soon as asked */
        sv_copy_running(v, p, sv_set_of(s));
        v->run_hash[0] = 0;
        v->spawn_mono = clock_mono_ms();
        v->load_ms = 0;
        if (!sv_feed(v, EV_READY, "remote service: nothing runs here") || v->state != SVC_READY) {
            char *m = xasprintf("'%s' is %s, not ready", v->id, svc_state_names[v->state]);
            sv_end_start(v, "cancelled", SUP_CONFLICT, m);
            free(m);
            return;
        }
        sv_end_start(v, "ready", SUP_OK, NULL);
        return;
    }
    v->admitting = true;
    sv_take(v, admit_with);
}

void sv_slot_next(sup *s)
{
    while (!s->holder && s->q_head) {
        svc *v = s->q_head;
        s->q_head = v->next_q;
        if (!s->q_head) s->q_tail = NULL;
        v->next_q = NULL;
        v->queued = false;
        s->holder = v;
        v->slot = true;
        admit(v);
    }
}

void sv_enqueue(svc *v)
{
    sup *s = v->s;
    const preset *p = sv_preset_of(v);
    if (p && p->driver == DRV_REMOTE) { /* nothing loads: no slot */
        admit(v);
        return;
    }
    v->queued = true;
    v->next_q = NULL;
    if (s->q_tail)
        s->q_tail->next_q = v;
    else
        s->q_head = v;
    s->q_tail = v;
    sv_slot_next(s);
}

/* ------------------------------------------------------------------ */
/* the ledger */

void sv_release_reservation(svc *v)
{
    v->reserved = false;
}

size_t sup_reservations(sup *s, reservation *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nsvcs && n < max; i++) {
        svc *v = s->svcs[i];
        if (!v->reserved) continue;
        out[n].service = v->id;
        out[n].need = v->waking ? v->wake_delta : v->admitted; /* a wake reserves its delta */
        n++;
    }
    for (sv_extra *e = s->extras; e && n < max; e = e->next) {
        out[n].service = e->id;
        out[n].need = e->n;
        n++;
    }
    return n;
}

uint64_t sup_reserve_extra(sup *s, const char *id, const need *n)
{
    sv_extra *e = xcalloc(1, sizeof *e);
    e->handle = ++s->extra_seq;
    e->id = xstrdup(id);
    e->n = *n;
    e->next = s->extras;
    s->extras = e;
    return e->handle;
}

void sup_unreserve(sup *s, uint64_t handle)
{
    for (sv_extra **pp = &s->extras; handle && *pp; pp = &(*pp)->next)
        if ((*pp)->handle == handle) {
            sv_extra *e = *pp;
            *pp = e->next;
            free(e->id);
            free(e);
            return;
        }
}

void sv_extras_free(sup *s)
{
    while (s->extras)
        sup_unreserve(s, s->extras->handle);
}

