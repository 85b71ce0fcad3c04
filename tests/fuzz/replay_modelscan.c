/* replay_modelscan.c - the body scanner fuzzer's corpus as a unit test:
 * every file under tests/fuzz/corpus/modelscan goes through the libFuzzer
 * target's checks (fuzz_modelscan.c is #included: one definition of a
 * correct scan), built with the normal compiler and run by `make test`
 * under whatever sanitizer the build has.  Prints TAP, one line per file.
 *
 * A file named valid-* must scan to a model and invalid-* must be refused;
 * the inputs the fuzzer found (hash names, crash-*) only have to pass the
 * checks. */
#define FUZZ_MODELSCAN_NO_MAIN
#include "fuzz_modelscan.c"

static int replay(const uint8_t *data, size_t len, const char *name, char *msg, size_t msglen)
{
    int rc = 0;
    modelscan_status st;
    const char *e = modelscan_check_input(data, len, &st);
    if (e) {
        snprintf(msg, msglen, "%s", e);
        rc = -1;
    } else if (!strncmp(name, "valid-", 6) && st != MODELSCAN_DONE) {
        snprintf(msg, msglen, "refused, expected a model: %s", runs[0].s.err.msg);
        rc = -1;
    } else if (!strncmp(name, "invalid-", 8) && st != MODELSCAN_ERROR) {
        snprintf(msg, msglen, "scanned, expected a refusal");
        rc = -1;
    } else if (st == MODELSCAN_ERROR) {
        snprintf(msg, msglen, "%s", runs[0].s.err.msg);
    }
    return rc;
}

#include "replay_corpus.h"

int main(int argc, char **argv)
{
    return replay_corpus(argc, argv, "tests/fuzz/corpus/modelscan");
}
