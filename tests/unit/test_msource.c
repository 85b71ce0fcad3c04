/* test_msource.c - what a SOURCE names (src/models/source.c): quant names
 * from file names; llama.cpp's split naming, parts grouped and ordered, a
 * missing part named; projectors and importance matrices skipped; hf:
 * specs parsed, paths that leave the repository refused; URLs (https, or
 * http on loopback only); the Hub's address and the token's places. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/models/source.c"

static void quant_names(void **state)
{
    (void)state;
    char q[24];
    mquant_from_name("Model-7B-Q4_K_M.gguf", q, sizeof q);
    assert_string_equal(q, "Q4_K_M");
    mquant_from_name("org/x-IQ4_XS.gguf", q, sizeof q);
    assert_string_equal(q, "IQ4_XS");
    mquant_from_name("tiny-f16.gguf", q, sizeof q);
    assert_string_equal(q, "f16");
    mquant_from_name("Qwen3-30B-A3B-UD-Q4_K_XL-00001-of-00002.gguf", q, sizeof q);
    assert_string_equal(q, "Q4_K_XL");
    mquant_from_name("model.gguf", q, sizeof q);
    assert_string_equal(q, "");
    mquant_from_name("llama-2-tiny-random.gguf", q, sizeof q);
    assert_string_equal(q, "");
}

static void split_names(void **state)
{
    (void)state;
    size_t pl;
    unsigned p, c;
    assert_int_equal(split_name("m-00002-of-00003.gguf", &pl, &p, &c), 1);
    assert_int_equal(pl, 1);
    assert_int_equal(p, 2);
    assert_int_equal(c, 3);
    assert_int_equal(split_name("m-00000-of-00003.gguf", &pl, &p, &c), 0);
    assert_int_equal(split_name("m-00004-of-00003.gguf", &pl, &p, &c), 0);
    assert_int_equal(split_name("m-00001-of-00001.gguf", &pl, &p, &c), 0);
    assert_int_equal(split_name("m-0001a-of-00003.gguf", &pl, &p, &c), 0);
    assert_int_equal(split_name("m-00001-of-00003.bin", &pl, &p, &c), 0);
    assert_int_equal(split_name("-00001-of-00003.gguf", &pl, &p, &c), 0);
}

static mfile *files_of(const char *const *names, size_t n)
{
    mfile *f = xcalloc(n, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        f[i].path = xstrdup(names[i]);
        f[i].size = 100 + i;
    }
    return f;
}

static void groups(void **state)
{
    (void)state;
    static const char *const names[] = {"b-00002-of-00002.gguf", "mmproj-F16.gguf", "a-Q8_0.gguf",
                                        "b-00001-of-00002.gguf", "sub/c.imatrix.gguf"};
    msource s = {0};
    char err[512] = "";
    assert_int_equal(msource_group(&s, files_of(names, 5), 5, err, sizeof err), 0);
    assert_int_equal(s.ngroups, 2);
    assert_string_equal(s.groups[0].label, "a-Q8_0.gguf");
    assert_string_equal(s.groups[0].quant, "Q8_0");
    assert_int_equal(s.groups[1].nparts, 2);
    assert_string_equal(s.groups[1].parts[0].path, "b-00001-of-00002.gguf");
    assert_string_equal(s.groups[1].parts[1].path, "b-00002-of-00002.gguf");
    assert_string_equal(s.groups[1].first, "b-00001-of-00002.gguf");
    assert_string_equal(s.groups[1].label, "b-00001-of-00002.gguf (2 parts)");
    assert_int_equal(s.groups[1].bytes, 100 + 103);
    assert_int_equal(s.skipped.n, 2);
    assert_non_null(strstr(s.skipped.v[0], "multimodal projector"));
    assert_non_null(strstr(s.skipped.v[1], "importance matrix"));
    msource_release(&s);
}

static void missing_part(void **state)
{
    (void)state;
    static const char *const names[] = {"b-00001-of-00003.gguf", "b-00003-of-00003.gguf"};
    msource s = {0};
    char err[512] = "";
    assert_int_equal(msource_group(&s, files_of(names, 2), 2, err, sizeof err), -1);
    assert_string_equal(err, "split model 'b': part 2 of 3 (b-00002-of-00003.gguf) is missing");
    msource_release(&s);
}

static void hf_specs(void **state)
{
    (void)state;
    char *repo = NULL, *rev = NULL, *path = NULL, err[512] = "";
    assert_int_equal(parse_hf("org/repo@v1/dir/m.gguf", &repo, &rev, &path, err, sizeof err), 0);
    assert_string_equal(repo, "org/repo");
    assert_string_equal(rev, "v1");
    assert_string_equal(path, "dir/m.gguf");
    free(repo), free(rev), free(path);
    assert_int_equal(parse_hf("org/repo", &repo, &rev, &path, err, sizeof err), 0);
    assert_string_equal(rev, "main");
    assert_null(path);
    free(repo), free(rev);
    assert_int_equal(parse_hf("org", &repo, &rev, &path, err, sizeof err), -1);
    assert_string_equal(err, "'hf:org': expected hf:ORG/REPO[@REVISION][/FILE.gguf]");
    repo = rev = path = NULL;
    assert_int_equal(parse_hf("org/re po", &repo, &rev, &path, err, sizeof err), -1);
    assert_string_equal(err, "'hf:org/re po': ' ' is not allowed in a repository id");
    repo = rev = path = NULL;
    assert_int_equal(parse_hf("org/repo/../../etc/x.gguf", &repo, &rev, &path, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "must stay inside the repository"));
    free(repo), free(rev), free(path);
}

static void sources(void **state)
{
    (void)state;
    msource s;
    char err[512] = "";
    assert_int_equal(msource_resolve(NULL, "", &s, err, sizeof err), -1);
    assert_string_equal(err, "the SOURCE is empty");
    assert_int_equal(msource_resolve(NULL, "ftp://h/x.gguf", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "only https://"));
    assert_int_equal(msource_resolve(NULL, "http://example.com/x.gguf", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "http:// is accepted only for loopback addresses"));
    assert_int_equal(msource_resolve(NULL, "https://h.example/x.txt", &s, err, sizeof err), -1);
    assert_string_equal(err, "'https://h.example/x.txt': the URL does not name a .gguf file");
    assert_int_equal(msource_resolve(NULL, "/nonexistent/m.gguf", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "'/nonexistent/m.gguf': No such file or directory"));
    assert_int_equal(
        msource_resolve(NULL, "http://127.0.0.1:9/x-Q4_0.gguf?sig=1", &s, err, sizeof err), 0);
    assert_int_equal(s.kind, MSRC_URL);
    assert_int_equal(s.ngroups, 1);
    assert_string_equal(s.groups[0].label, "x-Q4_0.gguf");
    assert_string_equal(s.groups[0].first, "http://127.0.0.1:9/x-Q4_0.gguf?sig=1");
    assert_true(s.groups[0].bytes == UINT64_MAX);
    msource_release(&s);
    assert_int_equal(msource_resolve(NULL, "hf:org/repo", &s, err, sizeof err), -1);
    assert_string_equal(err, "hf: sources need the Hub's address");
    msource_release(&s);
}

static void hub_address_and_token(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_msource.XXXXXX";
    assert_non_null(mkdtemp(dir));
    mhub h;
    char err[512] = "";
    unsetenv("HF_TOKEN");
    unsetenv("HF_TOKEN_PATH");
    setenv("HF_HOME", dir, 1);
    setenv("HF_ENDPOINT", "http://example.com", 1);
    assert_int_equal(mhub_init(&h, NULL, NULL, err, sizeof err), -1);
    assert_non_null(
        strstr(err, "HF_ENDPOINT: 'http://example.com': http:// is accepted only for loopback"));
    assert_int_equal(mhub_init(&h, NULL, "https://mirror.example/hf/", err, sizeof err), 0);
    assert_string_equal(h.endpoint, "https://mirror.example/hf");
    assert_null(h.token);
    mhub_release(&h);
    char *tf = xasprintf("%s/token", dir);
    FILE *f = fopen(tf, "w");
    assert_non_null(f);
    fputs("  hf_from_file \n", f);
    fclose(f);
    unsetenv("HF_ENDPOINT");
    assert_int_equal(mhub_init(&h, NULL, NULL, err, sizeof err), 0);
    assert_string_equal(h.endpoint, "https://huggingface.co");
    assert_string_equal(h.token, "hf_from_file");
    mhub_release(&h);
    setenv("HF_TOKEN", "hf_env", 1);
    char *t = mhub_token();
    assert_string_equal(t, "hf_env");
    free(t);
    unsetenv("HF_TOKEN");
    char *u = mhub_resolve_url(&(mhub){.endpoint = "http://127.0.0.1:1"}, "org/re po", "main",
                               "d/m 1.gguf");
    assert_string_equal(u, "http://127.0.0.1:1/org/re%20po/resolve/main/d/m%201.gguf");
    free(u);
    unlink(tf);
    free(tf);
    rmdir(dir);
}

static void repository_paths(void **state)
{
    (void)state;
    assert_null(mhub_path_problem("m.gguf"));
    assert_null(mhub_path_problem("sub/dir/m-Q4_K_M.gguf"));
    assert_null(mhub_path_problem("a..b.gguf"));
    assert_string_equal(mhub_path_problem("/etc/m.gguf"), "an absolute path");
    assert_non_null(strstr(mhub_path_problem("../../x.gguf"), "leaves the repository"));
    assert_non_null(strstr(mhub_path_problem("a/./x.gguf"), "leaves the repository"));
    assert_non_null(strstr(mhub_path_problem("a//x.gguf"), "leaves the repository"));
    assert_non_null(strstr(mhub_path_problem("a/x.gguf/.."), "leaves the repository"));
    assert_string_equal(mhub_path_problem("m\nargs: x\n#.gguf"), "a control character in the path");
    assert_string_equal(mhub_path_problem("a\\b.gguf"), "a backslash in the path");
    assert_string_equal(mhub_path_problem(""), "an empty or over-long path");
    /* U+FFFE (libyaml refuses it), a bidi override, C1, a cut sequence */
    static const char *const odd[] = {"a\xef\xbf\xbe.gguf", "a\xe2\x80\xae" "b.gguf", "a\xc2\x85.gguf",
                                      "a\xc3.gguf",         "\xff.gguf",           NULL};
    for (const char *const *o = odd; *o; o++)
        assert_non_null(strstr(mhub_path_problem(*o), "not UTF-8, or an invisible"));
    assert_null(mhub_path_problem("caf\xc3\xa9-Q4_K_M.gguf"));
}

static void listed_twice(void **state)
{
    (void)state;
    static const char *const names[] = {"a.gguf", "b.gguf", "a.gguf"};
    msource s = {0};
    char err[512] = "";
    assert_int_equal(msource_group(&s, files_of(names, 3), 3, err, sizeof err), -1);
    assert_string_equal(err, "'a.gguf' is listed twice");
    msource_release(&s);
}

static void sizes_saturate(void **state)
{
    (void)state;
    static const char *const names[] = {"b-00001-of-00002.gguf", "b-00002-of-00002.gguf"};
    mfile *f = files_of(names, 2);
    f[0].size = UINT64_MAX - 10;
    f[1].size = 100;
    msource s = {0};
    char err[512] = "";
    assert_int_equal(msource_group(&s, f, 2, err, sizeof err), 0);
    assert_true(s.groups[0].bytes == UINT64_MAX);
    msource_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quant_names),
        cmocka_unit_test(split_names),
        cmocka_unit_test(groups),
        cmocka_unit_test(missing_part),
        cmocka_unit_test(hf_specs),
        cmocka_unit_test(sources),
        cmocka_unit_test(hub_address_and_token),
        cmocka_unit_test(repository_paths),
        cmocka_unit_test(listed_twice),
        cmocka_unit_test(sizes_saturate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
