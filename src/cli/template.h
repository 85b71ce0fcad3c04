/* template.h - what `template` and `protect` share: the scope default and
 * the install-preview-reload steps. */
#ifndef GPUMOD_CLI_TEMPLATE_H
#define GPUMOD_CLI_TEMPLATE_H

#include <stdbool.h>

#include "cli/cli.h"

int cmd_template(cli *c, int argc, char **argv);
int cmd_protect(cli *c, int argc, char **argv);

typedef struct tpl_install_opts {
    bool user;      /* the user's systemd (--user), else the system's */
    bool yes;       /* write; else preview only */
    bool force;     /* replace a file gpumod did not write */
    bool no_reload; /* leave systemd's reload to the caller */
} tpl_install_opts;

/* --user unless running as root */
bool tpl_default_user(void);
/* Show the diff of text against path and, with --yes, write it; prints
 * "created|updated|unchanged: PATH" (or "would ...").  *wrote set when it
 * wrote.  EXIT_OK, or EXIT_REFUSED with the reason on stderr. */
int tpl_install_one(const char *what, const char *path, const char *text, const tpl_install_opts *o, bool *wrote);
/* After the writes: the preview note, or systemd's Reload over sd-bus
 * when something was written.  Returns rc, or EXIT_REFUSED when the
 * reload failed. */
int tpl_finish(const char *what, const tpl_install_opts *o, bool wrote, int rc);

#endif
