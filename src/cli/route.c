/* route.c - `gpumod route show | default [SERVICE | --clear] | resolve
 * NAME`: the router's table, its default and what it does with a name
 * (docs/router.md), through the daemon's GET /route, GET|PUT
 * /route/default and GET /route/resolve (docs/api.md).  The default set
 * here is kept by the daemon across restarts and overrides
 * router.default until cleared.  resolve asks the router rather than
 * reading the table, so it never disagrees with what a request gets. */
#include "cli/ctl.h"
#include "util/url.h"

#include <stdio.h>
#include <string.h>

static int print_default(cli *c, http_reply *r)
{
    if (c->json) {
        ctl_print_body(r);
        return 0;
    }
    cJSON *j = ctl_json(r, "route default");
    if (!j) return EXIT_REFUSED;
    const char *s = jstr(j, "service"), *src = jstr(j, "source");
    if (s)
        printf("default -> %s (%s)\n", s, src && !strcmp(src, "settings") ? "router.default" : "route default");
    else
        printf("no default is set (router.default is unset; run 'gpumod route default SERVICE')\n");
    cJSON_Delete(j);
    return 0;
}

static int route_default(cli *c, const cmd *k, int argc, char **argv)
{
    http_reply r;
    int rc;
    if (argc > 3) return cli_usage_error(c, k, "route default: unexpected argument '%s'", argv[3]);
    if (argc == 2) {
        rc = ctl_call(&c->paths, "GET", "/route/default", NULL, CTL_QUICK_MS, false, &r);
    } else {
        buf body = BUF_INIT;
        if (!strcmp(argv[2], "--clear")) {
            buf_adds(&body, "{\"service\":null}");
        } else {
            if (argv[2][0] == '-') return cli_usage_error(c, k, "route default: unknown option '%s'", argv[2]);
            buf_adds(&body, "{\"service\":");
            buf_json_str(&body, argv[2]);
            buf_addc(&body, '}');
        }
        rc = ctl_call(&c->paths, "PUT", "/route/default", body.p, CTL_QUICK_MS, false, &r);
        buf_release(&body);
    }
    if (rc) return rc;
    if (r.status != 200) rc = ctl_fail(&r, "route default");
    else rc = print_default(c, &r);
    http_reply_release(&r);
    return rc;
}

static int route_show(cli *c, const cmd *k, int argc, char **argv)
{
    if (argc > 2) return cli_usage_error(c, k, "route show: unexpected argument '%s'", argv[2]);
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", "/route", NULL, CTL_QUICK_MS, false, &r);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "route show");
        http_reply_release(&r);
        return rc;
    }
    if (c->json) {
        ctl_print_body(&r);
        http_reply_release(&r);
        return 0;
    }
    cJSON *j = ctl_json(&r, "route show");
    http_reply_release(&r);
    if (!j) return EXIT_REFUSED;
    buf b = BUF_INIT;
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(j, "listen");
    if (cJSON_IsNumber(lp)) buf_printf(&b, "router: listening on port %.0f\n", lp->valuedouble);
    else buf_adds(&b, "router: not listening\n");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "default");
    const char *ds = jstr(d, "service");
    buf_printf(&b, "default: %s\n\n", ds ? ds : "(none)");
    buf_printf(&b, "%-32s %-20s %s\n", "NAME", "SERVICE", "KIND");
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "names"))
    {
        buf_printf(&b, "%-32s %-20s %s\n", jstr(x, "name") ? jstr(x, "name") : "", jstr(x, "service") ? jstr(x, "service") : "",
                   jstr(x, "kind") ? jstr(x, "kind") : "");
    }
    buf_printf(&b, "\n%-20s %-10s %-8s %-9s %s\n", "SERVICE", "STATE", "INFLIGHT", "QUEUED", "NOTE");
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "services"))
    {
        const cJSON *dr = cJSON_GetObjectItemCaseSensitive(x, "draining"), *rm = cJSON_GetObjectItemCaseSensitive(x, "remote");
        buf_printf(&b, "%-20s %-10s %-8.0f %-9.0f %s%s\n", jstr(x, "id") ? jstr(x, "id") : "",
                   jstr(x, "state") ? jstr(x, "state") : "", jnum(x, "inflight", 0), jnum(x, "queued", 0),
                   cJSON_IsTrue(rm) ? "remote " : "", cJSON_IsTrue(dr) ? "draining" : "");
    }
    fputs(b.p, stdout);
    buf_release(&b);
    cJSON_Delete(j);
    return 0;
}

static int route_resolve(cli *c, const cmd *k, int argc, char **argv)
{
    if (argc != 3) return cli_usage_error(c, k, "route resolve: expected one NAME");
    buf path = BUF_INIT;
    buf_adds(&path, "/route/resolve?model=");
    url_query_escape(&path, argv[2]);
    http_reply r;
    int rc = ctl_call(&c->paths, "GET", path.p, NULL, CTL_QUICK_MS, false, &r);
    buf_release(&path);
    if (rc) return rc;
    if (r.status != 200) {
        rc = ctl_fail(&r, "route resolve");
        http_reply_release(&r);
        return rc;
    }
    cJSON *j = ctl_json(&r, "route resolve");
    if (c->json) ctl_print_body(&r);
    http_reply_release(&r);
    if (!j) return EXIT_REFUSED;
    const char *up = jstr(j, "upstream_model"), *why = jstr(j, "upstream_error");
    if (!c->json) {
        printf("%s -> %s (%s)", jstr(j, "model") ? jstr(j, "model") : argv[2], jstr(j, "service") ? jstr(j, "service") : "",
               jstr(j, "kind") ? jstr(j, "kind") : "");
        if (up) printf(", sent as '%s'\n", up);
        else printf("\n");
    }
    if (!up) fprintf(stderr, "gpumod: route resolve: %s\n", why ? why : "no model for the engine");
    cJSON_Delete(j);
    return up ? 0 : EXIT_REFUSED;
}

int cmd_route(cli *c, int argc, char **argv)
{
    const cmd *k = cli_find("route");
    if (argc < 2) return cli_usage_error(c, k, "route: expected 'show', 'default' or 'resolve'");
    if (!strcmp(argv[1], "show")) return route_show(c, k, argc, argv);
    if (!strcmp(argv[1], "default")) return route_default(c, k, argc, argv);
    if (!strcmp(argv[1], "resolve")) return route_resolve(c, k, argc, argv);
    return cli_usage_error(c, k, "route: unknown subcommand '%s' (expected 'show', 'default' or 'resolve')", argv[1]);
}
