/* SPDX-License-Identifier: MIT */
/* bench_sched.c: what the host's scheduler did while a benchmark ran
 * (bench_sched.h). */
#define _GNU_SOURCE
#include "bench_sched.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* schedstat is "time on a CPU, time waiting for one, timeslices", in ns. */
static bool bench_sched_parse(const char *text, uint64_t *run, uint64_t *wait)
{
    return sscanf(text, "%" SCNu64 " %" SCNu64, run, wait) == 2;
}

/* /proc/PID/task/TID/FILE into path. */
static void bench_sched_task_path(char *path, size_t len, pid_t pid, const char *tid,
                                  const char *file)
{
    snprintf(path, len, "/proc/%d/task/%.16s/%s", (int)pid, tid, file);
}

void bench_sched_thread_open(struct bench_sched_thread *t)
{
    t->fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

void bench_sched_thread_close(struct bench_sched_thread *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

void bench_sched_thread_times(const struct bench_sched_thread *t, uint64_t *run_ns,
                              uint64_t *wait_ns)
{
    char buf[128];
    ssize_t n = t->fd >= 0 ? pread(t->fd, buf, sizeof buf - 1, 0) : -1;
    *run_ns = *wait_ns = 0;
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (!bench_sched_parse(buf, run_ns, wait_ns))
        *run_ns = *wait_ns = 0;
}

/* Thread tid of pid: its time on a CPU and waiting for one so far, ns;
 * false when it ended meanwhile. */
static bool bench_sched_task_times(pid_t pid, const char *tid, uint64_t *run, uint64_t *wait)
{
    char path[64], buf[128];
    bench_sched_task_path(path, sizeof path, pid, tid, "schedstat");
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(buf, sizeof buf, f) && bench_sched_parse(buf, run, wait);
    fclose(f);
    return ok;
}

/* One thread's name (its comm, without the newline) into name. */
static void bench_sched_comm(pid_t pid, const char *tid, char *name, size_t len)
{
    char path[64];
    bench_sched_task_path(path, sizeof path, pid, tid, "comm");
    FILE *f = fopen(path, "re");
    name[0] = '\0';
    if (f) {
        if (fgets(name, (int)len, f))
            name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
}

void bench_sched_process_kinds(pid_t pid, struct bench_sched_kinds *out)
{
    char path[64], name[16];
    out->n = 0;
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        uint64_t run, wait;
        if (!bench_sched_task_times(pid, e->d_name, &run, &wait))
            continue;
        bench_sched_comm(pid, e->d_name, name, sizeof name);
        name[strcspn(name, "0123456789")] = '\0';
        size_t k = 0;
        while (k < out->n && strcmp(out->kind[k].name, name) != 0)
            k++;
        if (k == out->n) {
            if (k == BENCH_SCHED_KINDS)
                continue;
            out->n++;
            snprintf(out->kind[k].name, sizeof out->kind[k].name, "%s", name);
            out->kind[k].threads = 0;
            out->kind[k].run_ns = out->kind[k].wait_ns = 0;
        }
        out->kind[k].threads++;
        out->kind[k].run_ns += run;
        out->kind[k].wait_ns += wait;
    }
    closedir(dir);
}

uint64_t bench_sched_minor_faults(pid_t pid)
{
    char path[64], buf[1024];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* After the command's ")": state ppid pgrp session tty tpgid flags minflt. */
    const char *p = strrchr(buf, ')');
    uint64_t minflt = 0;
    if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %" SCNu64, &minflt) != 1)
        minflt = 0;
    return minflt;
}

uint64_t bench_sched_tlb_shootdowns(void)
{
    FILE *f = fopen("/proc/interrupts", "re");
    if (!f)
        return 0;
    char line[4096];
    uint64_t sum = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " ");
        if (strncmp(p, "TLB:", 4) != 0)
            continue;
        p += 4;
        char *end;
        for (;;) {
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p)
                break;
            sum += v;
            p = end;
        }
    }
    fclose(f);
    return sum;
}

struct bench_sched_cpu bench_sched_cpu_now(void)
{
    struct bench_sched_cpu c = {0, 0, 0};
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return c;
    /* cpu  user nice system idle iowait irq softirq steal ... */
    uint64_t v[8] = {0};
    if (fscanf(f, "cpu %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
               " %" SCNu64 " %" SCNu64, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            c.all += v[i];
        c.busy = c.all - v[3] - v[4];
        c.steal = v[7];
    }
    fclose(f);
    return c;
}

double bench_sched_cpu_busy(struct bench_sched_cpu from, struct bench_sched_cpu to)
{
    if (to.all <= from.all)
        return -1;
    return (double)(to.busy - from.busy) / (double)(to.all - from.all);
}

double bench_sched_cpu_steal(struct bench_sched_cpu from, struct bench_sched_cpu to)
{
    if (to.all <= from.all)
        return -1;
    return (double)(to.steal - from.steal) / (double)(to.all - from.all);
}

/* One sample of thread i: its state from stat, its wchan when asleep. */
static void bench_sched_sample(struct bench_sched_sampler *s, size_t i)
{
    char buf[512];
    ssize_t n = pread(s->stat_fd[i], buf, sizeof buf - 1, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return;
    s->samples++;
    if (p[2] == 'R') {
        s->running++;
        return;
    }
    n = pread(s->wchan_fd[i], buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    const char *name = buf[0] && strcmp(buf, "0") != 0 ? buf : "(unknown)";
    size_t k = 0;
    while (k < s->nwchans && strcmp(s->wchan[k].name, name) != 0)
        k++;
    if (k == s->nwchans) {
        if (k == BENCH_SCHED_WCHANS)
            k--;   /* the last entry takes the rest */
        else
            s->nwchans++;
        snprintf(s->wchan[k].name, sizeof s->wchan[k].name, "%.47s", name);
    }
    s->wchan[k].samples++;
}

static void *bench_sched_sampler_main(void *arg)
{
    struct bench_sched_sampler *s = arg;
    struct timespec ts = {0, (long)s->period_us * 1000};
    while (!atomic_load(&s->stop)) {
        for (size_t i = 0; i < s->nthreads; i++)
            bench_sched_sample(s, i);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int bench_sched_open_task(pid_t pid, const char *tid, const char *file)
{
    char path[64];
    bench_sched_task_path(path, sizeof path, pid, tid, file);
    return open(path, O_RDONLY | O_CLOEXEC);
}

int bench_sched_sampler_start(struct bench_sched_sampler *s, pid_t pid,
                              const char *const *prefixes, int period_us)
{
    memset(s, 0, sizeof *s);
    s->period_us = period_us;
    char path[64], name[16];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && s->nthreads < BENCH_SCHED_SAMPLED) {
        if (e->d_name[0] == '.')
            continue;
        bench_sched_comm(pid, e->d_name, name, sizeof name);
        bool wanted = false;
        for (size_t k = 0; prefixes[k] && !wanted; k++)
            wanted = strncmp(name, prefixes[k], strlen(prefixes[k])) == 0;
        if (!wanted)
            continue;
        int sf = bench_sched_open_task(pid, e->d_name, "stat");
        int wf = bench_sched_open_task(pid, e->d_name, "wchan");
        if (sf < 0 || wf < 0) {
            if (sf >= 0)
                close(sf);
            if (wf >= 0)
                close(wf);
            continue;
        }
        s->stat_fd[s->nthreads] = sf;
        s->wchan_fd[s->nthreads++] = wf;
    }
    closedir(dir);
    if (!s->nthreads || pthread_create(&s->thread, NULL, bench_sched_sampler_main, s) != 0) {
        for (size_t i = 0; i < s->nthreads; i++) {
            close(s->stat_fd[i]);
            close(s->wchan_fd[i]);
        }
        s->nthreads = 0;
        return -1;
    }
    return 0;
}

void bench_sched_sampler_stop(struct bench_sched_sampler *s, char *text, size_t len)
{
    text[0] = '\0';
    if (!s->nthreads)
        return;
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->nthreads; i++) {
        close(s->stat_fd[i]);
        close(s->wchan_fd[i]);
    }
    double all = s->samples ? (double)s->samples : 1;
    int at = snprintf(text, len, "%" PRIu64 " samples: %.2f%% running", s->samples,
                      100.0 * (double)s->running / all);
    bool shown[BENCH_SCHED_WCHANS] = {false};
    for (size_t r = 0; r < s->nwchans && at > 0 && (size_t)at < len; r++) {
        size_t best = s->nwchans;
        for (size_t k = 0; k < s->nwchans; k++)
            if (!shown[k] && (best == s->nwchans || s->wchan[k].samples > s->wchan[best].samples))
                best = k;
        shown[best] = true;
        at += snprintf(text + at, len - (size_t)at, ", %.2f%% %s",
                       100.0 * (double)s->wchan[best].samples / all, s->wchan[best].name);
    }
}
