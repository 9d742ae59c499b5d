/* SPDX-License-Identifier: MIT */
/* secret_watch.h: the files of the daemon's secrets (the token file and
 * the TLS certificate, key and client CA) watched for change, so that a
 * rotated secret is read without a signal (issue 39: Kubernetes mounts a
 * rotated Secret by swapping a symlink in its directory, and nothing in a
 * cluster sends SIGHUP).
 *
 * Each distinct directory of the files is watched (inotify, through
 * libuv's uv_fs_event): an edit in place, a rename over a file and a
 * symlink swap all show there. A change calls back once the directory
 * has been quiet for SECRET_WATCH_SETTLE_MS, so a burst (a tool writing a
 * temporary and renaming, Kubernetes' several renames) is one reload. The
 * main loop only. */
#ifndef AMPD_SECRET_WATCH_H
#define AMPD_SECRET_WATCH_H

#include <stddef.h>
#include <uv.h>

#define SECRET_WATCH_SETTLE_MS 200
#define SECRET_WATCH_MAX_DIRS 4

typedef void (*secret_watch_cb)(void *ctx);

struct secret_watch;

/* Watches the directories of the n paths ("" entries are skipped) on loop
 * and calls cb(ctx) after changes settle. NULL *out when there is nothing
 * to watch. Returns 0, or -1 with err naming the directory. */
int secret_watch_start(uv_loop_t *loop, const char *const *paths, size_t n, secret_watch_cb cb,
                       void *ctx, struct secret_watch **out, char *err, size_t errlen);

/* Closes the handles; the watch is freed once they are. NULL: no-op. */
void secret_watch_stop(struct secret_watch *w);

#endif
