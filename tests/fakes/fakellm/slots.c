/* slots.c - llama-server's POST /slots/{id}?action=save|restore|erase
 * (--slot-save-path DIR).  A slot's "KV cache" here is the text of the
 * last prompt it served; save writes it to DIR/FILENAME, restore reads
 * it back into the slot.  The answers and errors are llama-server's
 * (tools/server/server-context.cpp):
 *
 *   no --slot-save-path     501 not_supported_error
 *   id not a number         400 "Invalid slot ID"
 *   id >= --parallel        400 "Invalid slot ID"
 *   filename with / or ..   400 "Invalid filename"
 *   restore, no such file   400 "Unable to restore slot: ..."
 *   save cannot write       500 "Unable to save slot"
 *   FAKELLM_SLOT_FAIL=1     save and restore answer 500 (a scripted failure)
 *   router mode             400 "model name is missing from the request"
 *                           (fakellm does not forward slot calls to models)
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fakellm.h"

#define SLOT_MAGIC "fakellm-slot v1"

static char **last_prompt; /* per slot; NULL: never used */
static int n_last;

static void ensure(int n)
{
    if (n <= n_last) return;
    last_prompt = xrealloc(last_prompt, (size_t)n * sizeof *last_prompt);
    for (int i = n_last; i < n; i++)
        last_prompt[i] = NULL;
    n_last = n;
}

void slots_note(int slot, const char *prompt)
{
    if (slot < 0) return;
    ensure(slot + 1);
    free(last_prompt[slot]);
    last_prompt[slot] = xstrdup(prompt ? prompt : "");
}

/* llama.cpp's fs_validate_filename, the parts a manager could trip on. */
static bool name_ok(const char *f)
{
    size_t n = strlen(f);
    if (n == 0 || n > 255 || strstr(f, "..") || strchr(f, '/') || strchr(f, '\\') || f[0] == '.')
        return false;
    for (const char *p = f; *p; p++)
        if ((unsigned char)*p < 0x20 || strchr(":*?\"<>|", *p)) return false;
    return true;
}

static void saved_file(conn *c, int id, const char *name, const char *path)
{
    const char *text = id < n_last && last_prompt[id] ? last_prompt[id] : "";
    FILE *f = fopen(path, "w");
    long n = -1;
    if (f) {
        fprintf(f, "%s\nslot %d\n%s", SLOT_MAGIC, id, text);
        n = ftell(f);
        if (fclose(f) != 0) n = -1;
    }
    if (n <= 0) {
        fk_log('E', "srv:slot_save", "slot %d: cannot write %s: %s", id, path, strerror(errno));
        api_error(c, 500, "server_error", "Unable to save slot");
        return;
    }
    fk_log('I', "srv:slot_save", "slot %d saved to %s (%ld bytes)", id, name, n);
    buf b = BUF_INIT;
    buf_printf(&b, "{\"id_slot\":%d,\"filename\":", id);
    buf_json_str(&b, name);
    buf_printf(&b, ",\"n_saved\":%d,\"n_written\":%ld,\"timings\":{\"save_ms\":0.1}}",
               (int)tok_count(text), n);
    http_respond_json(c, 200, b.p);
    buf_release(&b);
}

static void restored_file(conn *c, int id, const char *name, const char *path)
{
    FILE *f = fopen(path, "r");
    buf b = BUF_INIT;
    char line[4096];
    int got = -1;
    size_t n;
    if (f) {
        if (fgets(line, sizeof line, f) && strncmp(line, SLOT_MAGIC, strlen(SLOT_MAGIC)) == 0 &&
            fgets(line, sizeof line, f) && sscanf(line, "slot %d", &got) == 1)
            while ((n = fread(line, 1, sizeof line, f)) > 0)
                buf_add(&b, line, n);
        fclose(f);
    }
    if (got < 0) {
        buf_release(&b);
        api_error(
            c, 400, "invalid_request_error",
            "Unable to restore slot: No available space in KV cache or invalid slot save file");
        return;
    }
    long size = 0;
    struct stat st;
    if (stat(path, &st) == 0) size = (long)st.st_size;
    slots_note(id, b.p ? b.p : "");
    fk_log('I', "srv:slot_restore", "slot %d restored from %s (%ld bytes)", id, name, size);
    buf_release(&b);
    buf out = BUF_INIT;
    buf_printf(&out, "{\"id_slot\":%d,\"filename\":", id);
    buf_json_str(&out, name);
    buf_printf(&out, ",\"n_restored\":%d,\"n_read\":%ld,\"timings\":{\"restore_ms\":0.1}}",
               (int)tok_count(last_prompt[id]), size);
    http_respond_json(c, 200, out.p);
    buf_release(&out);
}

void slots_action(conn *c, const struct http_req *r, cJSON *body)
{
    if (fk.cfg.mode == FK_ROUTER) {
        api_error(c, 400, "invalid_request_error", "model name is missing from the request");
        return;
    }
    if (!fk.cfg.slot_save_path) {
        api_error(c, 501, "not_supported_error",
                  "This server does not support slots action. Start it with `--slot-save-path`");
        return;
    }
    const char *ids = r->path + strlen("/slots/");
    char *end = NULL;
    long id = strtol(ids, &end, 10);
    if (!*ids || *end || id < 0 || id >= fk.cfg.n_parallel) {
        api_error(c, 400, "invalid_request_error", "Invalid slot ID");
        return;
    }
    const char *a = strstr(r->query, "action=");
    a = a ? a + 7 : "";
    bool save = strncmp(a, "save", 4) == 0 && (!a[4] || a[4] == '&');
    bool restore = strncmp(a, "restore", 7) == 0 && (!a[7] || a[7] == '&');
    if (!save && !restore) {
        api_error(c, 400, "invalid_request_error", "Invalid action");
        return;
    }
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(body, "filename"));
    if (!name || !name_ok(name)) {
        api_error(c, 400, "invalid_request_error", "Invalid filename");
        return;
    }
    if (fk.env.slot_fail) {
        fk_log('E', "srv:slot_save", "slot %ld: FAKELLM_SLOT_FAIL: %s refused", id,
               save ? "save" : "restore");
        api_error(c, 500, "server_error", save ? "Unable to save slot" : "Unable to restore slot");
        return;
    }
    char *path = xasprintf("%s/%s", fk.cfg.slot_save_path, name);
    if (save)
        saved_file(c, (int)id, name, path);
    else
        restored_file(c, (int)id, name, path);
    free(path);
}
