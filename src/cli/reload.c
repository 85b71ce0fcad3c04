/* reload.c - `gpumod reload [--json]`: the daemon reads its configuration
 * again and swaps it whole, or keeps the old one and says every error
 * (exit 2).  Running services whose configuration changed are listed;
 * they keep running as started until restarted (same as SIGHUP). */
#include "cli/ctl.h"

#include <stdio.h>
#include <string.h>

int cmd_reload(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("reload");
    if (argc > 1) return cli_usage_error(c, k, "reload: unexpected argument '%s'", argv[1]);
    http_reply r;
    int rc = ctl_call(&c->paths, "POST", "/reload", NULL, 30000, false, &r);
    if (rc) return rc;
    if (c->json) {
        ctl_print_body(&r);
        rc = ctl_exit_code(&r);
    } else if (r.status != 200) {
        rc = ctl_fail(&r, "reload");
    } else {
        cJSON *j = ctl_json(&r, "reload");
        if (!j) {
            http_reply_release(&r);
            return EXIT_REFUSED;
        }
        buf b = BUF_INIT;
        buf_printf(&b, "reloaded %s: %.0f presets, %.0f modes\n", jstr(j, "config_dir") ? jstr(j, "config_dir") : "",
                   jnum(j, "presets", 0), jnum(j, "modes", 0));
        const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "changed"), *x;
        if (cJSON_GetArraySize(ch)) {
            buf_adds(&b, "changed while running (they keep their old configuration until restarted):");
            cJSON_ArrayForEach(x, ch) if (cJSON_IsString(x)) buf_printf(&b, " %s", x->valuestring);
            buf_addc(&b, '\n');
        }
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "notes"))
            if (cJSON_IsString(x)) buf_printf(&b, "note: %s\n", x->valuestring);
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "warnings"))
        {
            const char *f = jstr(x, "file"), *m = jstr(x, "message");
            fprintf(stderr, "%s:%.0f:%.0f: warning: %s\n", f ? f : "-", jnum(x, "line", 0), jnum(x, "col", 0),
                    m ? m : "");
        }
        fputs(b.p, stdout);
        buf_release(&b);
        cJSON_Delete(j);
    }
    http_reply_release(&r);
    return rc;
}
