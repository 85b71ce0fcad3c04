/* logscan.c - engine log lines -> progress, readiness, failure.
 *
 * llama-server: the model loader's default progress callback prints one
 * '.' each time the whole percentage grows and a newline at 100 %
 * (llama.cpp src/llama.cpp, llama_model_load_from_file_impl), with no
 * prefix, after "load_tensors: loading model tensors"; so the dots of that
 * line are a lower bound of the percentage (exact for models with more
 * than 100 tensors), and its newline is 100 %.  Ready is
 * "llama_server: model loaded" (the socket is bound before the load, so
 * "listening on" alone proves nothing).  vLLM: tqdm's "N% Completed" over
 * the checkpoint shards, and uvicorn's "Application startup complete.".
 * Failure lines follow the substrings Ollama matches for llama-server
 * (llm/status.go) plus each engine's own start-up errors. */
#include "drivers/logscan.h"
#include "config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const oom_marks[] = {
    "out of memory", "out of device memory", "cudaMalloc failed", "failed to allocate", "allocation failed",
    "not enough memory", "insufficient memory", NULL,
};

static const char *const llama_fatal_marks[] = {
    "failed to open GGUF file", "error loading model", "couldn't bind HTTP server socket",
    "exiting due to HTTP server error", "failed to load model", NULL,
};

static const char *const vllm_fatal_marks[] = {
    "EngineCore failed to start", "is less than desired GPU memory utilization", "Address already in use",
    "larger than the available KV cache memory", NULL,
};

void logscan_init(logscan *ls, int driver)
{
    memset(ls, 0, sizeof *ls);
    ls->driver = driver;
    ls->progress_pct = -1;
}

static bool has_any(const char *line, const char *const *marks)
{
    for (size_t i = 0; marks[i]; i++)
        if (strstr(line, marks[i])) return true;
    return false;
}

static unsigned set_progress(logscan *ls, int pct)
{
    if (pct > 100) pct = 100;
    if (pct <= ls->progress_pct) return 0; /* never goes backwards */
    ls->progress_pct = pct;
    return LOGSCAN_PROGRESS;
}

static unsigned fatal(logscan *ls, const char *line)
{
    if (ls->fatal[0]) return 0;
    /* keep it printable: the line goes into events and error messages */
    size_t j = 0;
    for (const char *p = line; *p && j + 1 < sizeof ls->fatal; p++)
        ls->fatal[j++] = (*p >= 0x20 && *p != 0x7f) ? *p : '?';
    ls->fatal[j] = '\0';
    return LOGSCAN_FATAL;
}

/* a whole line (NUL-terminated, no newline) */
static unsigned on_line(logscan *ls, const char *line)
{
    unsigned ch = 0;
    if (ls->driver == DRV_VLLM) {
        const char *pc = strstr(line, "% Completed");
        if (pc) {
            const char *q = pc;
            while (q > line && q[-1] >= '0' && q[-1] <= '9') q--;
            if (q < pc) ch |= set_progress(ls, atoi(q));
        }
        if (strstr(line, "Application startup complete.") && !ls->ready) {
            ls->ready = true;
            ch |= LOGSCAN_READY | set_progress(ls, 100);
        }
        if (has_any(line, vllm_fatal_marks) || has_any(line, oom_marks)) ch |= fatal(ls, line);
        return ch;
    }
    /* llama.cpp and anything that prints like it */
    if (strstr(line, "load_tensors: loading model tensors")) {
        ls->in_tensors = true;
        ls->dots = 0;
        ch |= set_progress(ls, 0);
    }
    if (strstr(line, "llama_server: model loaded") && !ls->ready) {
        ls->ready = true;
        ch |= LOGSCAN_READY | set_progress(ls, 100);
    }
    if (has_any(line, llama_fatal_marks) || (has_any(line, oom_marks) && !strstr(line, "retrying without")))
        ch |= fatal(ls, line);
    return ch;
}

unsigned logscan_feed(logscan *ls, const char *data, size_t n)
{
    unsigned ch = 0;
    for (size_t i = 0; i < n; i++) {
        char c = data[i];
        if (c == '\n' || c == '\r') {
            if (ls->in_tensors && ls->dots > 0 && ls->full_len == (size_t)ls->dots) {
                /* the dots' line ends at 100 % */
                ls->in_tensors = false;
                ch |= set_progress(ls, 100);
            }
            ls->line[ls->len] = '\0';
            if (ls->full_len) ch |= on_line(ls, ls->line);
            ls->len = ls->full_len = 0;
            continue;
        }
        if (ls->in_tensors && c == '.' && ls->full_len == (size_t)ls->dots) {
            /* progress dots arrive without a newline: count them as they come */
            ls->dots++;
            ch |= set_progress(ls, ls->dots >= 100 ? 99 : ls->dots);
        }
        if (ls->len + 1 < sizeof ls->line) ls->line[ls->len++] = c;
        ls->full_len++;
    }
    return ch;
}
