/* test_jstrict.c - the strict JSON reading of control API bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jstrict.h"

static void refused(const char *text, size_t len, const char *want)
{
    char err[256] = "";
    cJSON *j = jstrict_parse(text, len, err, sizeof err);
    if (j) {
        cJSON_Delete(j);
        fail_msg("accepted: %.*s", (int)len, text);
    }
    if (strcmp(err, want)) fail_msg("'%.*s': got '%s', want '%s'", (int)len, text, err, want);
}

#define REFUSED(lit, want) refused(lit, sizeof lit - 1, want)

static void accepts_plain_json(void **state)
{
    (void)state;
    const char *ok[] = {"{}", " {\"mode\":\"a\"} \r\n\t", "[1,2,{\"a\":{\"b\":[true,null]}}]", "\"x\\u0001y\"",
                        "{\"a\":{\"k\":1},\"b\":{\"k\":2}}", "{\"back\\\\u0000slash\":1}", "0"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char err[256] = "";
        cJSON *j = jstrict_parse(ok[i], strlen(ok[i]), err, sizeof err);
        if (!j) fail_msg("'%s' refused: %s", ok[i], err);
        cJSON_Delete(j);
    }
}

static void nul_and_control_bytes(void **state)
{
    (void)state;
    REFUSED("{\"mode\":\"none\\u0000chat\"}", "a string holds U+0000 (\\u0000) at byte 13");
    REFUSED("{\"mo\\u0000de\":1}", "a string holds U+0000 (\\u0000) at byte 4");
    REFUSED("{\"mode\":\"no\0ne\"}", "a string holds a raw control byte 0x00 at byte 11 (escape it)");
    REFUSED("{\"mode\":\"a\nb\"}", "a string holds a raw control byte 0x0a at byte 10 (escape it)");
}

static void trailing_and_broken(void **state)
{
    (void)state;
    REFUSED("{\"mode\":\"none\"} x", "data after the JSON value at byte 16");
    REFUSED("{} {}", "data after the JSON value at byte 3");
    REFUSED("{\"mode\":", "not JSON (at byte 7)");
    REFUSED("", "the body is empty");
}

static void duplicate_keys(void **state)
{
    (void)state;
    REFUSED("{\"mode\":\"a\",\"mode\":\"b\"}", "key 'mode' appears twice in the object at $");
    REFUSED("{\"mode\":\"a\",\"mod\\u0065\":\"b\"}", "key 'mode' appears twice in the object at $");
    REFUSED("{\"x\":{\"y\":[{},{\"k\":1,\"j\":0,\"k\":2}]}}", "key 'k' appears twice in the object at $.x.y[1]");
    /* many keys, one repeat far apart: found (sorted, not pairwise) */
    char big[40000];
    size_t n = 0;
    n += (size_t)snprintf(big + n, sizeof big - n, "{");
    for (int i = 0; i < 3000; i++) n += (size_t)snprintf(big + n, sizeof big - n, "\"k%d\":%d,", i, i);
    n += (size_t)snprintf(big + n, sizeof big - n, "\"k7\":0}");
    refused(big, n, "key 'k7' appears twice in the object at $");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_plain_json),
        cmocka_unit_test(nul_and_control_bytes),
        cmocka_unit_test(trailing_and_broken),
        cmocka_unit_test(duplicate_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
