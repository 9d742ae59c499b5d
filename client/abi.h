/* SPDX-License-Identifier: MIT */
/* abi.h: the public structs as a program built against any amp.h lays
 * them out (abi.c). amp.h's top comment states the rules: a struct passed
 * in on its own starts with its size; a nested or returned one grows into
 * its reserved tail. */
#ifndef AMP_CLIENT_ABI_H
#define AMP_CLIENT_ABI_H

#include <stddef.h>

#include "amp.h"

/* A layout's size up to and including field. */
#define ABI_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Each sized struct's first released layout: the least size accepted.
 * Fields of that layout can be read from any accepted struct; a field
 * added later is read only when ABI_HAS says the caller's layout has it. */
#define ABI_OPTS_MIN ABI_END(amp_opts, timeout_ms)
#define ABI_CONNECT_OPTS_MIN ABI_END(amp_connect_opts, no_reconnect)
#define ABI_STEP_MIN ABI_END(amp_step, fill)
#define ABI_SLICE_MIN ABI_END(amp_slice, length)
#define ABI_STATUS_MIN ABI_END(amp_daemon_status, calls)
#define ABI_STREAM_ARGS_MIN ABI_END(amp_stream_args, nhists)
#define ABI_HAS(p, type, field) ((p)->size >= ABI_END(type, field))

/* AMP_EINVAL with a message naming what ("opts", "steps[2]") unless size
 * is at least min; else 0. */
int abi_check_size(amp_conn *c, const char *what, size_t size, size_t min);

/* AMP_EINVAL with a message naming what unless the n bytes at reserved
 * are all zero (a later library may give them meaning); else 0. */
int abi_check_reserved(amp_conn *c, const char *what, const void *reserved, size_t n);

/* Step i of an array whose steps are steps[0].size bytes apart (checked
 * by steps_encode). */
const amp_step *abi_step(const amp_step *steps, size_t i);

/* Copies the library's filled *src (full bytes, size first) into the
 * caller's *dst, as much as dst->size holds; dst->size stays. */
void abi_write(void *dst, const void *src, size_t full);

#endif
