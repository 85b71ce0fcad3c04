/* replay_http.c - the HTTP fuzzer's corpus as a unit test: every file
 * under tests/fuzz/corpus/http goes through the libFuzzer target's checks
 * (fuzz_http.c is #included: one definition of a correct parse), built
 * with the normal compiler and run by `make test` under whatever sanitizer
 * the build has.  Prints TAP, one line per file.
 *
 * A file named valid-* must be accepted (every message parsed, EOF
 * clean) and invalid-* refused; the inputs the fuzzer found (hash names,
 * crash-*) only have to pass the checks. */
#define FUZZ_HTTP_NO_MAIN
#include "fuzz_http.c"

#include <dirent.h>

static int replay(const uint8_t *data, size_t len, const char *name, char *msg, size_t msglen)
{
    int rc = 0, accepted = 0;
    const char *e = http_check_input(data, len, &accepted);
    if (e) {
        snprintf(msg, msglen, "%s", e);
        rc = -1;
    } else if (!strncmp(name, "valid-", 6) && !accepted) {
        snprintf(msg, msglen, "refused, expected a parse");
        rc = -1;
    } else if (!strncmp(name, "invalid-", 8) && accepted) {
        snprintf(msg, msglen, "parsed, expected a refusal");
        rc = -1;
    }
    return rc;
}

#include "replay_corpus.h"

int main(int argc, char **argv)
{
    return replay_corpus(argc, argv, "tests/fuzz/corpus/http");
}
