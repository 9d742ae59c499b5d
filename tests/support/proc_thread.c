/* SPDX-License-Identifier: MIT */
/* proc_thread.c: a process's thread by name (proc_thread.h). */
#include "proc_thread.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pid_t proc_thread_find(pid_t pid, const char *name)
{
    char dir[64];
    if (pid)
        snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    else
        snprintf(dir, sizeof dir, "/proc/self/task");
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    pid_t id = 0;
    for (struct dirent *e; !id && (e = readdir(d));) {
        char path[sizeof dir + sizeof e->d_name + 8], comm[32] = "";
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f && fgets(comm, sizeof comm, f) && !strncmp(comm, name, strlen(name)) &&
            comm[strlen(name)] == '\n')
            id = (pid_t)atoi(e->d_name);
        if (f)
            fclose(f);
    }
    closedir(d);
    return id;
}
