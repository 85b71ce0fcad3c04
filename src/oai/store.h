/* store.h (oai) - a helper's result document sent to the daemon (POST
 * /results), which keeps the newest ones in its state database
 * (docs/api.md "Results"): bench's gpumod.bench/1 and eval's
 * gpumod.eval/1 documents. */
#ifndef GPUMOD_OAI_STORE_H
#define GPUMOD_OAI_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* POST /results to the daemon (socket resolved as every CLI command does:
 * GPUMOD_SOCKET, else gpumod.yaml under GPUMOD_CONFIG_DIR, else
 * $XDG_RUNTIME_DIR/gpumod.sock) within timeout_ms.  0 stored (*id set),
 * 1 no daemon runs (nothing to do), -1 with err (it answered an error).
 * A bench document's raw requests (points[].iterations[].requests) are
 * left out. */
int bstore_post(const cJSON *result, int64_t timeout_ms, int64_t *id, char *err, size_t errlen);

#endif
