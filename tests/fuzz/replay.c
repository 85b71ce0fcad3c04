/* replay.c - the fuzzer's corpus as a unit test: every file under
 * tests/fuzz/corpus/gguf goes through the same checks as the libFuzzer
 * target (fuzz_gguf.c is #included, so there is one definition of what a
 * correct parse is), built with the normal compiler and run by `make test`
 * under whatever sanitizer the build has.  Prints TAP, one line per file.
 *
 * A file named valid-* must parse and invalid-* must be refused; the
 * inputs the fuzzer found (hash names) only have to pass the checks. */
#include "fuzz_gguf.c"

#include <dirent.h>

static int replay(const uint8_t *data, size_t len, const char *name, char *msg, size_t msglen)
{
    int rc = 0;
    const char *e = check_input(data, len);
    if (e) {
        snprintf(msg, msglen, "%s", e);
        rc = -1;
    } else if (!strncmp(name, "valid-", 6) || !strncmp(name, "invalid-", 8)) {
        gguf_file g;
        char err[1024];
        int prc = gguf_parse_buffer(&g, data, len, err, sizeof err);
        if (name[0] == 'v' && prc < 0) {
            snprintf(msg, msglen, "refused: %s", err);
            rc = -1;
        } else if (name[0] == 'i' && prc == 0) {
            snprintf(msg, msglen, "parsed, expected a refusal");
            rc = -1;
        } else if (name[0] == 'i') {
            snprintf(msg, msglen, "%s", err);
        }
        gguf_release(&g);
    }
    return rc;
}

#include "replay_corpus.h"

int main(int argc, char **argv)
{
    return replay_corpus(argc, argv, "tests/fuzz/corpus/gguf");
}
