/* SPDX-License-Identifier: MIT */
/* proc_thread.h: finding a process's thread by the name it gave itself
 * (/proc/PID/task/TID/comm), for tests of the threads ampd and its
 * library make (sock_writer.c's, listen.c's readers). */
#ifndef AMP_TEST_PROC_THREAD_H
#define AMP_TEST_PROC_THREAD_H

#include <sys/types.h>

/* The id of a thread of process pid (0: this one) named name, or 0. */
pid_t proc_thread_find(pid_t pid, const char *name);

#endif
