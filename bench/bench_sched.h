/* SPDX-License-Identifier: MIT */
/* bench_sched.h: what the host's scheduler did while a benchmark ran
 * (bench_sched.c): how long a thread, or all threads of a process, waited
 * runnable for a CPU (/proc/.../schedstat's second field), and how busy the
 * host's CPUs were (/proc/stat). A tail latency is the host's when the slow
 * calls spent it waiting for a CPU, the daemon's when they did not. */
#ifndef AMP_BENCH_SCHED_H
#define AMP_BENCH_SCHED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* The calling thread's schedstat, opened once (bench_sched_thread_open)
 * and read before and after each call. */
struct bench_sched_thread {
    int fd;   /* -1: not available (no schedstats in this kernel) */
};

void bench_sched_thread_open(struct bench_sched_thread *t);
void bench_sched_thread_close(struct bench_sched_thread *t);

/* Nanoseconds the thread has been on a CPU, and has waited runnable for
 * one, so far; 0 when not available. In a virtual machine a vCPU its host
 * takes away counts as on a CPU: a tiny call's thread that runs for
 * milliseconds lost them there. */
void bench_sched_thread_times(const struct bench_sched_thread *t, uint64_t *run_ns,
                              uint64_t *wait_ns);

/* Minor page faults of process pid so far (0: this process); 0 when not
 * available. A buffer mapped fresh faults every page in, zeroed. */
uint64_t bench_sched_minor_faults(pid_t pid);

/* TLB shootdowns the host's CPUs have taken so far (/proc/interrupts),
 * one for every CPU an unmapping interrupts; 0 when not available. */
uint64_t bench_sched_tlb_shootdowns(void);

/* Threads of a process by kind: the name up to its first digit
 * ("ampd-io3" is "ampd-io"), at most BENCH_SCHED_KINDS of them. */
#define BENCH_SCHED_KINDS 16

struct bench_sched_kinds {
    size_t n;
    struct {
        char name[16];
        unsigned threads;
        uint64_t run_ns;   /* on a CPU so far, all its threads together */
        uint64_t wait_ns;  /* waiting runnable for one so far, likewise */
    } kind[BENCH_SCHED_KINDS];
};

/* Every thread of pid, summed by kind (threads that ended are not
 * counted); n 0 when not available. */
void bench_sched_process_kinds(pid_t pid, struct bench_sched_kinds *out);

/* What some threads of a process are doing, sampled every period_us
 * by a thread of its own (bench_sched_sampler_start): on a CPU or
 * runnable, or asleep, and where in the kernel each sleep is (its wchan:
 * "do_epoll_wait" for a loop waiting on its sockets, "futex_wait_queue"
 * for a lock or a condition variable, a page fault's or an rwsem's wait
 * for the address space). */
#define BENCH_SCHED_SAMPLED 64   /* threads sampled at most */
#define BENCH_SCHED_WCHANS 32    /* distinct wchans counted */

struct bench_sched_sampler {
    int period_us;
    size_t nthreads;
    int stat_fd[BENCH_SCHED_SAMPLED], wchan_fd[BENCH_SCHED_SAMPLED];
    uint64_t samples, running;   /* thread samples taken; of them on a CPU or runnable */
    size_t nwchans;
    struct {
        char name[48];
        uint64_t samples;
    } wchan[BENCH_SCHED_WCHANS];
    atomic_int stop;             /* set to end the sampling thread */
    pthread_t thread;
};

/* Samples pid's threads whose names begin with one of the prefixes
 * (NULL-terminated) until bench_sched_sampler_stop. Returns 0, or -1
 * when none could be opened. */
int bench_sched_sampler_start(struct bench_sched_sampler *s, pid_t pid,
                              const char *const *prefixes, int period_us);

/* Stops the sampling; then text holds "N samples: R% running, W% in
 * do_epoll_wait, ..." (the wchans by share, largest first). */
void bench_sched_sampler_stop(struct bench_sched_sampler *s, char *text, size_t len);

/* The host's CPU time so far, busy and in all, in clock ticks; busy over
 * all between two samples is the share of every CPU that was busy. */
struct bench_sched_cpu {
    uint64_t busy, steal, all;   /* steal: a virtual machine's CPUs taken by its host */
};

struct bench_sched_cpu bench_sched_cpu_now(void);

/* Busy share of the host's CPUs between two samples, 0..1 (steal
 * included); -1 when unknown. */
double bench_sched_cpu_busy(struct bench_sched_cpu from, struct bench_sched_cpu to);

/* Share of the host's CPU time its hypervisor took (steal) between two
 * samples, 0..1; -1 when unknown. */
double bench_sched_cpu_steal(struct bench_sched_cpu from, struct bench_sched_cpu to);

#endif
