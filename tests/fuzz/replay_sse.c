/* replay_sse.c - the stream fuzzer's corpus as a unit test: every file
 * under tests/fuzz/corpus/sse goes through the libFuzzer target's checks
 * (fuzz_sse.c is #included: one definition of a correct parse), built
 * with the normal compiler and run by `make test`.  Prints TAP, one line
 * per file.
 *
 * A file named valid-* must give a successful request (token-bearing
 * events, no error); invalid-* must fail (the SSE bound, an error object,
 * no token); inputs the fuzzer found only have to pass the checks. */
#define FUZZ_SSE_NO_MAIN
#include "fuzz_sse.c"

static int replay(const uint8_t *data, size_t len, const char *name, char *msg, size_t msglen)
{
    int rc = 0;
    const char *e = sse_check_input(data, len);
    const char *why = runs[0].err[0] ? runs[0].err : fz_req.error;
    bool ok = !runs[0].err[0] && breq_ok(&fz_req);
    if (e) {
        snprintf(msg, msglen, "%s", e);
        rc = -1;
    } else if (!strncmp(name, "valid-", 6) && !ok) {
        snprintf(msg, msglen, "failed, expected a good request: %s", why ? why : "?");
        rc = -1;
    } else if (!strncmp(name, "invalid-", 8) && ok) {
        snprintf(msg, msglen, "a good request, expected a failure");
        rc = -1;
    } else if (!ok && why) {
        snprintf(msg, msglen, "%s", why);
    }
    for (int i = 0; i < 3; i++) sse_run_release(&runs[i]);
    breq_release(&fz_req);
    return rc;
}

#include "replay_corpus.h"

int main(int argc, char **argv)
{
    return replay_corpus(argc, argv, "tests/fuzz/corpus/sse");
}
