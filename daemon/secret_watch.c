/* SPDX-License-Identifier: MIT */
/* secret_watch.c: the secrets' directories watched (secret_watch.h). */
#include "secret_watch.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

struct secret_watch {
    uv_fs_event_t dirs[SECRET_WATCH_MAX_DIRS];
    size_t ndirs;
    uv_timer_t settle;
    secret_watch_cb cb;
    void *ctx;
    size_t open;   /* handles not yet closed */
};

static void secret_watch_closed(uv_handle_t *h)
{
    struct secret_watch *w = h->data;
    if (--w->open == 0)
        free(w);
}

static void secret_watch_on_settled(uv_timer_t *t)
{
    struct secret_watch *w = t->data;
    w->cb(w->ctx);
}

static void secret_watch_on_event(uv_fs_event_t *h, const char *name, int events, int status)
{
    (void)name;
    (void)events;
    (void)status;   /* an error too may mean the file moved: read it again */
    struct secret_watch *w = h->data;
    uv_timer_start(&w->settle, secret_watch_on_settled, SECRET_WATCH_SETTLE_MS, 0);
}

/* path's directory into dir. */
static void secret_watch_dir(const char *path, char *dir, size_t len)
{
    char copy[AMPD_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(dir, len, "%s", dirname(copy));
}

int secret_watch_start(uv_loop_t *loop, const char *const *paths, size_t n, secret_watch_cb cb,
                       void *ctx, struct secret_watch **out, char *err, size_t errlen)
{
    *out = NULL;
    char dirs[SECRET_WATCH_MAX_DIRS][AMPD_PATH_MAX];
    size_t ndirs = 0;
    for (size_t i = 0; i < n; i++) {
        if (!paths[i] || !paths[i][0])
            continue;
        char dir[AMPD_PATH_MAX];
        secret_watch_dir(paths[i], dir, sizeof dir);
        size_t k = 0;
        while (k < ndirs && strcmp(dirs[k], dir) != 0)
            k++;
        if (k == ndirs && ndirs < SECRET_WATCH_MAX_DIRS)
            snprintf(dirs[ndirs++], AMPD_PATH_MAX, "%s", dir);
    }
    if (ndirs == 0)
        return 0;
    struct secret_watch *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "watching the secrets' files: out of memory");
        return -1;
    }
    w->cb = cb;
    w->ctx = ctx;
    uv_timer_init(loop, &w->settle);
    w->settle.data = w;
    w->open = 1;
    for (size_t i = 0; i < ndirs; i++) {
        uv_fs_event_t *h = &w->dirs[w->ndirs];
        uv_fs_event_init(loop, h);
        h->data = w;
        w->ndirs++;
        w->open++;
        int rv = uv_fs_event_start(h, secret_watch_on_event, dirs[i], 0);
        if (rv != 0) {
            snprintf(err, errlen, "watching %s for changed secrets: %s", dirs[i], uv_strerror(rv));
            secret_watch_stop(w);
            return -1;
        }
    }
    *out = w;
    return 0;
}

void secret_watch_stop(struct secret_watch *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->ndirs; i++)
        uv_close((uv_handle_t *)&w->dirs[i], secret_watch_closed);
    uv_close((uv_handle_t *)&w->settle, secret_watch_closed);
}
