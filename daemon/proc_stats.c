/* SPDX-License-Identifier: MIT */
/* proc_stats.c: the daemon's process figures from /proc (proc_stats.h). */
#include "proc_stats.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Fields of /proc/self/stat after "pid (comm) ", counted from state (3). */
#define PROC_STAT_UTIME 14
#define PROC_STAT_STIME 15
#define PROC_STAT_THREADS 20
#define PROC_STAT_STARTTIME 22
#define PROC_STAT_VSIZE 23
#define PROC_STAT_RSS 24
#define PROC_STAT_LINE_MAX 1024

/* The boot time, from /proc/stat's btime: start times count from it. */
static int proc_stats_boot_time(double *out)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[256];
    unsigned long long btime = 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "btime %llu", &btime) == 1;
    fclose(f);
    *out = (double)btime;
    return found ? 0 : -1;
}

static uint64_t proc_stats_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    uint64_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n > 0 ? n - 1 : 0;   /* less the directory's own descriptor */
}

int proc_stats_read(struct proc_stats *out)
{
    char line[PROC_STAT_LINE_MAX];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t len = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[len] = '\0';
    char *p = strrchr(line, ')');   /* the command's name may hold spaces and parentheses */
    if (!p)
        return -1;
    unsigned long long v[PROC_STAT_RSS + 1] = {0};
    int field = 3;
    for (char *save = NULL, *tok = strtok_r(p + 1, " ", &save); tok && field <= PROC_STAT_RSS;
         tok = strtok_r(NULL, " ", &save), field++)
        sscanf(tok, "%llu", &v[field]);
    if (field <= PROC_STAT_RSS)
        return -1;
    double boot, ticks = (double)sysconf(_SC_CLK_TCK);
    if (proc_stats_boot_time(&boot) != 0 || ticks <= 0)
        return -1;
    struct rlimit rl;
    *out = (struct proc_stats){
        .cpu_seconds = (double)(v[PROC_STAT_UTIME] + v[PROC_STAT_STIME]) / ticks,
        .start_time_s = boot + (double)v[PROC_STAT_STARTTIME] / ticks,
        .resident_bytes = v[PROC_STAT_RSS] * (uint64_t)sysconf(_SC_PAGESIZE),
        .virtual_bytes = v[PROC_STAT_VSIZE],
        .threads = v[PROC_STAT_THREADS],
        .open_fds = proc_stats_open_fds(),
        .max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t)rl.rlim_cur : 0,
    };
    return 0;
}
