/* load.c - find, read and cross-check the whole configuration.
 *
 * Precedence for every path: command-line flag > environment >
 * gpumod.yaml > default.  Every file is read and every problem reported;
 * a broken preset is kept (flagged) rather than dropped, so that a typo
 * never makes a service silently vanish from its modes, as it did in the
 * Python project. */
#include "config/config.h"
#include "config/mode.h"
#include "config/preset.h"
#include "config/schema.h"
#include "config/settings.h"
#include "config/check.h"
#include "util/buf.h"
#include "util/slurp.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *home(void)
{
    const char *h = env_nonempty("HOME");
    return h ? h : "/";
}

static char *default_config_dir(void)
{
    const char *x = env_nonempty("XDG_CONFIG_HOME");
    return x ? xasprintf("%s/gpumod", x) : xasprintf("%s/.config/gpumod", home());
}

static char *default_state_dir(void)
{
    const char *x = env_nonempty("XDG_STATE_HOME");
    return x ? xasprintf("%s/gpumod", x) : xasprintf("%s/.local/state/gpumod", home());
}

static bool has_yaml_ext(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static const char *add_file(config *cfg, const char *path)
{
    strv_push(&cfg->files, path);
    return cfg->files.v[cfg->files.n - 1];
}

/* The directories above the one being read, for loop detection: a
 * symlinked directory is followed like any other (presets/shared ->
 * ../common), and one that leads back to an ancestor is reported. */
typedef struct dir_chain {
    dev_t dev;
    ino_t ino;
    const char *path;
    const struct dir_chain *up;
} dir_chain;

typedef struct yaml_walk {
    config *cfg; /* its diags, and its files for the positions */
    bool recursive; /* presets/: any depth; modes/: one level */
    strv *out;
} yaml_walk;

static void walk_dir(yaml_walk *w, const char *dir, const dir_chain *chain);

/* A name that does not resolve: an error when it looks like a
 * configuration file, else a warning (a link to a directory that is gone). */
static void walk_unresolved(yaml_walk *w, const char *path, const char *name)
{
    int e = errno;
    struct stat lst;
    bool link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    if (has_yaml_ext(name)) {
        strv_push(w->out, path); /* yaml_load_file reports why it cannot be read */
    } else if (link) {
        diags_add(&w->cfg->diags, DIAG_WARNING, (srcpos){add_file(w->cfg, path), 0, 0}, "a broken symlink (%s); not read",
                  strerror(e));
    }
}

static void walk_subdir(yaml_walk *w, const char *path, const char *name, const struct stat *st,
                        const dir_chain *chain)
{
    if (!w->recursive) {
        if (name[0] != '.')
            diags_add(&w->cfg->diags, DIAG_WARNING, (srcpos){add_file(w->cfg, path), 0, 0},
                      "a directory: modes are read from modes/*.yaml only, nothing below it is read");
        return;
    }
    for (const dir_chain *a = chain; a; a = a->up)
        if (a->dev == st->st_dev && a->ino == st->st_ino) {
            diags_add(&w->cfg->diags, DIAG_ERROR, (srcpos){add_file(w->cfg, path), 0, 0},
                      "a symlink loop: it leads back to '%s'; not followed", a->path);
            return;
        }
    dir_chain here = {st->st_dev, st->st_ino, path, chain};
    walk_dir(w, path, &here);
}

/* Every *.yaml|yml name that is not a directory is listed, FIFOs and
 * broken links included: yaml_load_file refuses them with an error, so
 * no file is ever dropped in silence. */
static void walk_dir(yaml_walk *w, const char *dir, const dir_chain *chain)
{
    DIR *d = opendir(dir);
    if (!d) {
        diags_add(&w->cfg->diags, DIAG_ERROR, (srcpos){add_file(w->cfg, dir), 0, 0}, "cannot read directory: %s",
                  strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (e->d_type == DT_REG) { /* a plain file: no stat (links and DT_UNKNOWN are followed below) */
            if (has_yaml_ext(e->d_name)) strv_push(w->out, p);
        } else if (stat(p, &st) != 0)
            walk_unresolved(w, p, e->d_name);
        else if (S_ISDIR(st.st_mode))
            walk_subdir(w, p, e->d_name, &st, chain);
        else if (has_yaml_ext(e->d_name))
            strv_push(w->out, p);
        free(p);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_yaml(config *cfg, const char *dir, bool recursive, strv *out)
{
    yaml_walk w = {cfg, recursive, out};
    struct stat st;
    if (stat(dir, &st) != 0) return;
    dir_chain top = {st.st_dev, st.st_ino, dir, NULL};
    walk_dir(&w, dir, &top);
    if (out->n) qsort(out->v, out->n, sizeof *out->v, cmp_str);
}

static void load_settings(config *cfg)
{
    /* only a missing file means "all defaults": a FIFO, a directory or a
     * broken link is read, and yaml_load_file says why it cannot be */
    struct stat lst;
    if (lstat(cfg->settings_file, &lst) != 0) return;
    const char *file = add_file(cfg, cfg->settings_file);
    ydoc doc;
    if (yaml_load_file(&doc, cfg->settings_file, file, &cfg->diags) == 0 && doc.root) {
        schema_ctx c = {file, &cfg->diags, "", false};
        schema_parse(&c, settings_fields, doc.root, &cfg->set);
    }
    yaml_release(&doc);
}

static void resolve_paths(config *cfg, const config_paths *paths)
{
    settings *s = &cfg->set;
    const char *v;
    char *sd = NULL;
    if (paths && paths->state_dir)
        sd = xstrdup(paths->state_dir);
    else if ((v = env_nonempty("GPUMOD_STATE_DIR")))
        sd = xstrdup(v);
    else if ((v = env_nonempty("STATE_DIRECTORY"))) {
        /* systemd may pass several, colon-separated: the first is ours */
        const char *colon = strchr(v, ':');
        sd = colon ? xstrndup(v, (size_t)(colon - v)) : xstrdup(v);
    } else if (s->state_dir)
        sd = xstrdup(s->state_dir);
    else
        sd = default_state_dir();
    free(s->state_dir);
    s->state_dir = sd;
    if (!s->models_dir) {
        const char *x = env_nonempty("XDG_DATA_HOME");
        s->models_dir =
            x ? xasprintf("%s/gpumod/models", x) : xasprintf("%s/.local/share/gpumod/models", home());
    }
    if (!s->log_dir) s->log_dir = xasprintf("%s/logs", s->state_dir);

    char *sock = NULL;
    if (paths && paths->socket)
        sock = xstrdup(paths->socket);
    else if ((v = env_nonempty("GPUMOD_SOCKET")))
        sock = xstrdup(v);
    else if (s->socket)
        sock = xstrdup(s->socket);
    else if ((v = env_nonempty("XDG_RUNTIME_DIR")))
        sock = xasprintf("%s/gpumod.sock", v);
    else
        sock = xasprintf("%s/gpumod.sock", s->state_dir);
    free(s->socket);
    s->socket = sock;
}

/* Something that exists where a directory should be (a FIFO named
 * presets): an error saying what it is, never "does not exist" nor a
 * silent skip.  true when reported. */
static bool not_a_dir(config *cfg, const char *path, const char *what)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISDIR(st.st_mode)) return false;
    diags_add(&cfg->diags, DIAG_ERROR, (srcpos){path, 0, 0}, "%s directory is %s, not a directory", what,
              S_ISREG(st.st_mode) ? "a file" : slurp_kind(st.st_mode));
    return true;
}

/* false (and said so) when the presets directory is not there */
static bool presets_dir_ok(config *cfg, bool explicit_dir)
{
    if (is_dir(cfg->presets_dir)) return true;
    if (!not_a_dir(cfg, cfg->presets_dir, "presets"))
        diags_add(&cfg->diags, explicit_dir ? DIAG_ERROR : DIAG_WARNING, (srcpos){cfg->presets_dir, 0, 0},
                  "presets directory does not exist");
    return false;
}

/* One preset file's document into *p: true when it yields a preset (one
 * with an id), which the caller keeps. */
static bool preset_from_doc(const config *cfg, const ydoc *doc, const char *file, diags *d, preset *p)
{
    if (!doc->root) {
        diags_add(d, DIAG_ERROR, (srcpos){file, 1, 1}, "empty preset file");
        return false;
    }
    preset_parse(p, doc->root, file, d);
    preset_resolve_paths(p, cfg->config_abs);
    if (p->id) return true;
    preset_release(p);
    return false;
}

static void load_presets(config *cfg, bool explicit_dir)
{
    if (!presets_dir_ok(cfg, explicit_dir)) return;
    strv files = STRV_INIT;
    list_yaml(cfg, cfg->presets_dir, true, &files);
    cfg->presets = xcalloc(files.n + 1, sizeof *cfg->presets);
    for (size_t i = 0; i < files.n; i++) {
        const char *file = add_file(cfg, files.v[i]);
        ydoc doc;
        if (yaml_load_file(&doc, files.v[i], file, &cfg->diags) == 0 &&
            preset_from_doc(cfg, &doc, file, &cfg->diags, &cfg->presets[cfg->n_presets]))
            cfg->n_presets++;
        yaml_release(&doc);
    }
    strv_release(&files);
}

/* Is the preset in this file the one with this id?  Its text is read and
 * only peeked at (yaml_peek_key); the whole tree is built only when the id
 * matches or cannot be told without it.  Its diags join cfg's only when
 * it is the one. */
static bool load_preset_if(config *cfg, const char *path, const char *id)
{
    buf text = BUF_INIT;
    diags d = {0};
    bool found = false;
    char *v = NULL;
    /* unreadable: config_load skips it too */
    int r = yaml_read_file(&text, path, path, &d) ? 0 : yaml_peek_key(text.p, text.len, "id", &v);
    if (r < 0 || (r == 1 && !strcmp(v, id))) {
        const char *file = add_file(cfg, path);
        ydoc doc;
        preset *p = &cfg->presets[0];
        if (yaml_load_string(&doc, text.p, text.len, file, &d) == 0 && preset_from_doc(cfg, &doc, file, &d, p)) {
            found = !strcmp(p->id, id);
            if (!found) preset_release(p);
        }
        yaml_release(&doc);
    }
    for (size_t i = 0; found && i < d.n; i++) diags_add(&cfg->diags, d.v[i].level, d.v[i].pos, "%s", d.v[i].msg);
    free(v);
    diags_release(&d);
    buf_release(&text);
    return found;
}

static void load_modes(config *cfg, bool explicit_dir)
{
    if (!is_dir(cfg->modes_dir)) {
        if (!not_a_dir(cfg, cfg->modes_dir, "modes") && explicit_dir)
            diags_add(&cfg->diags, DIAG_ERROR, (srcpos){cfg->modes_dir, 0, 0}, "modes directory does not exist");
        return;
    }
    strv files = STRV_INIT;
    list_yaml(cfg, cfg->modes_dir, false, &files);
    cfg->modes = xcalloc(files.n + 1, sizeof *cfg->modes);
    for (size_t i = 0; i < files.n; i++) {
        const char *file = add_file(cfg, files.v[i]);
        ydoc doc;
        if (yaml_load_file(&doc, files.v[i], file, &cfg->diags) == 0) {
            if (!doc.root) {
                diags_add(&cfg->diags, DIAG_ERROR, (srcpos){file, 1, 1}, "empty mode file");
            } else {
                mode *m = &cfg->modes[cfg->n_modes];
                mode_parse(m, doc.root, file, &cfg->diags);
                if (m->id)
                    cfg->n_modes++;
                else
                    mode_release(m);
            }
        }
        yaml_release(&doc);
    }
    strv_release(&files);
}

/* config_dir, the settings file and the presets/modes directories */
static void resolve_dirs(config *cfg, const config_paths *paths, bool *explicit_presets, bool *explicit_modes)
{
    memset(cfg, 0, sizeof *cfg);
    settings_defaults(&cfg->set);
    const char *v;
    bool explicit_cfg = false;
    if (paths && paths->config_dir) {
        cfg->config_dir = xstrdup(paths->config_dir);
        explicit_cfg = true;
    } else if ((v = env_nonempty("GPUMOD_CONFIG_DIR"))) {
        cfg->config_dir = xstrdup(v);
        explicit_cfg = true;
    } else {
        cfg->config_dir = default_config_dir();
    }
    cfg->config_abs = realpath(cfg->config_dir, NULL);
    if (explicit_cfg && !is_dir(cfg->config_dir))
        diags_add(&cfg->diags, DIAG_ERROR, (srcpos){cfg->config_dir, 0, 0}, "configuration directory does not exist");
    cfg->settings_file = xasprintf("%s/gpumod.yaml", cfg->config_dir);
    *explicit_presets = *explicit_modes = false;
    if ((v = env_nonempty("GPUMOD_PRESETS_DIR"))) {
        cfg->presets_dir = xstrdup(v);
        *explicit_presets = true;
    } else {
        cfg->presets_dir = xasprintf("%s/presets", cfg->config_dir);
    }
    if ((v = env_nonempty("GPUMOD_MODES_DIR"))) {
        cfg->modes_dir = xstrdup(v);
        *explicit_modes = true;
    } else {
        cfg->modes_dir = xasprintf("%s/modes", cfg->config_dir);
    }
}

int config_load(config *cfg, const config_paths *paths)
{
    bool explicit_presets, explicit_modes;
    resolve_dirs(cfg, paths, &explicit_presets, &explicit_modes);
    load_settings(cfg);
    resolve_paths(cfg, paths);
    load_presets(cfg, explicit_presets);
    load_modes(cfg, explicit_modes);
    config_check_cross(cfg);
    diags_sort(&cfg->diags);
    return cfg->diags.errors ? -1 : 0;
}

int config_load_preset(config *cfg, const config_paths *paths, const char *id)
{
    bool explicit_presets, explicit_modes;
    resolve_dirs(cfg, paths, &explicit_presets, &explicit_modes);
    load_settings(cfg);
    resolve_paths(cfg, paths);
    cfg->presets = xcalloc(2, sizeof *cfg->presets);
    if (presets_dir_ok(cfg, explicit_presets)) {
        strv files = STRV_INIT;
        list_yaml(cfg, cfg->presets_dir, true, &files);
        for (size_t i = 0; i < files.n && !cfg->n_presets; i++)
            if (load_preset_if(cfg, files.v[i], id)) cfg->n_presets = 1;
        strv_release(&files);
    }
    diags_sort(&cfg->diags);
    return cfg->diags.errors ? -1 : 0;
}

int config_load_settings(config *cfg, const config_paths *paths)
{
    bool explicit_presets, explicit_modes;
    resolve_dirs(cfg, paths, &explicit_presets, &explicit_modes);
    load_settings(cfg);
    resolve_paths(cfg, paths);
    diags_sort(&cfg->diags);
    return cfg->diags.errors ? -1 : 0;
}

void config_release(config *cfg)
{
    for (size_t i = 0; i < cfg->n_presets; i++) preset_release(&cfg->presets[i]);
    free(cfg->presets);
    for (size_t i = 0; i < cfg->n_modes; i++) mode_release(&cfg->modes[i]);
    free(cfg->modes);
    settings_release(&cfg->set);
    diags_release(&cfg->diags);
    strv_release(&cfg->files);
    free(cfg->config_dir);
    free(cfg->config_abs);
    free(cfg->presets_dir);
    free(cfg->modes_dir);
    free(cfg->settings_file);
    memset(cfg, 0, sizeof *cfg);
}

const preset *config_preset(const config *cfg, const char *id)
{
    for (size_t i = 0; i < cfg->n_presets; i++)
        if (!strcmp(cfg->presets[i].id, id)) return &cfg->presets[i];
    return NULL;
}

const mode *config_mode(const config *cfg, const char *id)
{
    for (size_t i = 0; i < cfg->n_modes; i++)
        if (!strcmp(cfg->modes[i].id, id)) return &cfg->modes[i];
    return NULL;
}
