/* test_breport.c - the renderings of bench result documents (terminal
 * table, CSV, Markdown, SVG) on the hand-written fixtures under
 * tests/fixtures/bench/report/: a 3-point concurrency sweep with 3
 * iterations, a rate run from an older writer (a point without summary,
 * keys missing or null), a context sweep with a degraded and a failed
 * depth, and a switch run with a failed switch.  Exact header lines,
 * known cells, "-" for what is missing, RFC 4180 quoting, well-formed
 * SVG; and partial or hostile documents that must render without a
 * crash.  With GPUMOD_BREPORT_OUT=DIR every rendering of every fixture is
 * also written there (FIXTURE.txt/.md/.csv/.svg), for
 * tests/e2e/t80-bench-svg.sh and for a person to look at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/bench.h"
#include "testenv.h"
#include "xmlcheck.h"

static const char *const fixtures[] = {"load-concurrency", "load-rate", "ctx-sweep", "switch"};

static cJSON *load_fixture(const char *name)
{
    char *rel = xasprintf("tests/fixtures/bench/report/%s.json", name);
    char *path = src_path(rel);
    char *text = read_text(path);
    if (!text) fail_msg("cannot read %s", path);
    cJSON *r = cJSON_Parse(text);
    if (!r) fail_msg("%s is not JSON", path);
    free(text);
    free(path);
    free(rel);
    return r;
}

typedef void (*render_fn)(buf *, const cJSON *);

static void table_plain(buf *out, const cJSON *r)
{
    breport_table(out, r, false);
}

static char *render(const char *fixture, render_fn fn)
{
    cJSON *r = load_fixture(fixture);
    buf b = BUF_INIT;
    fn(&b, r);
    cJSON_Delete(r);
    return buf_detach(&b);
}

/* line i (0-based) of s, without its end of line (caller frees) */
static char *line_of(const char *s, int i)
{
    for (; i > 0 && s; i--) {
        s = strchr(s, '\n');
        if (s) s++;
    }
    if (!s) return xstrdup("");
    size_t n = strcspn(s, "\r\n");
    return xstrndup(s, n);
}

static void assert_line(const char *s, int i, const char *want)
{
    char *l = line_of(s, i);
    if (strcmp(l, want) != 0) fail_msg("line %d:\n got  '%s'\n want '%s'\nin:\n%s", i, l, want, s);
    free(l);
}

static void assert_has(const char *s, const char *want)
{
    if (!strstr(s, want)) fail_msg("lacks '%s' in:\n%s", want, s);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* ---- the terminal table ------------------------------------------------------- */

static void table_load(void **state)
{
    char *t = render("load-concurrency", table_plain);
    assert_line(t, 0, "load: closed loop, 3 iterations per point, 256 prompt tokens, 128 generated");
    assert_line(t, 1, "target: qwen3-8b-q4 via router (service qwen3) at http://127.0.0.1:7070, llamacpp b4567-abc123");
    assert_line(t, 3,
                "concurrency                 req/s          out tok/s  TTFT p50 ms  TTFT p99 ms  TPOT p50 ms"
                "  TPOT p99 ms  ITL p50 ms  E2EL p50 ms               goodput  failed");
    assert_line(t, 4,
                "-----------  --------------------  -----------------  -----------  -----------  -----------"
                "  -----------  ----------  -----------  --------------------  ------");
    /* p99 with 20 requests per iteration is null: "-" */
    assert_line(t, 5,
                "1            0.384 [0.382, 0.386]  49.1 [48.9, 49.4]         31.2            -         7.61"
                "            -        7.58          997  0.384 [0.382, 0.386]       0");
    assert_line(t, 7,
                "64              9.70 [9.54, 9.74]  1242 [1221, 1247]          180          413         47.9"
                "         61.2        47.5         6263     8.91 [8.60, 9.02]       2");
    assert_has(t, "\nfigures: medians over iterations; [lo, hi] the bootstrap 95 % interval of the median\n");
    assert_has(t, "\nfailed concurrency 64: 2 x timed out after 600000 ms\n");
    assert_has(t, "\nself-check concurrency 1: ok, the client was not the bottleneck (client cpu up to 3 % of a core)\n");
    assert_has(t, "\nself-check concurrency 64: CLIENT-BOUND in 1 of 3 iterations (client cpu up to 88 % of a core)\n"
                  "  client CPU 88 % of one core (> 85 %): the client may be the bottleneck\n");
    assert_has(t, "\nwarning: the server reported no speculative-decoding counters\n");
    assert_null(strstr(t, "\033"));
    assert_null(strstr(t, " \n")); /* no trailing spaces */
    free(t);
}

static void table_rate_older_document(void **state)
{
    char *t = render("load-rate", table_plain);
    assert_line(t, 0, "load: open loop, 1 iteration per point, 256 prompt tokens, 128 generated");
    assert_line(t, 1, "target: qwen3-8b-q4 via url at http://127.0.0.1:8080, llamacpp");
    assert_line(t, 3,
                "rate  req/s  out tok/s  TTFT p50 ms  TTFT p99 ms  TPOT p50 ms  TPOT p99 ms  ITL p50 ms"
                "  E2EL p50 ms  goodput  failed");
    /* one iteration: no interval; no SLO: goodput "-" */
    assert_line(t, 5, "2      1.96        251         38.2            -         8.10            -        8.05         1067"
                      "        -       0");
    /* the point without a summary takes its iteration's values; tpot null,
     * tpot p99 missing */
    assert_line(t, 6, "5      4.81        612         52.3            -            -            -        8.90         1181"
                      "        -       1");
    assert_null(strstr(t, "figures: medians"));
    assert_has(t, "self-check rate 2: ok");
    assert_null(strstr(t, "self-check rate 5")); /* that iteration has no self_check */
    free(t);
}

static void table_ctx_sweep(void **state)
{
    char *t = render("ctx-sweep", table_plain);
    assert_line(t, 0, "context sweep: prefill and decode speed by depth in the KV cache, 0 to 32768 by 8192");
    assert_line(t, 3, "depth  prefill tok/s  decode tok/s    status");
    assert_line(t, 4, "-----  -------------  ------------  --------");
    assert_line(t, 5, "0               3120           131        ok");
    assert_line(t, 8, "24576           1720          61.0  degraded");
    assert_line(t, 9, "32768              -             -    failed");
    assert_has(t, "\ndepth 24576: degraded: decode speed 61 tok/s is below half of depth 0 (131.2)\n");
    assert_has(t, "\ndepth 32768: failed: server answered 500: \"context size exceeded\", n_ctx 32768\n");
    assert_has(t, "\nsweep stopped: failed; deepest ok depth 16384 (server answered 500 at depth 32768)\n");
    free(t);
}

static void table_switch(void **state)
{
    char *t = render("switch", table_plain);
    assert_line(t, 0, "switch: code <-> chat, 2 per direction, 1 failed");
    assert_line(t, 2, "phase         median [lo, hi] ms  n    code -> chat ms  n  chat -> code ms  n");
    assert_line(t, 3, "------------  ------------------  -  -----------------  -  ---------------  -");
    assert_line(t, 4, "stop              212 [198, 241]  3     226 [212, 241]  2              198  1");
    assert_line(t, 5, "verify freed   35.2 [31.0, 40.8]  3  38.0 [35.2, 40.8]  2             31.0  1");
    assert_line(t, 8, "first token     95.3 [88.1, 102]  3   98.6 [95.3, 102]  2             88.1  1");
    assert_line(t, 9, "total          2644 [2598, 2887]  3  2765 [2644, 2887]  2             2598  1");
    assert_has(t, "\nswitch 104 (chat -> code) rolled_back: mode 'code': service \"qwen3\" did not become healthy "
                  "within 120 s, rolled back\n");
    assert_has(t, "\nwarning: switch 104 rolled back; the run went on from mode 'chat'\n");
    free(t);

    /* without "directions" (an older writer): the pooled columns only */
    cJSON *r = cJSON_Parse("{\"kind\":\"switch\",\"modes\":[\"a\",\"b\"],\"phases\":{\"stop_ms\":"
                           "{\"median\":3,\"lo\":2,\"hi\":4,\"n\":4},\"load_ms\":{\"median\":null}}}");
    buf b = BUF_INIT;
    breport_table(&b, r, false);
    assert_line(b.p, 0, "switch: a <-> b");
    assert_line(b.p, 2, "phase  median [lo, hi] ms  n");
    assert_line(b.p, 4, "stop    3.00 [2.00, 4.00]  4");
    assert_line(b.p, 5, "load                    -  -");
    buf_release(&b);
    cJSON_Delete(r);
}

/* A count far outside int ("n": 1e300) is not converted (UB; x86 gives
 * INT_MIN): it reads as 0. */
static void huge_counts(void **state)
{
    cJSON *r = cJSON_Parse("{\"kind\":\"switch\",\"modes\":[\"a\",\"b\"],\"phases\":{\"stop_ms\":"
                           "{\"median\":3,\"lo\":2,\"hi\":4,\"n\":1e300},\"load_ms\":{\"median\":5,\"n\":-1e300}}}");
    buf b = BUF_INIT;
    breport_table(&b, r, false);
    assert_line(b.p, 4, "stop                 3.00  0");
    assert_line(b.p, 5, "load                 5.00  0");
    buf_release(&b);
    cJSON_Delete(r);
    r = cJSON_Parse("{\"kind\":\"load\",\"points\":[{\"x_name\":\"concurrency\",\"x\":4,\"summary\":"
                    "{\"out_tput\":{\"median\":5,\"lo\":4,\"hi\":6,\"n\":1e300}}}]}");
    breport_table(&b, r, false);
    assert_null(strstr(b.p, "2147483648"));
    buf_release(&b);
    breport_svg(&b, r);
    assert_null(xml_check(b.p));
    buf_release(&b);
    cJSON_Delete(r);
}

static void table_color(void **state)
{
    cJSON *r = load_fixture("load-concurrency");
    buf b = BUF_INIT;
    breport_table(&b, r, true);
    assert_has(b.p, "\033[1mconcurrency ");
    assert_has(b.p, "\033[31mself-check concurrency 64: CLIENT-BOUND");
    assert_has(b.p, "\033[33mwarning: the server");
    cJSON_Delete(r);
    buf_release(&b);
}

/* ---- CSV ------------------------------------------------------------------------------ */

/* RFC 4180 fields of one record starting at *p; advances *p past its CRLF.
 * Returns the number of fields; field k copied to f[k] (caller frees). */
static size_t csv_record(const char **p, char **f, size_t max)
{
    size_t n = 0;
    const char *s = *p;
    for (;;) {
        buf b = BUF_INIT;
        if (*s == '"') {
            for (s++; *s; s++) {
                if (*s == '"' && s[1] == '"') buf_addc(&b, '"'), s++;
                else if (*s == '"') break;
                else buf_addc(&b, *s);
            }
            assert_int_equal(*s, '"');
            s++;
        } else {
            size_t l = strcspn(s, ",\r\n");
            buf_add(&b, s, l);
            s += l;
        }
        if (n < max) f[n] = buf_detach(&b);
        else buf_release(&b);
        n++;
        if (*s == ',') {
            s++;
            continue;
        }
        assert_true(s[0] == '\r' && s[1] == '\n'); /* every record ends in CRLF */
        *p = s + 2;
        return n;
    }
}

static void free_fields(char **f, size_t n)
{
    for (size_t i = 0; i < n; i++) free(f[i]);
}

static void csv_load(void **state)
{
    char *c = render("load-concurrency", breport_csv);
    assert_line(c, 0, "x_name,x,iteration,req_tput,out_tput,total_tput,goodput,ttft_ms,ttft_ms_p99,tpot_ms,"
                      "tpot_ms_p99,itl_token_ms,itl_chunk_ms_p99,e2el_ms,e2el_ms_p99,ttfc_ms,sent,completed,failed,"
                      "tokens_in,tokens_out,window_s");
    /* p99 null: an empty field */
    assert_line(c, 1, "concurrency,1,1,0.384,49.1,147.3,0.384,31.2,,7.61,,7.58,,997,,31.2,20,20,0,5120,2560,52.1");
    assert_line(c, 8,
                "concurrency,64,2,9.54,1221.1,3663.3,8.6,191.7,455,48.8,63,48.3,63,6389.6,8306.5,191.7,640,638,2,"
                "163328,81664,66.9");
    /* 9 iterations, one record each, every record as wide as the header */
    const char *p = c;
    char *f[64];
    size_t nh = csv_record(&p, f, 64);
    free_fields(f, nh < 64 ? nh : 64);
    int rows = 0;
    while (*p) {
        size_t n = csv_record(&p, f, 64);
        assert_int_equal(n, nh);
        free_fields(f, n);
        rows++;
    }
    assert_int_equal(rows, 9);
    free(c);
}

static void csv_rate_missing(void **state)
{
    char *c = render("load-rate", breport_csv);
    assert_line(c, 0, "x_name,x,iteration,req_tput,out_tput,total_tput,goodput,ttft_ms,ttft_ms_p99,tpot_ms,"
                      "tpot_ms_p99,itl_token_ms,itl_chunk_ms_p99,e2el_ms,e2el_ms_p99,ttfc_ms,ttft_sched_ms,sent,"
                      "completed,failed,tokens_in,tokens_out,window_s");
    /* goodput and tpot_ms_p99 missing, tpot_ms null, tokens_in missing */
    assert_line(c, 2, "rate,5,1,4.81,612,1836,,52.3,,,,8.9,,1181.4,,52.3,53.8,125,124,1,,15872,25.8");
    free(c);
}

static void csv_ctx_quoting(void **state)
{
    char *c = render("ctx-sweep", breport_csv);
    assert_line(c, 0, "x_name,x,iteration,prefill_tps,gen_tps,prefill_tokens,gen_tokens,cache_n,status,reason");
    assert_line(c, 1, "depth,0,1,3120.5,131.2,8192,64,0,ok,");
    assert_line(c, 5, "depth,32768,1,,,8192,0,32768,failed,\"server answered 500: \"\"context size exceeded\"\", "
                      "n_ctx 32768\"");
    /* and it reads back as the same text */
    const char *p = strstr(c, "depth,32768");
    char *f[16];
    size_t n = csv_record(&p, f, 16);
    assert_int_equal(n, 10);
    assert_string_equal(f[9], "server answered 500: \"context size exceeded\", n_ctx 32768");
    free_fields(f, n);
    free(c);
}

static void csv_switch(void **state)
{
    char *c = render("switch", breport_csv);
    assert_line(c, 0, "switch,from,to,outcome,ok,stop_ms,verify_freed_ms,start_ms,load_ms,first_token_ms,total_ms,error");
    /* phases from the switch's "phases", total and first token from its top */
    assert_line(c, 1, "101,code,chat,committed,true,212,35.2,2290.3,1810.2,95.3,2644,");
    assert_line(c, 4, "104,chat,code,rolled_back,false,205.3,,,,,,\"mode 'code': service \"\"qwen3\"\" did not become "
                      "healthy within 120 s, rolled back\"");
    assert_int_equal(count(c, "\r\n"), 5);
    free(c);
}

/* ---- Markdown ---------------------------------------------------------------------------- */

static void md_tables(void **state)
{
    char *m = render("load-concurrency", breport_md);
    assert_line(m, 0, "**load:** closed loop, 3 iterations per point, 256 prompt tokens, 128 generated  ");
    assert_line(m, 3, "| concurrency | req/s | out tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms | "
                      "ITL p50 ms | E2EL p50 ms | goodput | failed |");
    assert_line(m, 4, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    assert_line(m, 5, "| 1 | 0.384 [0.382, 0.386] | 49.1 [48.9, 49.4] | 31.2 | - | 7.61 | - | 7.58 | 997 | "
                      "0.384 [0.382, 0.386] | 0 |");
    assert_has(m, "\n- self-check concurrency 64: CLIENT-BOUND in 1 of 3 iterations (client cpu up to 88 % of a core)\n"
                  "  - client CPU 88 % of one core (> 85 %): the client may be the bottleneck\n");
    free(m);

    m = render("switch", breport_md);
    assert_line(m, 2, "| phase | median [lo, hi] ms | n | code -> chat ms | n | chat -> code ms | n |");
    assert_line(m, 4, "| stop | 212 [198, 241] | 3 | 226 [212, 241] | 2 | 198 | 1 |");
    free(m);

    m = render("ctx-sweep", breport_md);
    assert_line(m, 3, "| depth | prefill tok/s | decode tok/s | status |");
    assert_line(m, 9, "| 32768 | - | - | failed |");
    free(m);

    /* a '|' in a cell cannot break the table */
    cJSON *r = cJSON_Parse("{\"kind\":\"switch\",\"phases\":{\"a|b_ms\":{\"median\":1,\"n\":1}},"
                           "\"warnings\":[\"x | y\"]}");
    buf b = BUF_INIT;
    breport_md(&b, r);
    assert_has(b.p, "| a\\|b | 1.00 | 1 |");
    assert_has(b.p, "- warning: x \\| y\n");
    buf_release(&b);
    cJSON_Delete(r);
}

/* ---- SVG ------------------------------------------------------------------------------------- */

static void svg_each_kind(void **state)
{
    char *s = render("load-concurrency", breport_svg);
    const char *why = xml_check(s);
    if (why) fail_msg("load SVG: %s", why);
    assert_int_equal(count(s, "class=\"chart\""), 4);
    assert_has(s, ">qwen3-8b-q4: output token throughput</text>");
    assert_has(s, ">qwen3-8b-q4: request throughput</text>");
    assert_has(s, ">qwen3-8b-q4: time to first token</text>");
    assert_has(s, ">qwen3-8b-q4: time per output token</text>");
    assert_has(s, ">concurrency (requests in flight)</text>");
    assert_has(s, ">goodput (requests/s meeting the SLOs)</text>");
    /* log2 x: 1 .. 64 */
    assert_has(s, ">16</text>");
    /* intervals: out tok/s 3, req/s 3, goodput 3, TTFT p50 3 + p99 1,
     * TPOT p50 3 + p99 1 */
    assert_int_equal(count(s, "class=\"interval\""), 17);
    assert_has(s, "<title>output tok/s x=64: 1241.6 [1221.1, 1246.7]</title>");
    free(s);

    s = render("load-rate", breport_svg);
    assert_null(xml_check(s));
    assert_has(s, ">request rate (requests/s offered)</text>");
    assert_null(strstr(s, "goodput")); /* no SLO */
    assert_int_equal(count(s, "class=\"interval\""), 0); /* one iteration */
    /* every chart of the stack spans the whole sweep, even the TPOT chart
     * whose only value is at rate 2 */
    assert_int_equal(count(s, ">4.5</text>"), 4);
    assert_has(s, ">TPOT p99 (none: needs 100 requests per iteration)</text>");
    free(s);

    s = render("ctx-sweep", breport_svg);
    assert_null(xml_check(s));
    assert_int_equal(count(s, "class=\"chart\""), 2);
    assert_has(s, ">qwen3-8b-q4: decode speed by context depth, degraded at 24576, failed at 32768</text>");
    assert_has(s, "<title>decode tok/s x=24576: 61</title>");
    assert_int_equal(count(s, ">35k</text>"), 2); /* the failed depth 32768 is on the axis */
    free(s);

    s = render("switch", breport_svg);
    assert_null(xml_check(s));
    assert_has(s, ">mode switch code &lt;-&gt; chat: time of each phase (2 per direction)</text>");
    assert_has(s, ">verify freed</text>");
    assert_has(s, "<title>median, bar: 95 % interval start: 2290.3 [2270, 2488.1]</title>");
    assert_int_equal(count(s, "class=\"interval\""), 6);
    free(s);
}

/* ---- documents from older, partial or broken runs ------------------------------------------- */

static void partial_documents(void **state)
{
    static const char *const docs[] = {
        "{}",
        "[]",
        "null",
        "{\"kind\":\"load\"}",
        "{\"kind\":\"load\",\"points\":[]}",
        "{\"kind\":\"load\",\"points\":[{}]}",
        "{\"kind\":\"load\",\"points\":[{\"x\":\"8\",\"x_name\":7,\"iterations\":[null,5,{\"values\":null},"
        "{\"values\":{\"req_tput\":\"fast\",\"out_tput\":[1]},\"self_check\":{\"warnings\":[3,null]},"
        "\"errors\":{\"e\":\"x\"}}],\"summary\":{\"req_tput\":{\"median\":null},\"out_tput\":7}}],"
        "\"warnings\":[1,null],\"target\":{\"model\":null}}",
        "{\"kind\":\"ctx_sweep\",\"points\":[{\"x_name\":\"depth\"},{\"x\":5,\"iterations\":[{\"status\":\"odd\"}]}]}",
        "{\"kind\":\"switch\"}",
        "{\"kind\":\"switch\",\"modes\":\"ab\",\"n\":\"4\",\"phases\":{\"x_ms\":{},\"y\":5},\"switches\":[1,{},"
        "{\"ok\":false}]}",
        "{\"kind\":\"switch\",\"switches\":[{\"i\":1,\"stop_ms\":5,\"ok\":true}]}",
        "{\"kind\":\"future\",\"points\":[{\"x_name\":\"concurrency\",\"x\":-1}]}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        cJSON *r = cJSON_Parse(docs[i]);
        buf b = BUF_INIT;
        breport_table(&b, r, true);
        breport_md(&b, r);
        breport_csv(&b, r);
        assert_true(b.len > 0);
        buf_release(&b);
        breport_svg(&b, r);
        const char *why = xml_check(b.p);
        if (why) fail_msg("document %zu: SVG %s", i, why);
        buf_release(&b);
        cJSON_Delete(r);
    }
    /* a NULL document too */
    buf b = BUF_INIT;
    breport_table(&b, NULL, false);
    assert_has(b.p, "(no points: the run measured nothing)");
    buf_release(&b);
    breport_svg(&b, NULL);
    assert_null(xml_check(b.p));
    assert_has(b.p, ">no data</text>");
    buf_release(&b);

    /* a point with nothing in it: every figure "-" */
    cJSON *r = cJSON_Parse("{\"kind\":\"load\",\"points\":[{\"x_name\":\"concurrency\",\"x\":4}]}");
    breport_table(&b, r, false);
    assert_line(b.p, 4, "4                -          -            -            -            -            -           -"
                        "            -        -       -");
    buf_release(&b);
    breport_csv(&b, r);
    assert_string_equal(b.p, "x_name,x,iteration,sent,completed,failed,tokens_in,tokens_out,window_s\r\n");
    buf_release(&b);
    cJSON_Delete(r);
}

/* GPUMOD_BREPORT_OUT=DIR: every rendering of every fixture, as files */
static void write_renderings(void **state)
{
    const char *dir = getenv("GPUMOD_BREPORT_OUT");
    if (!dir || !*dir) skip();
    static const struct {
        const char *ext;
        render_fn fn;
    } kinds[] = {{"txt", table_plain}, {"md", breport_md}, {"csv", breport_csv}, {"svg", breport_svg}};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        for (size_t k = 0; k < 4; k++) {
            char *text = render(fixtures[i], kinds[k].fn);
            char *path = xasprintf("%s/%s.%s", dir, fixtures[i], kinds[k].ext);
            FILE *f = fopen(path, "w");
            if (!f) fail_msg("cannot write %s", path);
            fputs(text, f);
            fclose(f);
            free(path);
            free(text);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_load),      cmocka_unit_test(table_rate_older_document),
        cmocka_unit_test(table_ctx_sweep), cmocka_unit_test(table_switch),
        cmocka_unit_test(table_color),     cmocka_unit_test(csv_load),
        cmocka_unit_test(csv_rate_missing), cmocka_unit_test(csv_ctx_quoting),
        cmocka_unit_test(csv_switch),      cmocka_unit_test(md_tables),
        cmocka_unit_test(svg_each_kind),   cmocka_unit_test(partial_documents),
        cmocka_unit_test(write_renderings), cmocka_unit_test(huge_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
