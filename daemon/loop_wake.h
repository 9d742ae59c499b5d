/* SPDX-License-Identifier: MIT */
/* loop_wake.h: wakes a libuv loop from any thread, as uv_async_t does,
 * without libuv's spin.
 *
 * libuv's async callback busy-waits (997 pauses, then sched_yield) for a
 * sender still between marking the handle and writing its eventfd; the
 * sender is often a worker that the write itself just preempted, so on a
 * loaded host the loop spins for its time slice instead of delivering a
 * tiny job's result. Here a sender writes an eventfd only when no wake-up
 * is pending, and the loop, woken by poll, clears the mark before calling
 * back: a wake-up sent after that is a new one, one sent before is seen
 * by the callback. Coalescing is as uv_async_t's: many sends, one call.
 */
#ifndef AMPD_LOOP_WAKE_H
#define AMPD_LOOP_WAKE_H

#include <stdatomic.h>
#include <uv.h>

struct loop_wake;
typedef void (*loop_wake_cb)(struct loop_wake *w);

struct loop_wake {
    uv_poll_t poll;      /* on fd; poll.data is the owner's */
    int fd;              /* eventfd, readable once woken */
    atomic_int pending;  /* 1: a wake-up was written and the loop has not yet taken it */
    loop_wake_cb cb;
};

/* Starts w on loop (the loop's thread); cb runs there after sends. data
 * goes in w->poll.data, for cb and the close callback. Returns 0 or a
 * negative uv error. */
int loop_wake_init(uv_loop_t *loop, struct loop_wake *w, loop_wake_cb cb, void *data);

/* Any thread: cb runs soon on the loop. Not after loop_wake_close(). */
void loop_wake_send(struct loop_wake *w);

/* The loop's thread, once no thread sends any more: closes the eventfd
 * and the handle; closed runs as uv_close()'s callback (its handle's data
 * is the init's data). */
void loop_wake_close(struct loop_wake *w, uv_close_cb closed);

#endif
