/* SPDX-License-Identifier: MIT */
/* main.c: ampd's entry point: settings, then the server loop, which opens
 * the devices.
 *
 * Opening the devices --devices picks (main_open_devices: dev_open_selected)
 * builds every kernel, or takes it from the kernel cache (prog_cache.h),
 * which takes seconds cold; server.c runs it on a thread of its own
 * after the sockets are bound, so clients connect at once and health says
 * NOT_SERVING until it is done. The device list is logged (log.h: stderr,
 * the journal under systemd); server.c runs until a drain completes.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "dev.h"
#include "fd_reserve.h"
#include "log.h"
#include "prog_cache.h"
#include "sched.h"
#include "server.h"
#include "start_gate.h"
#include "thread_nice.h"

#define MAIN_ERR_MAX 512
#define MAIN_EXIT_USAGE 2
#define MAIN_TRIM_THRESHOLD (256 * 1024 * 1024)  /* malloc gives the heap's top back past this */
/* glibc's largest per-thread heap (HEAP_MAX_SIZE on 64 bits): its
 * heap_trim deletes a free heap only where more than the top pad would
 * go back, so with this pad it keeps them all. */
#define MAIN_TOP_PAD (64 * 1024 * 1024)
/* Arenas beyond the I/O loops and host workers: the main thread, device runners, spare. */
#define MAIN_SPARE_ARENAS 8
#define MAIN_ARENAS_PER_CPU 2

/* malloc's arena cap: a thread each, at most MAIN_ARENAS_PER_CPU per CPU. */
static int main_arenas(const struct config *cfg)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t want = (uint64_t)cfg->io_threads + cfg->host_threads + MAIN_SPARE_ARENAS;
    if (cpus > 0 && want > (uint64_t)cpus * MAIN_ARENAS_PER_CPU)
        want = (uint64_t)cpus * MAIN_ARENAS_PER_CPU;
    return (int)want;
}

static void main_print_devices(struct dev **devs, size_t n, size_t default_index)
{
    for (size_t i = 0; i < n; i++) {
        const struct dev_info *di = dev_info(devs[i]);
        log_msg(LOG_INFO, "device %u: %s (%s, %s, %s)%s", di->index, di->name,
                dev_type_name(di->type), di->vendor, di->platform,
                i == default_index ? " [default]" : "");
    }
}

/* server.h's server_open_devices_fn, on the server's opener thread. */
static int main_open_devices(const struct config *cfg, struct dev ***devs, size_t *ndevs,
                             size_t *default_index, char *err, size_t errlen)
{
    start_gate_wait();
    char why[MAIN_ERR_MAX];
    if (dev_open_selected(cfg->devices, devs, ndevs, why, sizeof why) != 0 || *ndevs == 0) {
        snprintf(err, errlen, "no OpenCL device: %s", *ndevs == 0 && *devs ? "none found" : why);
        dev_close_all(*devs, *ndevs);
        return -1;
    }
    if (sched_pick_default(*devs, *ndevs, cfg->device, default_index, err, errlen) != 0) {
        dev_close_all(*devs, *ndevs);
        return -1;
    }
    main_print_devices(*devs, *ndevs, *default_index);
    return 0;
}

int main(int argc, char **argv)
{
    struct config cfg;
    char err[MAIN_ERR_MAX];
    log_init();
    thread_nice_init();   /* the daemon's nice, before any thread changes its own */
    enum config_result cr = config_load(&cfg, argc, argv, err, sizeof(err));
    if (cr == CONFIG_EXIT)
        return 0;
    if (cr == CONFIG_ERROR) {
        log_msg(LOG_ERROR, "%s", err);
        return MAIN_EXIT_USAGE;
    }
    log_set_level((enum log_level)cfg.log_level);
    if (cfg.check_only) {
        if (server_check(&cfg) != 0)
            return MAIN_EXIT_USAGE;
        printf("ampd: configuration ok\n");
        return 0;
    }
    /* A client that vanishes mid-write must not kill the daemon, nor a
     * SIGHUP (systemctl reload) that comes while kernels build, before the
     * server's loop handles it (server.c reloads then). */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    /* PoCL's CPU drivers, read at its first call: pthread's device runs
     * jobs, basic's runs its batches (dev_discover.c), unless the
     * environment names the drivers. Before any thread. */
    if (!getenv("POCL_DEVICES")) {
        setenv("POCL_DEVICES", "pthread basic", 1);
        dev_set_pocl_batches(true);
    }
    server_signals_hold();
    /* Buffers of MiBs come and go with every call: request messages, a
     * unary job's results, stream write buffers, and on CPU devices PoCL's
     * device buffers. Keep them in one heap for reuse instead of fresh
     * mmap()s whose pages fault in, zeroed, every time (writing 32 MiB
     * into fresh pages cost ~21 ms on the 2-core bench host, into reused
     * ones ~4.5): no mmap() at all (glibc's largest mmap threshold, 32
     * MiB, would still map a 32 MiB result). The heap keeps what it held
     * at its peak, less a free top past MAIN_TRIM_THRESHOLD, until the
     * daemon goes quiet: heap_trim.c then gives free pages back, all but
     * the free tops of the threads' arenas (glibc trims only the main
     * arena's top).
     * A thread's arena grows by heaps of at most 64 MiB: a second 32 MiB
     * message got one of its own, deleted (munmap) when freed and faulted
     * in anew by the next, 2-20 ms on an I/O loop each time, its TLB
     * shootdowns on every CPU the daemon ran on; a top pad as large as a
     * heap keeps them (glibc's heap_trim deletes a free heap only past
     * it). What is live at once is bounded by the limits
     * (--max-job-memory, --staging-bytes, --max-device-memory).
     * Arenas: one per thread that allocates (I/O loops, host workers,
     * runners and the main thread, with room to spare), but at most two
     * per CPU: as many threads as CPUs run at once, and with twice the
     * arenas two of them seldom meet on one. Each arena keeps its top at
     * its peak, so more keep more for nothing: on 2 cores 16 loops kept
     * 362-374 MB resident after `ampctl bench -k transform -s 32M -c 8`,
     * 222 MB with 4 arenas, tiny jobs no slower (150-155k calls/s against
     * 145k, 4 x 64). One arena for all made every call's small allocations
     * queue on its lock: on the H100 host tiny jobs stopped at 106k
     * calls/s with four connections x 64 calls in flight, and went to 218k
     * with 16 arenas, while 32 MiB unary calls did not slow down
     * (bench/RESULTS-archive.md). */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_ARENA_MAX, main_arenas(&cfg));
    mallopt(M_TRIM_THRESHOLD, MAIN_TRIM_THRESHOLD);
    mallopt(M_TOP_PAD, MAIN_TOP_PAD);

    /* Before any OpenCL call (it sets the drivers' cache variables). */
    struct prog_cache *cache;
    if (prog_cache_open(cfg.cache_dir, &cache, err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "%s", err);
        return MAIN_EXIT_USAGE;
    }
    dev_use_prog_cache(cache);
    dev_use_retune(cfg.retune != 0);

    /* Before devices open: their drivers' descriptors then sit below the
     * clients' threshold (fd_reserve.h). */
    log_msg(fd_reserve_init(err, sizeof err) == 0 ? LOG_INFO : LOG_WARN, "%s", err);

    int status = server_run(&cfg, main_open_devices);
    prog_cache_close(cache);
    return status;
}
