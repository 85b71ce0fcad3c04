/* test_svg.c - the SVG line charts of bench: tick label formatting (1.2k,
 * 25, 0.5), 1-2-5 linear ticks and log2 ticks, what a chart holds (title,
 * axis labels with the y label rotated, legend, one polyline per run of
 * finite points, markers, interval bars, palette colours), NaN gaps, the
 * "no data" chart, categorical x, escaping of hostile text, and a
 * well-formedness check of every document (tags balanced, entities
 * known).  With GPUMOD_SVG_OUT=DIR each chart is also written there, for
 * tests/e2e/t80-bench-svg.sh to parse with python3's XML parser and for
 * a person to look at. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "../../src/core/svg.c"
#include "testenv.h"
#include "xmlcheck.h"

/* ---- helpers ------------------------------------------------------------- */

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void save(const char *name, const buf *b)
{
    const char *dir = getenv("GPUMOD_SVG_OUT");
    if (!dir || !*dir) return;
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(b->p, 1, b->len, f);
    fclose(f);
    free(path);
}

static void assert_wellformed(const buf *b)
{
    const char *why = xml_check(b->p);
    if (why) fail_msg("not well-formed XML: %s\n%s", why, b->p);
}

/* ---- tick labels and axes -------------------------------------------------- */

static void tick_labels(void **state)
{
    char o[32];
    fmt_tick(o, sizeof o, 1200, 2);
    assert_string_equal(o, "1.2k");
    fmt_tick(o, sizeof o, 1000, 2);
    assert_string_equal(o, "1k");
    fmt_tick(o, sizeof o, 25, 0);
    assert_string_equal(o, "25");
    fmt_tick(o, sizeof o, 0.5, -1);
    assert_string_equal(o, "0.5");
    fmt_tick(o, sizeof o, 3.5, -1);
    assert_string_equal(o, "3.5");
    fmt_tick(o, sizeof o, 4, -1);
    assert_string_equal(o, "4");
    fmt_tick(o, sizeof o, 0.05, -2);
    assert_string_equal(o, "0.05");
    fmt_tick(o, sizeof o, -1e-17, -1); /* rounding residue of 0 */
    assert_string_equal(o, "0");
    fmt_tick(o, sizeof o, 2.5e6, 5);
    assert_string_equal(o, "2.5M");
    fmt_tick(o, sizeof o, 15000, 3);
    assert_string_equal(o, "15k");
    fmt_tick(o, sizeof o, 1202, 0);
    assert_string_equal(o, "1.202k");
    fmt_tick(o, sizeof o, -200, 2);
    assert_string_equal(o, "-200");
    fmt_tick_log2(o, sizeof o, 10);
    assert_string_equal(o, "1024");
    fmt_tick_log2(o, sizeof o, -1);
    assert_string_equal(o, "0.5");
    fmt_tick_log2(o, sizeof o, 0);
    assert_string_equal(o, "1");
}

static void nice_ticks(void **state)
{
    axis a = {0};
    axis_linear(&a, 3, 117, true);
    assert_int_equal(a.nt, 7); /* 0, 20, ... 120 */
    assert_true(a.t[0] == 0 && fabs(a.t[6] - 120) < 1e-9);
    assert_int_equal(a.exp10, 1);

    axis_linear(&a, 0.12, 0.93, false);
    assert_true(fabs(a.t[1] - a.t[0] - 0.2) < 1e-12); /* 0, 0.2, ... 1 */
    assert_true(fabs(a.lo) < 1e-12 && fabs(a.hi - 1) < 1e-12);

    axis_linear(&a, 1740, 2310, false); /* 1.6k .. 2.4k by 200 (rounded 1-2-5) */
    assert_true(fabs(a.t[1] - a.t[0] - 100) < 1e-9 || fabs(a.t[1] - a.t[0] - 200) < 1e-9);
    assert_true(a.lo <= 1740 && a.hi >= 2310);

    axis_linear(&a, 42, 42, true); /* one value: the axis still has a range */
    assert_true(a.lo == 0 && a.hi >= 42 && a.hi > a.lo);
    axis_linear(&a, 0, 0, false);
    assert_true(a.hi > a.lo);

    axis b = {0};
    axis_log2(&b, 1, 64);
    assert_int_equal(b.nt, 7);
    assert_true(b.t[0] == 0 && b.t[6] == 6);
    axis c = {0};
    axis_log2(&c, 1, 1 << 30); /* 31 powers: every third is labelled */
    assert_true(c.nt <= 11);
    assert_true(c.t[1] - c.t[0] == 3);
    axis d = {0};
    axis_log2(&d, 8, 8);
    assert_true(d.lo == 2 && d.hi == 4);
}

/* ---- charts ------------------------------------------------------------------ */

static const double cx[] = {1, 2, 4, 8, 16, 32, 64};
static const double tput[] = {52, 101, 197, 380, 702, 1180, 1410};
static const double tlo[] = {50, 98, 190, 371, 690, 1150, 1370};
static const double thi[] = {55, 104, 203, 391, 713, 1204, 1440};
static const double ttft99[] = {NAN, NAN, 52, 70, 95, 171, 333};

static void full_chart(void **state)
{
    svg_series s[] = {
        {.name = "output tok/s", .x = cx, .y = tput, .ylo = tlo, .yhi = thi, .n = 7},
        {.name = "TTFT p99", .x = cx, .y = ttft99, .n = 7},
    };
    svg_chart c = {.title = "Output token throughput",
                   .x_label = "concurrency (streams)",
                   .y_label = "tokens/s",
                   .log_x = true,
                   .y_from_zero = true,
                   .series = s,
                   .n_series = 2};
    buf b = BUF_INIT;
    svg_line_chart(&b, &c);
    save("svg-full.svg", &b);
    assert_wellformed(&b);
    assert_non_null(strstr(b.p, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"440\""));
    assert_non_null(strstr(b.p, ">Output token throughput</text>"));
    assert_non_null(strstr(b.p, ">concurrency (streams)</text>"));
    /* the y label is rotated */
    assert_non_null(strstr(b.p, "transform=\"rotate(-90 18 "));
    assert_non_null(strstr(b.p, ">tokens/s</text>"));
    /* legend entries */
    assert_non_null(strstr(b.p, ">output tok/s</text></g>"));
    assert_non_null(strstr(b.p, ">TTFT p99</text></g>"));
    /* palette: blue then orange */
    assert_non_null(strstr(b.p, "stroke=\"#0072B2\""));
    assert_non_null(strstr(b.p, "stroke=\"#E69F00\""));
    /* log2 x ticks 1..64, y ticks 0..1.6k with 1-2-5 steps */
    assert_non_null(strstr(b.p, ">1</text>"));
    assert_non_null(strstr(b.p, ">64</text>"));
    assert_non_null(strstr(b.p, ">0</text>"));
    assert_non_null(strstr(b.p, ">1.2k</text>"));
    /* 2 series: 2 polylines (the p99 series starts after its NaNs), 7
     * interval bars, 7 + 5 markers with their tooltips */
    assert_int_equal(count(b.p, "<polyline"), 2);
    assert_int_equal(count(b.p, "class=\"interval\""), 7);
    assert_int_equal(count(b.p, "<title>"), 12);
    assert_non_null(strstr(b.p, "<title>output tok/s x=64: 1410 [1370, 1440]</title>"));
    assert_null(strstr(b.p, "nan"));
    assert_null(strstr(b.p, "inf"));
    assert_null(strstr(b.p, "no data"));
    buf_release(&b);
}

static void nan_gap(void **state)
{
    double x[] = {0, 1, 2, 3, 4, 5};
    double y[] = {1, 2, NAN, 4, 5, NAN};
    svg_series s = {.name = "gappy", .x = x, .y = y, .n = 6};
    svg_chart c = {.title = "Gap", .x_label = "x", .y_label = "y", .series = &s, .n_series = 1};
    buf b = BUF_INIT;
    svg_line_chart(&b, &c);
    save("svg-gap.svg", &b);
    assert_wellformed(&b);
    assert_int_equal(count(b.p, "<polyline"), 2); /* 0-1 and 3-4 */
    assert_int_equal(count(b.p, "<title>"), 4);
    buf_release(&b);

    /* log_x: x <= 0 cannot be placed and is skipped like a NaN */
    double lx[] = {0, 1, 2, 4};
    double ly[] = {9, 1, 2, 3};
    svg_series ls = {.name = "log", .x = lx, .y = ly, .n = 4};
    svg_chart lc = {.title = "log", .log_x = true, .series = &ls, .n_series = 1};
    svg_line_chart(&b, &lc);
    assert_wellformed(&b);
    assert_int_equal(count(b.p, "<title>"), 3);
    assert_null(strstr(b.p, "x=0:"));
    buf_release(&b);
}

static void no_data(void **state)
{
    double x[] = {1, 2};
    double y[] = {NAN, NAN};
    svg_series s = {.name = "empty", .x = x, .y = y, .n = 2};
    svg_chart c = {.title = "Nothing", .x_label = "rate (req/s)", .y_label = "ms", .series = &s, .n_series = 1};
    buf b = BUF_INIT;
    svg_line_chart(&b, &c);
    save("svg-nodata.svg", &b);
    assert_wellformed(&b);
    assert_non_null(strstr(b.p, ">no data</text>"));
    assert_non_null(strstr(b.p, ">rate (req/s)</text>")); /* the axes are still there */
    assert_int_equal(count(b.p, "<polyline"), 0);
    assert_int_equal(count(b.p, "<title>"), 0);
    buf_release(&b);

    svg_chart none = {.title = "No series"};
    svg_line_chart(&b, &none);
    assert_wellformed(&b);
    assert_non_null(strstr(b.p, ">no data</text>"));
    buf_release(&b);

    svg_stack(&b, NULL, 0);
    assert_wellformed(&b);
    assert_non_null(strstr(b.p, ">no data</text>"));
    buf_release(&b);
}

static void escaping(void **state)
{
    double x[] = {1, 2};
    double y[] = {1, 2};
    svg_series s = {.name = "a<b>&\"c\"", .x = x, .y = y, .n = 2};
    svg_chart c = {.title = "<script>alert('x')</script> & co",
                   .x_label = "bad\x01"
                              "byte \xff\xfe end",
                   .y_label = "\xc3\xa9t\xc3\xa9 \xe2\x86\x92 ok",
                   .series = &s,
                   .n_series = 1};
    buf b = BUF_INIT;
    svg_line_chart(&b, &c);
    save("svg-escape.svg", &b);
    assert_wellformed(&b);
    assert_non_null(strstr(b.p, "&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; co"));
    assert_non_null(strstr(b.p, ">a&lt;b&gt;&amp;&quot;c&quot;</text>"));
    assert_non_null(strstr(b.p, ">bad?byte ?? end</text>"));
    assert_non_null(strstr(b.p, ">\xc3\xa9t\xc3\xa9 \xe2\x86\x92 ok</text>")); /* valid UTF-8 kept */
    assert_null(strstr(b.p, "<script"));
    buf_release(&b);

    /* a title too long for the width is set smaller, not cut */
    c.title = "a very long title that would not fit into the width of the chart at fifteen pixels bold";
    svg_line_chart(&b, &c);
    assert_null(strstr(b.p, "font-size=\"15.0\" font-weight"));
    assert_non_null(strstr(b.p, "font-weight=\"bold\">a very long title"));
    buf_release(&b);
    c.title = "short";
    svg_line_chart(&b, &c);
    assert_non_null(strstr(b.p, "font-size=\"15.0\" font-weight"));
    buf_release(&b);
}

static void categorical_and_stack(void **state)
{
    static const char *const phases[] = {"stop", "verify freed", "load", "ready", "first token"};
    double x[] = {0, 1, 2, 3, 4};
    double y[] = {210, 35, 1800, 2300, 95};
    double lo[] = {190, 30, 1700, 2150, 80};
    double hi[] = {250, 41, 1950, 2500, NAN};
    svg_series s = {.name = "median (95 % interval)", .x = x, .y = y, .ylo = lo, .yhi = hi, .n = 5};
    svg_chart charts[2] = {
        {.title = "Switch phases", .y_label = "ms", .y_from_zero = true, .series = &s, .n_series = 1,
         .cats = phases, .n_cats = 5},
        {.title = "Second", .x_label = "x", .y_label = "y", .width = 800, .height = 300, .series = &s,
         .n_series = 1},
    };
    buf b = BUF_INIT;
    svg_stack(&b, charts, 2);
    save("svg-stack.svg", &b);
    assert_wellformed(&b);
    assert_non_null(strstr(b.p, "width=\"800\" height=\"740\""));
    assert_int_equal(count(b.p, "class=\"chart\""), 2);
    assert_non_null(strstr(b.p, "translate(0 440)"));
    assert_non_null(strstr(b.p, ">verify freed</text>"));
    assert_non_null(strstr(b.p, "<title>median (95 % interval) first token: 95</title>"));
    /* categorical: markers only, no polyline; the second chart has one */
    assert_int_equal(count(b.p, "<polyline"), 1);
    assert_int_equal(count(b.p, "class=\"interval\""), 8);
    buf_release(&b);
}

static void many_series_legend_wraps(void **state)
{
    double x[] = {1, 2, 3};
    double y[10][3];
    svg_series s[10];
    char names[10][40];
    for (int i = 0; i < 10; i++) {
        for (int k = 0; k < 3; k++) y[i][k] = i * 10 + k;
        snprintf(names[i], sizeof names[i], "series number %d with a long name", i);
        s[i] = (svg_series){.name = names[i], .x = x, .y = y[i], .n = 3};
    }
    svg_chart c = {.title = "Ten", .x_label = "x", .y_label = "y", .series = s, .n_series = 10};
    buf b = BUF_INIT;
    svg_line_chart(&b, &c);
    save("svg-legend.svg", &b);
    assert_wellformed(&b);
    assert_int_equal(count(b.p, "class=\"legend\""), 10);
    /* palette and marker shapes cycle: series 8 is blue again */
    assert_int_equal(count(b.p, "<g class=\"series\" stroke=\"#0072B2\""), 2);
    assert_true(count(b.p, "<rect x=") >= 3);
    buf_release(&b);
}

/* y values near DBL_MAX: the range overflows to inf; no "nan"/"inf" may
 * reach the SVG (values beyond +-1e300 are not placed, like NaN).  Tiny
 * values keep distinct tick labels (%.3g below 1e-9). */
static void extreme_ranges(void **state)
{
    double x[] = {1, 2, 3};
    double y[] = {-1e308, 1e308, 5};
    double lo[] = {-1e308, 1, 4}, hi[] = {1e308, 1e308, 6};
    svg_series s = {.name = "huge", .x = x, .y = y, .ylo = lo, .yhi = hi, .n = 3};
    svg_chart c = {.title = "Huge", .series = &s, .n_series = 1};
    buf b = BUF_INIT;
    svg_line_chart(&b, &c);
    assert_wellformed(&b);
    assert_null(strstr(b.p, "nan"));
    assert_null(strstr(b.p, "inf"));
    buf_release(&b);

    double ty[] = {1e-310, 2e-310, 1.5e-310};
    svg_series ts = {.name = "tiny", .x = x, .y = ty, .n = 3};
    svg_chart tc = {.title = "Tiny", .series = &ts, .n_series = 1};
    svg_line_chart(&b, &tc);
    assert_wellformed(&b);
    assert_null(strstr(b.p, "nan"));
    /* the y tick labels are not all "0" */
    assert_true(count(b.p, "e-310<") + count(b.p, "e-311<") >= 2);
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tick_labels),         cmocka_unit_test(nice_ticks),
        cmocka_unit_test(full_chart),          cmocka_unit_test(nan_gap),
        cmocka_unit_test(no_data),             cmocka_unit_test(escaping),
        cmocka_unit_test(categorical_and_stack), cmocka_unit_test(many_series_legend_wraps),
        cmocka_unit_test(extreme_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
