/* sha256.h - SHA-256 (FIPS 180-4), for the config hash.  Small and
 * self-contained: the lean binary links no crypto library. */
#ifndef GPUMOD_SHA256_H
#define GPUMOD_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t len;
    uint8_t block[64];
    size_t fill;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* Lowercase hex of the digest of data, into out[65]. */
void sha256_hex(const void *data, size_t n, char out[65]);

#endif
