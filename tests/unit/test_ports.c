/* test_ports.c - the port-owner lookup on a fixture /proc
 * (tests/fixtures/proc/ports/host: listeners by address and family,
 * shared sockets, an invisible holder, an ugly command line), on hostile
 * socket-table lines, and live: a socket this test listens on is found
 * with this test's pid, and a forked holder is counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* the statics too (parse_tcp_line) */
#include "host/ports.c"

static const char *fixture(const char *name)
{
    static char path[1024];
    const char *src = getenv("GPUMOD_SRC");
    snprintf(path, sizeof path, "%s/tests/fixtures/proc/%s", src ? src : ".", name);
    return path;
}

typedef struct want {
    const char *addr;
    uint16_t port;
    int rc;
    pid_t pid;
    int nholders;
    const char *listen; /* the listener's address */
    const char *cmdline;
} want;

static void fixture_ports(void **state)
{
    (void)state;
    static const want w[] = {
        {NULL, 7070, 1, 100, 1, "127.0.0.1", "llama-server -m /models/q.gguf --port 7070"},
        {"127.0.0.1", 7070, 1, 100, 1, "127.0.0.1", NULL},
        {"10.0.0.5", 7070, 0, 0, 0, NULL, NULL},            /* another address */
        {"::1", 7070, 0, 0, 0, NULL, NULL},                 /* v4 socket, v6 address */
        {NULL, 8080, 1, 200, 2, "0.0.0.0", "vllm serve m"}, /* a worker shares it */
        {"127.0.0.1", 8080, 1, 200, 2, NULL, NULL},         /* 0.0.0.0 covers it */
        {"0.0.0.0", 8080, 1, 200, 2, NULL, NULL},
        {"::1", 8080, 0, 0, 0, NULL, NULL},
        {NULL, 9090, 0, 0, 0, NULL, NULL},          /* ESTABLISHED, not LISTEN */
        {NULL, 6000, 0, 0, 0, NULL, NULL},          /* TIME_WAIT */
        {NULL, 1234, 0, 0, 0, NULL, NULL},          /* nothing at all */
        {NULL, 5555, 1, 0, 0, "0.0.0.0", ""},       /* nobody we can see */
        {"127.0.0.1", 7071, 1, 300, 1, "::", NULL}, /* [::] is dual-stack */
        {"::1", 7071, 1, 300, 1, "::", NULL},
        {"::1", 7072, 1, 100, 1, "::1", NULL},
        {"::", 7072, 1, 100, 1, NULL, NULL},
        {"127.0.0.1", 7072, 0, 0, 0, NULL, NULL},
        {"::2", 7072, 0, 0, 0, NULL, NULL},
        {"127.0.0.1", 7073, 1, 200, 1, "::ffff:127.0.0.1", NULL}, /* v4-mapped */
        {"::ffff:127.0.0.1", 7073, 1, 200, 1, NULL, NULL},
        {"127.0.0.2", 7073, 0, 0, 0, NULL, NULL},
        {"10.0.0.5", 7074, 1, 100, 1, "10.0.0.5", NULL},
        {"::ffff:10.0.0.5", 7074, 1, 100, 1, NULL, NULL},
        {"127.0.0.1", 7074, 0, 0, 0, NULL, NULL},
        {NULL, 7075, 1, 500, 1, NULL, "[llama-server]"}, /* empty cmdline: comm */
    };
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        port_owner o;
        char err[256] = "";
        int rc = ports_owner(fixture("ports/host"), w[i].addr, w[i].port, &o, err, sizeof err);
        if (rc != w[i].rc)
            fail_msg("%s port %u: rc %d, expected %d (%s)", w[i].addr ? w[i].addr : "any",
                     w[i].port, rc, w[i].rc, err);
        if (rc != 1) continue;
        assert_int_equal(o.port, w[i].port);
        if (o.pid != w[i].pid)
            fail_msg("%s port %u: pid %d, expected %d", w[i].addr ? w[i].addr : "any", w[i].port,
                     (int)o.pid, (int)w[i].pid);
        assert_int_equal(o.nholders, w[i].nholders);
        assert_false(o.scan_truncated);
        if (w[i].listen) assert_string_equal(o.addr, w[i].listen);
        if (w[i].cmdline) assert_string_equal(o.cmdline, w[i].cmdline);
    }
}

static void fixture_details(void **state)
{
    (void)state;
    port_owner o;
    char err[256], msg[512];
    assert_int_equal(ports_owner(fixture("ports/host"), NULL, 5555, &o, err, sizeof err), 1);
    assert_int_equal(o.uid, 1001);
    assert_int_equal(o.inode, 1004);
    assert_false(o.ipv6);
    ports_describe(&o, msg, sizeof msg);
    assert_string_equal(msg, "port 5555 is held by a process of uid 1001 that gpumod cannot see "
                             "(socket inode 1004)");

    assert_int_equal(ports_owner(fixture("ports/host"), NULL, 7070, &o, err, sizeof err), 1);
    ports_describe(&o, msg, sizeof msg);
    assert_string_equal(
        msg, "port 7070 is held by pid 100 (llama-server -m /models/q.gguf --port 7070)");

    assert_int_equal(ports_owner(fixture("ports/host"), NULL, 8080, &o, err, sizeof err), 1);
    ports_describe(&o, msg, sizeof msg);
    assert_string_equal(msg, "port 8080 is held by pid 200 (vllm serve m) and 1 other process");

    assert_int_equal(ports_owner(fixture("ports/host"), "::1", 7072, &o, err, sizeof err), 1);
    assert_true(o.ipv6);
    assert_int_equal(o.inode, 2002);
}

/* pid 300: controls, an escape sequence, a backslash, UTF-8, a bad byte,
 * then 400 x: escaped, and cut to fit with "..." */
static void fixture_ugly_cmdline(void **state)
{
    (void)state;
    port_owner o;
    char err[256];
    assert_int_equal(ports_owner(fixture("ports/host"), NULL, 7071, &o, err, sizeof err), 1);
    assert_int_equal(o.pid, 300);
    const char *head = "evil --name a\\nb\\tc\\x1b[31mred\\\\ caf\xc3\xa9 bad\\xff xxx";
    if (strncmp(o.cmdline, head, strlen(head))) fail_msg("cmdline: %s", o.cmdline);
    assert_int_equal(strlen(o.cmdline), PORTS_CMDLINE_MAX - 1);
    assert_string_equal(o.cmdline + strlen(o.cmdline) - 4, "x...");
    for (const char *p = o.cmdline; *p; p++)
        assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

/* pid 600 holds 7080 with secrets on its command line: the owner's
 * cmdline (what the port_held message, event and detail show) has them
 * redacted, the rest intact. */
static void fixture_secret_cmdline(void **state)
{
    (void)state;
    port_owner o;
    char err[256], msg[512];
    assert_int_equal(ports_owner(fixture("ports/secret"), NULL, 7080, &o, err, sizeof err), 1);
    assert_int_equal(o.pid, 600);
    assert_string_equal(o.cmdline, "llama-server --api-key <redacted> --hf-token=<redacted> -H "
                                   "Authorization: Bearer <redacted> -e HF_TOKEN=<redacted> --port 7080");
    ports_describe(&o, msg, sizeof msg);
    if (strstr(msg, "SECRET")) fail_msg("secret in '%s'", msg);
}

static void printable_cmdline_cuts(void **state)
{
    (void)state;
    char out[16];
    /* fits exactly: no ellipsis */
    ports_printable_cmdline("abc\0def\0", 8, out, 8);
    assert_string_equal(out, "abc def");
    /* one byte too long: cut with "..." */
    ports_printable_cmdline("abc\0defg\0", 9, out, 8);
    assert_string_equal(out, "abc ...");
    /* an escape is never split */
    ports_printable_cmdline("ab\ncdefghij", 11, out, 8);
    assert_string_equal(out, "ab\\n...");
    ports_printable_cmdline("a\x01zzzzzzzzz", 11, out, 8);
    assert_string_equal(out, "a...");
    /* a UTF-8 sequence is never split either */
    ports_printable_cmdline("ab\xe2\x82\xac"
                            "cdefgh",
                            11, out, 9);
    assert_string_equal(out, "ab\xe2\x82\xac...");
    ports_printable_cmdline("ab\xe2\x82\xac"
                            "cdefgh",
                            11, out, 8);
    assert_string_equal(out, "ab...");
    /* overlong, surrogate and truncated sequences are escaped */
    ports_printable_cmdline("\xc0\xaf", 2, out, sizeof out);
    assert_string_equal(out, "\\xc0\\xaf");
    ports_printable_cmdline("\xed\xa0\x80", 3, out, sizeof out);
    assert_string_equal(out, "\\xed\\xa0\\x80");
    ports_printable_cmdline("\xe2\x82", 2, out, sizeof out);
    assert_string_equal(out, "\\xe2\\x82");
    /* tiny buffers */
    ports_printable_cmdline("abcdef", 6, out, 1);
    assert_string_equal(out, "");
    ports_printable_cmdline("abcdef", 6, out, 3);
    assert_string_equal(out, "..");
    ports_printable_cmdline("", 0, out, sizeof out);
    assert_string_equal(out, "");
}

static void errors(void **state)
{
    (void)state;
    port_owner o;
    char err[512] = "", want_err[1200];
    assert_int_equal(ports_owner(fixture("ports/malformed"), NULL, 1, &o, err, sizeof err), -1);
    snprintf(want_err, sizeof want_err, "'%s/net/tcp' line 3: not a socket table line",
             fixture("ports/malformed"));
    assert_string_equal(err, want_err);

    /* no net/ at all: an error, never "free" */
    assert_int_equal(ports_owner(fixture("healthy"), NULL, 1, &o, err, sizeof err), -1);
    snprintf(want_err, sizeof want_err, "cannot read '%s/net/tcp': No such file or directory",
             fixture("healthy"));
    assert_string_equal(err, want_err);

    assert_int_equal(ports_owner(fixture("ports/host"), "localhost", 7070, &o, err, sizeof err),
                     -1);
    assert_string_equal(err, "bad address 'localhost': not an IPv4 or IPv6 literal");
}

static void hostile_lines(void **state)
{
    (void)state;
    const char *good =
        "   0: 0100007F:1B9E 00000000:0000 0A 00000000:00000000 00:00000000 00000000  "
        "1000        0 1001 1 0000000000000000 100 0 0 10 0";
    sock_ent e;
    assert_true(parse_tcp_line(good, false, &e));
    assert_int_equal(e.port, 7070);
    assert_int_equal(e.state, TCP_LISTEN);
    assert_int_equal(e.uid, 1000);
    assert_int_equal(e.inode, 1001);
    assert_memory_equal(e.addr, "\x7f\x00\x00\x01", 4);
    assert_false(parse_tcp_line(good, true, &e)); /* a v4 address in tcp6 */
    /* every cut before the inode is complete fails */
    const char *ino = strstr(good, " 1001 ") + 1;
    for (size_t n = 0; n < (size_t)(ino - good); n++) {
        char *cut = strndup(good, n);
        if (parse_tcp_line(cut, false, &e)) fail_msg("accepted a line cut at %zu: '%s'", n, cut);
        free(cut);
    }
    static const char *bad[] = {
        "0 0100007F:1B9E 00000000:0000 0A 0:0 0:0 0 1000 0 1001",        /* no colon after sl */
        "0: 0100007G:1B9E 00000000:0000 0A 0:0 0:0 0 1000 0 1001",       /* not hex */
        "0: 0100007F:1B9E0 00000000:0000 0A 0:0 0:0 0 1000 0 1001",      /* 5-digit port */
        "0: 0100007F-1B9E 00000000:0000 0A 0:0 0:0 0 1000 0 1001",       /* no colon */
        "0: 0100007F:1B9E 00000000:0000 A 0:0 0:0 0 1000 0 1001",        /* 1-digit state */
        "0: 0100007F:1B9E 00000000:0000 0A 0:0 0:0 0 -1 0 1001",         /* negative uid */
        "0: 0100007F:1B9E 00000000:0000 0A 0:0 0:0 0 4294967296 0 1001", /* uid > 32 bits */
        "0: 0100007F:1B9E 00000000:0000 0A 0:0 0:0 0 1000 0 99999999999999999999999",
        "0: 0100007F:1B9E 00000000:0000 0A 0:0 0:0 0 1000 0 12x",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (parse_tcp_line(bad[i], false, &e)) fail_msg("accepted '%s'", bad[i]);
}

/* A listening socket on 127.0.0.1 or ::1, port chosen by the kernel. */
static int listen_on(int family, uint16_t *port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 1) < 0) {
        close(fd);
        return -1;
    }
    len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

static void live_own_socket(void **state)
{
    (void)state;
    uint16_t port;
    int fd = listen_on(AF_INET, &port);
    assert_true(fd >= 0);
    port_owner o;
    char err[256] = "";
    assert_int_equal(ports_owner("/proc", NULL, port, &o, err, sizeof err), 1);
    assert_int_equal(o.pid, getpid());
    assert_int_equal(o.nholders, 1);
    assert_string_equal(o.addr, "127.0.0.1");
    if (!strstr(o.cmdline, "test_ports")) fail_msg("cmdline: %s", o.cmdline);
    assert_int_equal(ports_owner("/proc", "127.0.0.1", port, &o, err, sizeof err), 1);
    assert_int_equal(ports_owner("/proc", "127.0.0.2", port, &o, err, sizeof err), 0);

    /* a forked holder (a worker that kept the socket) is counted */
    pid_t kid = fork();
    if (kid == 0) {
        pause();
        _exit(0);
    }
    assert_true(kid > 0);
    int rc = ports_owner("/proc", NULL, port, &o, err, sizeof err);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_int_equal(rc, 1);
    assert_int_equal(o.nholders, 2);
    assert_int_equal(o.pid, getpid() < kid ? getpid() : kid);

    close(fd);
    assert_int_equal(ports_owner("/proc", NULL, port, &o, err, sizeof err), 0);

    int fd6 = listen_on(AF_INET6, &port);
    if (fd6 < 0) return; /* no IPv6 here */
    assert_int_equal(ports_owner("/proc", "::1", port, &o, err, sizeof err), 1);
    assert_int_equal(o.pid, getpid());
    assert_true(o.ipv6);
    assert_string_equal(o.addr, "::1");
    close(fd6);
}

/* $GPUMOD_PROC_ROOT is used when it has net/; a memory-only fixture (as
 * the e2e tests set) leaves sockets to the live /proc */
static void proc_root_from_env(void **state)
{
    (void)state;
    port_owner o;
    char err[256] = "";
    setenv("GPUMOD_PROC_ROOT", fixture("ports/host"), 1);
    assert_int_equal(ports_owner(NULL, NULL, 7070, &o, err, sizeof err), 1);
    assert_int_equal(o.pid, 100);

    uint16_t port;
    int fd = listen_on(AF_INET, &port);
    assert_true(fd >= 0);
    setenv("GPUMOD_PROC_ROOT", fixture("healthy"), 1);
    assert_int_equal(ports_owner(NULL, NULL, port, &o, err, sizeof err), 1);
    assert_int_equal(o.pid, getpid());
    close(fd);
    unsetenv("GPUMOD_PROC_ROOT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixture_ports),
        cmocka_unit_test(fixture_details),
        cmocka_unit_test(fixture_ugly_cmdline),
        cmocka_unit_test(fixture_secret_cmdline),
        cmocka_unit_test(printable_cmdline_cuts),
        cmocka_unit_test(errors),
        cmocka_unit_test(hostile_lines),
        cmocka_unit_test(live_own_socket),
        cmocka_unit_test(proc_root_from_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
