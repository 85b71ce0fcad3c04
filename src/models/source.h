/* source.h (models) - what a SOURCE names: a local .gguf file or a
 * directory of them, an http(s) URL of a .gguf, or hf:ORG/REPO[@REV][/PATH]
 * on the Hub; listed as groups (one model: a single file or the parts of
 * a split model, "<prefix>-00001-of-00003.gguf" ...), each with what the
 * listing says of its size and digest. */
#ifndef GPUMOD_MODELS_SOURCE_H
#define GPUMOD_MODELS_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "models/http.h"
#include "util/strv.h"

typedef enum { MSRC_FILE, MSRC_DIR, MSRC_URL, MSRC_HF } msrc_kind;

typedef struct mfile {
    char *path;      /* repository path, local path, or the URL's file name */
    char *url;       /* fetchable URL; NULL for a local file */
    uint64_t size;   /* bytes; UINT64_MAX when the listing does not say */
    char sha256[65]; /* the LFS digest, lower-case hex; "" when unknown */
} mfile;

typedef struct mgroup {
    char *label;  /* the file name, or "<prefix>-000NN-of-000NN.gguf (N parts)" */
    char *first;  /* what gguf_open / gguf_open_io is given: the first part's path or URL */
    mfile *parts; /* in part order */
    size_t nparts;
    uint64_t bytes; /* all parts; UINT64_MAX when some size is unknown */
    char quant[24]; /* "Q4_K_M", "IQ4_XS", "F16", from the name; "" when none */
} mgroup;

typedef struct msource {
    msrc_kind kind;
    char *repo, *revision; /* hf: only */
    mgroup *groups;
    size_t ngroups;
    strv skipped; /* "mmproj-F16.gguf: a multimodal projector, not a model" ... */
} msource;

/* Where the Hub is and how to ask it. */
typedef struct mhub {
    char *endpoint;     /* no trailing '/' */
    char *token;        /* NULL: anonymous; never printed */
    int64_t timeout_ms; /* each API request's deadline */
    volatile int *interrupted;
} mhub;

/* endpoint: endpoint_flag, else $HF_ENDPOINT, else the hf_endpoint
 * setting; checked (https, or http on loopback).  The token:
 * mhub_token().  0, or -1 with err. */
int mhub_init(mhub *h, const settings *s, const char *endpoint_flag, char *err, size_t errlen);
void mhub_release(mhub *h);
/* $HF_TOKEN, else the file $HF_TOKEN_PATH, $HF_HOME/token or
 * ~/.cache/huggingface/token (first line, trimmed); NULL when none. */
char *mhub_token(void);

/* List what source names.  h may be NULL for local sources.  0, or -1
 * with err (what, where, what was expected) and nothing left to release. */
int msource_resolve(const mhub *h, const char *source, msource *out, char *err, size_t errlen);
void msource_release(msource *s);

/* Group file names into models: split parts together and in order, a
 * lone part or a set with a missing part reported in err (returns -1);
 * mmproj / imatrix files go to skipped.  Takes ownership of files[]. */
int msource_group(msource *s, mfile *files, size_t n, char *err, size_t errlen);
/* "Q4_K_M" from "Model-7B-Q4_K_M.gguf" (case kept as written), "" when none. */
void mquant_from_name(const char *name, char *out, size_t len);

/* The Hub's parts (hub.c): the repository's .gguf files (tree listing, pages
 * followed), its config.json, and search. */
int mhub_list_files(const mhub *h, const char *repo, const char *rev, mfile **files, size_t *n,
                    char *err, size_t errlen);
char *mhub_resolve_url(const mhub *h, const char *repo, const char *rev, const char *path);
/* The options of a request to the Hub's API: its token (for its origin
 * only), its deadline, the interrupt flag, a bound on the reply. */
mhttp_opts mhub_opts(const mhub *h, uint64_t max_bytes);
/* NULL when a repository path is safe as a file name below a directory
 * (relative, no empty / '.' / '..' part, no backslash, no control byte),
 * else what is wrong.  The listing refuses .gguf files with such paths. */
const char *mhub_path_problem(const char *path);

#endif
