/* SPDX-License-Identifier: MIT */
/* dev_exec.c: one job's commands on a device's queues.
 *
 * Every command (copy in, fill, kernel, copy out) goes through here with
 * the buffers it touches and how; hazard.c turns those declarations into
 * the command's wait list. Copies in, kernels and copies out use the
 * device's three in-order queues, so a copy out of one buffer overlaps a
 * kernel that only reads it. Each queue is flushed after each command:
 * a command waiting on another queue's event must not wait for a flush
 * that never comes.
 */
#include "dev_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEV_EXEC_EVENTS_INITIAL 16

const char *dev_cl_error_name(cl_int err)
{
#define DEV_ERR(e) case e: return #e
    switch (err) {
    DEV_ERR(CL_SUCCESS);
    DEV_ERR(CL_DEVICE_NOT_FOUND);
    DEV_ERR(CL_DEVICE_NOT_AVAILABLE);
    DEV_ERR(CL_COMPILER_NOT_AVAILABLE);
    DEV_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    DEV_ERR(CL_OUT_OF_RESOURCES);
    DEV_ERR(CL_OUT_OF_HOST_MEMORY);
    DEV_ERR(CL_PROFILING_INFO_NOT_AVAILABLE);
    DEV_ERR(CL_MEM_COPY_OVERLAP);
    DEV_ERR(CL_BUILD_PROGRAM_FAILURE);
    DEV_ERR(CL_MAP_FAILURE);
    DEV_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    DEV_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    DEV_ERR(CL_COMPILE_PROGRAM_FAILURE);
    DEV_ERR(CL_LINK_PROGRAM_FAILURE);
    DEV_ERR(CL_INVALID_VALUE);
    DEV_ERR(CL_INVALID_DEVICE_TYPE);
    DEV_ERR(CL_INVALID_PLATFORM);
    DEV_ERR(CL_INVALID_DEVICE);
    DEV_ERR(CL_INVALID_CONTEXT);
    DEV_ERR(CL_INVALID_QUEUE_PROPERTIES);
    DEV_ERR(CL_INVALID_COMMAND_QUEUE);
    DEV_ERR(CL_INVALID_HOST_PTR);
    DEV_ERR(CL_INVALID_MEM_OBJECT);
    DEV_ERR(CL_INVALID_BINARY);
    DEV_ERR(CL_INVALID_BUILD_OPTIONS);
    DEV_ERR(CL_INVALID_PROGRAM);
    DEV_ERR(CL_INVALID_PROGRAM_EXECUTABLE);
    DEV_ERR(CL_INVALID_KERNEL_NAME);
    DEV_ERR(CL_INVALID_KERNEL_DEFINITION);
    DEV_ERR(CL_INVALID_KERNEL);
    DEV_ERR(CL_INVALID_ARG_INDEX);
    DEV_ERR(CL_INVALID_ARG_VALUE);
    DEV_ERR(CL_INVALID_ARG_SIZE);
    DEV_ERR(CL_INVALID_KERNEL_ARGS);
    DEV_ERR(CL_INVALID_WORK_DIMENSION);
    DEV_ERR(CL_INVALID_WORK_GROUP_SIZE);
    DEV_ERR(CL_INVALID_WORK_ITEM_SIZE);
    DEV_ERR(CL_INVALID_GLOBAL_OFFSET);
    DEV_ERR(CL_INVALID_EVENT_WAIT_LIST);
    DEV_ERR(CL_INVALID_EVENT);
    DEV_ERR(CL_INVALID_OPERATION);
    DEV_ERR(CL_INVALID_BUFFER_SIZE);
    DEV_ERR(CL_INVALID_GLOBAL_WORK_SIZE);
    DEV_ERR(CL_INVALID_PROPERTY);
    }
#undef DEV_ERR
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "CL error %d", (int)err);
    return buf;
}

static void dev_event_retain(void *ev)
{
    clRetainEvent((cl_event)ev);
}

static void dev_event_release(void *ev)
{
    clReleaseEvent((cl_event)ev);
}

static const struct hazard_ops dev_hazard_ops = {dev_event_retain, dev_event_release};

enum status_code dev_cl_status(cl_int err)
{
    bool resource = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                    err == CL_OUT_OF_HOST_MEMORY;
    return resource ? STATUS_RESOURCE_EXHAUSTED : STATUS_INTERNAL;
}

void dev_exec_init(struct dev_exec *x, struct dev *d, struct job *job)
{
    memset(x, 0, sizeof(*x));
    x->d = d;
    x->job = job;
}

enum status_code dev_exec_cl_fail(struct dev_exec *x, const char *what, cl_int err)
{
    if (x->failed)
        return x->job->status;
    x->failed = true;
    return job_fail(x->job, dev_cl_status(err), "%s on device %u: %s", what, x->d->info.index, dev_cl_error_name(err));
}

static enum status_code dev_exec_fail_oom(struct dev_exec *x)
{
    if (!x->failed) {
        x->failed = true;
        job_fail(x->job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    }
    return x->job->status;
}

/* Keeps ev (its reference passes to x) for the final status check. */
static int dev_exec_keep(struct dev_exec *x, cl_event ev)
{
    if (x->nevents == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : DEV_EXEC_EVENTS_INITIAL;
        cl_event *e = realloc(x->events, cap * sizeof(*e));
        if (!e) {
            clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
            return -1;
        }
        x->events = e;
        x->cap = cap;
    }
    x->events[x->nevents++] = ev;
    return 0;
}

/* Device time of ev if it is a kernel or a fill on a profiling queue. */
static uint64_t dev_event_device_ns(const struct dev *d, cl_event ev)
{
    cl_command_type type = 0;
    cl_ulong start = 0, end = 0;
    if (!d->profiling ||
        clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        (type != CL_COMMAND_NDRANGE_KERNEL && type != CL_COMMAND_FILL_BUFFER))
        return 0;
    if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
            CL_SUCCESS)
        return 0;
    return end > start ? end - start : 0;
}

cl_int dev_event_status(cl_event ev)
{
    cl_int st = CL_COMPLETE;
    cl_int rc = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    return rc != CL_SUCCESS ? rc : st;
}

/* Checks and releases x's events, which have all completed. */
static enum status_code dev_exec_collect(struct dev_exec *x)
{
    for (size_t i = 0; i < x->nevents; i++) {
        cl_int st = dev_event_status(x->events[i]);
        if (st < 0)
            dev_exec_cl_fail(x, "a device command failed", st);
        else
            x->device_ns += dev_event_device_ns(x->d, x->events[i]);
        clReleaseEvent(x->events[i]);
    }
    free(x->events);
    x->events = NULL;
    x->nevents = x->cap = 0;
    /* Success leaves job->status alone: a streamed job's earlier failure
     * must survive a later task that went well. */
    return x->failed ? x->job->status : STATUS_OK;
}

enum status_code dev_exec_finish(struct dev_exec *x)
{
    for (int q = 0; q < DEV_NQUEUES; q++)
        clFinish(x->d->q[q]);
    return dev_exec_collect(x);
}

enum status_code dev_exec_wait(struct dev_exec *x)
{
    if (x->nevents)
        clWaitForEvents((cl_uint)x->nevents, x->events);
    return dev_exec_collect(x);
}

bool dev_exec_ready(const struct dev_exec *x)
{
    for (size_t i = 0; i < x->nevents; i++) {
        if (dev_event_status(x->events[i]) > CL_COMPLETE)
            return false;
    }
    return true;
}

static void CL_CALLBACK dev_exec_on_event(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    (void)status;
    const struct dev_notify *n = arg;
    n->fn(n->arg);
}

size_t dev_exec_notify(struct dev_exec *x, const struct dev_notify *n)
{
    size_t registered = 0;
    for (size_t i = 0; i < x->nevents; i++)
        if (clSetEventCallback(x->events[i], CL_COMPLETE, dev_exec_on_event, (void *)n) ==
            CL_SUCCESS)
            registered++;
    return registered;
}

/* The start of both ways to make a buffer: b empty, of size. False when
 * there is nothing to make, *st then saying why: the run failed before (its
 * status), or size is 0 (STATUS_OK). */
static bool dev_buf_begin(struct dev_exec *x, struct dev_buf *b, size_t size,
                          enum status_code *st)
{
    memset(b, 0, sizeof(*b));
    b->size = size;
    *st = x->failed ? x->job->status : STATUS_OK;
    return !x->failed && size > 0;
}

enum status_code dev_buf_create(struct dev_exec *x, struct dev_buf *b, size_t size,
                                const char *what)
{
    enum status_code st;
    if (!dev_buf_begin(x, b, size, &st))
        return st;
    if (size > x->d->info.max_mem_alloc_size) {
        x->failed = true;
        return job_fail(x->job, STATUS_RESOURCE_EXHAUSTED,
                        "%s needs %zu bytes, over device %u's max_mem_alloc_size %llu", what,
                        size, x->d->info.index,
                        (unsigned long long)x->d->info.max_mem_alloc_size);
    }
    cl_int rc;
    b->mem = clCreateBuffer(x->d->ctx, CL_MEM_READ_WRITE, size, NULL, &rc);
    if (rc != CL_SUCCESS) {
        b->mem = NULL;
        return dev_exec_cl_fail(x, what, rc);
    }
    return STATUS_OK;
}

enum status_code dev_buf_wrap(struct dev_exec *x, struct dev_buf *b, void *host, size_t size,
                              const char *what)
{
    enum status_code st;
    if (!dev_buf_begin(x, b, size, &st))
        return st;
    cl_int rc;
    b->mem = clCreateBuffer(x->d->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size, host, &rc);
    if (rc != CL_SUCCESS) {
        b->mem = NULL;
        return dev_exec_cl_fail(x, what, rc);
    }
    return STATUS_OK;
}

void dev_buf_release(struct dev_buf *b)
{
    hazard_buf_clear(&dev_hazard_ops, &b->hz);
    if (b->mem)
        clReleaseMemObject(b->mem);
    b->mem = NULL;
}

/* The common tail of every command: hazards, bookkeeping, flush. */
struct dev_cmd {
    struct hazard_access acc[DEV_CMD_MAX_ACCESS];
    size_t nacc;
    cl_event waits[HAZARD_MAX_WAITS(DEV_CMD_MAX_ACCESS)];
    cl_uint nwaits;
    enum dev_queue q;
};

/* Starts a command of `work` bytes or work-items on queue q: its waits,
 * from the hazards of the buffers it touches. False when it is not to be
 * enqueued, *st then saying why: the run failed before (its status),
 * there is nothing to do (STATUS_OK), or it touches more buffers than a
 * dev_cmd tracks, which fails the run: dropping one would drop its hazards,
 * and commands would race. No op_*.c launch comes near that limit; this
 * names the bug if one ever does. */
static bool dev_cmd_begin(struct dev_exec *x, struct dev_cmd *c, enum dev_queue q,
                          const struct dev_access *acc, size_t nacc, size_t work,
                          enum status_code *st)
{
    *st = x->failed ? x->job->status : STATUS_OK;
    if (x->failed || work == 0)
        return false;
    if (nacc > DEV_CMD_MAX_ACCESS) {
        x->failed = true;
        *st = job_fail(x->job, STATUS_INTERNAL,
                       "a device command touching %zu buffers (at most %d are tracked)", nacc,
                       DEV_CMD_MAX_ACCESS);
        return false;
    }
    void *w[HAZARD_MAX_WAITS(DEV_CMD_MAX_ACCESS)];
    c->q = q;
    c->nacc = 0;
    for (size_t i = 0; i < nacc; i++)
        if (acc[i].buf->mem)
            c->acc[c->nacc++] = (struct hazard_access){&acc[i].buf->hz, acc[i].mode};
    c->nwaits = (cl_uint)hazard_waits(c->acc, c->nacc, q, w);
    for (cl_uint i = 0; i < c->nwaits; i++)
        c->waits[i] = (cl_event)w[i];
    return true;
}

static enum status_code dev_cmd_done(struct dev_exec *x, struct dev_cmd *c, cl_int rc,
                                     cl_event ev, const char *what)
{
    if (rc != CL_SUCCESS)
        return dev_exec_cl_fail(x, what, rc);
    hazard_commit(&dev_hazard_ops, c->acc, c->nacc, c->q, ev);
    clFlush(x->d->q[c->q]);
    if (dev_exec_keep(x, ev) < 0)
        return dev_exec_fail_oom(x);
    return STATUS_OK;
}

#define DEV_WAITS(c) (c).nwaits, ((c).nwaits ? (c).waits : NULL)

/* A copy between host memory and b: in (DEV_Q_IN) writes b, out
 * (DEV_Q_OUT) reads it. One of pageable memory on a GPU returns only once
 * done (779c45e: a kernel behind a pending one deadlocked NVIDIA's
 * driver), so it holds the runner's thread; it goes in steps with the
 * runner's yield between them, when nothing of it is pending. Only the
 * first step waits for the command's hazards: the queue is in order. */
static enum status_code dev_exec_copy(struct dev_exec *x, struct dev_buf *b, size_t off,
                                      void *host, size_t len, enum dev_queue q,
                                      enum dev_host where)
{
    bool in = q == DEV_Q_IN;
    const char *what = in ? "copying input to the device" : "copying a result from the device";
    struct dev *d = x->d;
    struct dev_cmd c;
    enum status_code st;
    if (!dev_cmd_begin(x, &c, q, &(struct dev_access){b, in ? HAZARD_WRITE : HAZARD_READ}, 1,
                       len, &st))
        return st;
    cl_bool hold = where == DEV_HOST_PAGEABLE && d->pageable_holds;
    size_t step = hold ? d->pageable_step : len;
    cl_event ev = NULL;
    for (size_t done = 0; done < len; done += step) {
        size_t n = len - done < step ? len - done : step;
        if (done) {
            clReleaseEvent(ev);   /* that step is done: it held us */
            ev = NULL;
            if (d->yield)
                d->yield->fn(d->yield->arg);
        }
        cl_uint nwaits = done ? 0 : c.nwaits;
        const cl_event *waits = nwaits ? c.waits : NULL;
        uint8_t *at = (uint8_t *)host + done;
        cl_int rc = in ? clEnqueueWriteBuffer(d->q[q], b->mem, hold, off + done, n, at, nwaits,
                                              waits, &ev)
                       : clEnqueueReadBuffer(d->q[q], b->mem, hold, off + done, n, at, nwaits,
                                             waits, &ev);
        if (rc != CL_SUCCESS)
            return dev_cmd_done(x, &c, rc, NULL, what);
    }
    return dev_cmd_done(x, &c, CL_SUCCESS, ev, what);
}

enum status_code dev_exec_write(struct dev_exec *x, struct dev_buf *b, const void *host,
                                size_t len, enum dev_host where)
{
    return dev_exec_write_at(x, b, 0, host, len, where);
}

/* clEnqueueWriteBuffer only reads host: the cast drops a const it keeps. */
enum status_code dev_exec_write_at(struct dev_exec *x, struct dev_buf *b, size_t off,
                                   const void *host, size_t len, enum dev_host where)
{
    return dev_exec_copy(x, b, off, (void *)(uintptr_t)host, len, DEV_Q_IN, where);
}

enum status_code dev_exec_read(struct dev_exec *x, struct dev_buf *b, void *host, size_t off,
                               size_t len, enum dev_host where)
{
    return dev_exec_copy(x, b, off, host, len, DEV_Q_OUT, where);
}

enum status_code dev_exec_fill(struct dev_exec *x, struct dev_buf *b, const void *pattern,
                               size_t pattern_size, size_t off, size_t len)
{
    struct dev_cmd c;
    enum status_code st;
    if (!dev_cmd_begin(x, &c, DEV_Q_KERNEL, &(struct dev_access){b, HAZARD_WRITE}, 1, len, &st))
        return st;
    cl_event ev = NULL;
    cl_int rc = clEnqueueFillBuffer(x->d->q[DEV_Q_KERNEL], b->mem, pattern, pattern_size, off,
                                    len, DEV_WAITS(c), &ev);
    return dev_cmd_done(x, &c, rc, ev, "clearing a device buffer");
}

enum status_code dev_exec_kernel(struct dev_exec *x, cl_kernel k, const char *name,
                                 size_t global, size_t local, const struct dev_access *acc,
                                 size_t nacc)
{
    struct dev_cmd c;
    enum status_code st;
    if (!dev_cmd_begin(x, &c, DEV_Q_KERNEL, acc, nacc, global, &st))
        return st;
    cl_event ev = NULL;
    cl_int rc = x->d->launch_fault
                    ? x->d->launch_fault
                    : clEnqueueNDRangeKernel(x->d->q[DEV_Q_KERNEL], k, 1, NULL, &global,
                                             local ? &local : NULL, DEV_WAITS(c), &ev);
    char what[96];
    snprintf(what, sizeof what, "launching kernel %s", name);
    return dev_cmd_done(x, &c, rc, ev, what);
}

enum status_code dev_exec_arg(struct dev_exec *x, cl_kernel k, const char *name, cl_uint i,
                              size_t size, const void *value)
{
    if (x->failed)
        return x->job->status;
    cl_int rc = clSetKernelArg(k, i, size, value);
    if (rc == CL_SUCCESS)
        return STATUS_OK;
    char what[96];
    snprintf(what, sizeof what, "setting argument %u of kernel %s", (unsigned)i, name);
    return dev_exec_cl_fail(x, what, rc);
}
