/* SPDX-License-Identifier: MIT */
/* dev_piece.c: a unary or region job larger than a piece, run one piece at
 * a time (dev_task_step, dev_run).
 *
 * A piece is bounded device work: at most d->chunk_bytes (--chunk-bytes,
 * the streams' chunk) copied in, run through the kernels or copied out, so
 * the runner can start another client's task between two pieces of a
 * 32 MiB job, as it can between two chunks of a stream. The job keeps its
 * device state here between pieces, the way dev_stream.c keeps a stream's,
 * in the same two shapes:
 *
 * chunked (transforms and histograms only): each piece copies one chunk of
 * the input into a ring buffer, runs every step on it in place (histograms
 * add into device-resident counts) and copies each transform's bytes out
 * to that step's result; device memory stays a few chunks.
 *
 * resident (a reverse or fill step): the input is copied in a chunk per
 * piece; then each step runs as kernel launches over one chunk's range of
 * the data each (a reverse over a range of output words, a fill over a
 * range of elements, a transform over a range of its sub-range, a
 * histogram over a range of its input), and a data step's result is copied
 * out a chunk per piece before the next step runs.
 *
 * Pieces of one job go through their own dev_exec each; the hazard state of
 * the long-lived buffers orders them (a ring slot's next copy in after its
 * last copy out, a step's kernels after the previous step's), so several
 * pieces may be in flight at once. A failed piece fails the job; the next
 * piece sees it and ends the job, as does a job whose call ended.
 */
#include "dev_task.h"

#include <stdlib.h>
#include <string.h>

#include "dev_internal.h"
#include "op.h"
#include "sat.h"

/* A GPU copies pageable memory before the enqueue returns (dev_host in
 * dev_internal.h), so the runner waits out each such copy, and every task
 * queued behind it with it: a job whose input or results lie in pageable
 * memory (a unary request read whole, malloc'd results) runs in pieces of
 * a quarter chunk, 1 MiB by default, which NVIDIA's driver copies in
 * ~150 us at its 7 GB/s from pageable memory, rather than 4 MiB. */
#define DEV_PIECE_PAGEABLE_DIV 4

/* Ring buffers of a chunked job: one chunk being copied in, one in the
 * kernels, one being copied out, and a spare so a copy in never waits
 * (dev_stream.c's DEV_STREAM_RING, for the same reason). */
#define DEV_PIECE_RING 4

enum dev_piece_phase {
    DEV_PIECE_IN,       /* the input, a chunk per piece (chunked: through every step) */
    DEV_PIECE_KERNEL,   /* resident: step `step`'s launches, a chunk's range per piece */
    DEV_PIECE_OUT,      /* resident: step `step`'s result, a chunk per piece */
    DEV_PIECE_DONE,
};

/* Where the next piece starts. */
struct dev_piece_at {
    enum dev_piece_phase phase;
    size_t step;
    uint64_t off;       /* bytes of the phase's span done */
};

struct dev_piece {
    struct dev_piece_at at;
    bool resident;
    size_t chunk;                        /* bytes per piece */
    enum dev_host in_host, out_host;
    size_t *out_len;                     /* nsteps: bytes flowing out of each step */
    uint64_t **slots;                    /* nsteps: histogram steps' host counts */
    struct op_hist_acc *accs;            /* nsteps: histogram steps' device counts */
    struct dev_buf ring[DEV_PIECE_RING]; /* chunked */
    struct dev_buf cur;                  /* resident: the data the next step reads */
    struct dev_buf next;                 /* resident: a reverse's or fill's output */
};

static bool dev_piece_is_resident(const struct job *job)
{
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_REVERSE || job->steps[i].kind == STEP_FILL)
            return true;
    return false;
}

bool dev_piece_wanted(const struct dev *d, const struct job *job)
{
    uint64_t len = job->in_len, most = len;
    for (size_t i = 0; i < job->nsteps; i++) {
        len = job_step_output_len(&job->steps[i], len);
        if (len > most)
            most = len;
    }
    return job->nsteps && most > d->chunk_bytes;
}

/* The bytes step i reads (its input) as the previous steps leave them. */
static uint64_t dev_piece_step_in(const struct job *job, const size_t *out_len, size_t i)
{
    return i == 0 ? job->in_len : out_len[i - 1];
}

uint64_t dev_piece_step_span(const struct step *s, uint64_t in_len, uint64_t *base)
{
    *base = 0;
    if (s->kind == STEP_FILL)
        return job_step_output_len(s, in_len);
    if (s->kind == STEP_TRANSFORM) {
        *base = s->u.transform.offset;
        return s->u.transform.length;
    }
    return in_len;
}

/* Step i's span in job (dev_piece_step_span). */
static uint64_t dev_piece_span(const struct job *job, const size_t *out_len, size_t i,
                               uint64_t *base)
{
    return dev_piece_step_span(&job->steps[i], dev_piece_step_in(job, out_len, i), base);
}

static bool dev_piece_has_data(const struct step *s)
{
    return s->kind != STEP_HISTOGRAM;
}

/* Whether any step's data result is copied back to the host (a job of
 * histograms only copies nothing out but its counts). */
static bool dev_piece_copies_out(const struct job *job)
{
    for (size_t i = 0; i < job->nsteps; i++)
        if (dev_piece_has_data(&job->steps[i]))
            return true;
    return false;
}

/* The first piece of a resident job: its input, or step 0 when it reads
 * none (a fill, or an empty input). */
static struct dev_piece_at dev_piece_first(const struct job *job, bool resident)
{
    if (resident && (job->in_len == 0 || job->steps[0].kind == STEP_FILL))
        return (struct dev_piece_at){DEV_PIECE_KERNEL, 0, 0};
    return (struct dev_piece_at){DEV_PIECE_IN, 0, 0};
}

/* The phase after the one at `at` (an empty phase is one empty piece,
 * which enqueues nothing). */
static void dev_piece_advance(const struct job *job, bool resident, struct dev_piece_at *at)
{
    at->off = 0;
    if (!resident) {
        at->phase = DEV_PIECE_DONE;   /* every chunk went through every step */
    } else if (at->phase == DEV_PIECE_IN) {
        at->phase = DEV_PIECE_KERNEL;
        at->step = 0;
    } else if (at->phase == DEV_PIECE_KERNEL && dev_piece_has_data(&job->steps[at->step])) {
        at->phase = DEV_PIECE_OUT;
    } else {
        at->step++;
        at->phase = at->step < job->nsteps ? DEV_PIECE_KERNEL : DEV_PIECE_DONE;
    }
}

/* The bytes the phase at `at` covers in all. */
static uint64_t dev_piece_phase_span(const struct job *job, const size_t *out_len,
                                     const struct dev_piece_at *at)
{
    uint64_t base;
    switch (at->phase) {
    case DEV_PIECE_IN: return job->in_len;
    case DEV_PIECE_KERNEL: return dev_piece_span(job, out_len, at->step, &base);
    case DEV_PIECE_OUT: return out_len[at->step];
    default: return 0;
    }
}

/* --- cost ----------------------------------------------------------------- */

/* A piece's cost (dev_task_cost): each byte copied counts once, each
 * byte a kernel touches once per access; a transform (in place) and a
 * reverse read and write theirs. */
#define DEV_PIECE_RW 2

/* Bytes a piece at `at` of len bytes moves and its kernels touch. */
static uint64_t dev_piece_bytes_at(const struct job *job, bool resident,
                                   const struct dev_piece_at *at, uint64_t len)
{
    if (at->phase == DEV_PIECE_DONE)
        return 0;
    if (at->phase == DEV_PIECE_OUT || (resident && at->phase == DEV_PIECE_IN))
        return len;
    if (at->phase == DEV_PIECE_KERNEL) {
        enum step_kind k = job->steps[at->step].kind;
        return k == STEP_REVERSE || k == STEP_TRANSFORM ? sat_mul_u64(len, DEV_PIECE_RW) : len;
    }
    /* A chunk through every step: in, each step's kernel, each transform's
     * copy out. */
    uint64_t total = len;
    for (size_t i = 0; i < job->nsteps; i++)
        total = sat_add_u64(total, job->steps[i].kind == STEP_TRANSFORM
                                       ? sat_mul_u64(len, DEV_PIECE_RW + 1) : len);
    return total;
}

uint64_t dev_piece_cost_full(const struct dev *d)
{
    /* In, transformed in place, out: dev_piece_bytes_at's chunk of one
     * transform. */
    return sat_mul_u64(d->chunk_bytes, 1 + DEV_PIECE_RW + 1);
}

uint64_t dev_piece_memory(const struct dev *d, const struct job *job)
{
    if (dev_piece_is_resident(job))
        return dev_job_memory(job);   /* its steps' buffers, as a whole job's */
    return sat_add_u64(DEV_PIECE_RING * (uint64_t)d->chunk_bytes, op_hist_job_bytes(job));
}

uint64_t dev_piece_cost(const struct dev *d, const struct job *job)
{
    const struct dev_piece *pc = job->piece;
    size_t chunk = d->chunk_bytes;
    if (pc)
        chunk = pc->chunk;
    struct dev_piece_at at;
    uint64_t span;
    bool resident;
    if (pc) {
        at = pc->at;
        resident = pc->resident;
        span = at.phase == DEV_PIECE_DONE ? 0 : dev_piece_phase_span(job, pc->out_len, &at);
    } else {
        /* Not begun: its first piece, whose span needs no step's output. */
        resident = dev_piece_is_resident(job);
        at = dev_piece_first(job, resident);
        span = at.phase == DEV_PIECE_IN ? job->in_len
                                        : job_step_output_len(&job->steps[0], job->in_len);
    }
    uint64_t left = span > at.off ? span - at.off : 0;
    return dev_piece_bytes_at(job, resident, &at, left < chunk ? left : chunk);
}

/* --- begin and end ---------------------------------------------------------- */

static enum status_code dev_piece_oom(struct dev_exec *x)
{
    x->failed = true;
    return job_fail(x->job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
}

/* Checks the steps and sets up the job's device side and results; the
 * first piece's commands follow in the same dev_exec. */
static enum status_code dev_piece_begin(struct dev_exec *x)
{
    struct dev *d = x->d;
    struct job *job = x->job;
    dev_name_job(&d->info, job);
    enum status_code st = job_run_begin(job);
    if (st != STATUS_OK)
        return st;
    struct dev_piece *pc = calloc(1, sizeof(*pc));
    if (!pc)
        return dev_piece_oom(x);
    job->piece = pc;
    pc->out_len = calloc(job->nsteps, sizeof(*pc->out_len));
    pc->slots = calloc(job->nsteps, sizeof(*pc->slots));
    pc->accs = calloc(job->nsteps, sizeof(*pc->accs));
    if (!pc->out_len || !pc->slots || !pc->accs)
        return dev_piece_oom(x);
    pc->resident = dev_piece_is_resident(job);
    pc->chunk = d->chunk_bytes;
    pc->at = dev_piece_first(job, pc->resident);
    if (dev_check_steps(d, job, job->in_len, pc->out_len) != STATUS_OK) {
        x->failed = true;
        return job->status;
    }
    dev_job_regions(d, job);
    pc->in_host = dev_job_in_host(d, job);
    pc->out_host = dev_job_out_host(d, job);
    if (d->info.type == DEV_GPU && (pc->in_host == DEV_HOST_PAGEABLE ||
                                    (dev_piece_copies_out(job) && pc->out_host == DEV_HOST_PAGEABLE))) {
        size_t small = pc->chunk / DEV_PIECE_PAGEABLE_DIV / KERNEL_WORD * KERNEL_WORD;
        pc->chunk = small ? small : KERNEL_WORD;
    }
    /* Results in step order, as dev_run lays them out in an output region. */
    for (size_t i = 0; i < job->nsteps && st == STATUS_OK; i++) {
        const struct step *s = &job->steps[i];
        if (dev_piece_has_data(s)) {
            st = job_result_alloc(job, &job->results[i], pc->out_len[i]);
            continue;
        }
        pc->slots[i] = calloc(OP_HIST_SLOTS(s->u.hist.bins), sizeof(uint64_t));
        if (!pc->slots[i])
            return dev_piece_oom(x);
        if (!pc->resident)   /* resident: at the step's first piece */
            st = op_hist_begin(x, &s->u.hist, &pc->accs[i]);
    }
    if (st != STATUS_OK) {
        x->failed = true;
        return st;
    }
    if (!pc->resident) {
        for (size_t i = 0; i < DEV_PIECE_RING && st == STATUS_OK; i++)
            st = dev_buf_create(x, &pc->ring[i], pc->chunk, "a piece buffer");
    } else if (pc->at.phase == DEV_PIECE_IN) {
        st = dev_buf_create(x, &pc->cur, job->in_len, "the job's input");
    }
    return st;
}

/* Frees the job's device side (OpenCL keeps buffers alive until the
 * commands already enqueued on them have run). */
static void dev_piece_free(struct job *job)
{
    struct dev_piece *pc = job->piece;
    if (!pc)
        return;
    for (size_t i = 0; i < DEV_PIECE_RING; i++)
        dev_buf_release(&pc->ring[i]);
    dev_buf_release(&pc->cur);
    dev_buf_release(&pc->next);
    for (size_t i = 0; i < job->nsteps; i++) {
        if (pc->accs)
            op_hist_acc_release(&pc->accs[i]);
        if (pc->slots)
            free(pc->slots[i]);
    }
    free(pc->accs);
    free(pc->slots);
    free(pc->out_len);
    free(pc);
    job->piece = NULL;
}

void dev_piece_end(struct job *job)
{
    struct dev_piece *pc = job->piece;
    for (size_t i = 0; pc && i < job->nsteps && job->status == STATUS_OK; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            op_hist_result(&job->steps[i].u.hist, pc->slots[i], &job->results[i].hist, job);
    if (job->status != STATUS_OK && job->results)
        job_drop_results(job);   /* no partial results on failure */
    dev_piece_free(job);
}

/* --- one piece ---------------------------------------------------------------- */

/* Chunked: the chunk at off through every step. */
static enum status_code dev_piece_chunk(struct dev_exec *x, struct dev_piece *pc, uint64_t off,
                                        size_t len)
{
    struct job *job = x->job;
    struct dev_buf *b = &pc->ring[(off / pc->chunk) % DEV_PIECE_RING];
    enum status_code st = dev_exec_write_at(x, b, 0, job->in + off, len, pc->in_host);
    for (size_t i = 0; i < job->nsteps && st == STATUS_OK; i++) {
        const struct step *s = &job->steps[i];
        struct transform_params clip;
        if (s->kind == STEP_HISTOGRAM) {
            st = op_hist_add(x, &s->u.hist, b, len, &pc->accs[i]);
            continue;
        }
        if (job_transform_clip(&s->u.transform, off, len, &clip))
            st = op_transform(x, &clip, b, b);
        if (st == STATUS_OK)
            st = dev_exec_read(x, b, job->results[i].data + off, 0, len, pc->out_host);
    }
    return st;
}

enum status_code dev_piece_launch(struct dev_exec *x, const struct step *s, struct dev_buf *cur,
                                  struct dev_buf *next, struct op_hist_acc *acc, uint64_t *slots,
                                  size_t out_len, uint64_t off, size_t len)
{
    uint64_t base;
    uint64_t span = dev_piece_step_span(s, cur->size, &base);
    enum status_code st = STATUS_OK;
    bool makes = s->kind == STEP_REVERSE || s->kind == STEP_FILL;
    if (off == 0 && makes)
        st = dev_buf_create(x, next, out_len, "a step's output buffer");
    else if (off == 0 && s->kind == STEP_HISTOGRAM)
        st = op_hist_begin(x, &s->u.hist, acc);
    if (st != STATUS_OK || len == 0) {
        /* nothing to launch */
    } else if (s->kind == STEP_REVERSE) {
        /* The last range runs to the end: the bytes past the last whole
         * word are written by the range at word 0. */
        uint64_t end = off + len == span ? span / KERNEL_WORD + 1
                                         : (off + len) / KERNEL_WORD;
        st = op_reverse_range(x, cur, next, off / KERNEL_WORD, end);
    } else if (s->kind == STEP_FILL) {
        size_t esize = elem_size(s->u.fill.type);
        st = op_fill_range(x, &s->u.fill, next, off / esize, (off + len) / esize);
    } else if (s->kind == STEP_TRANSFORM) {
        struct transform_params p = s->u.transform;
        p.offset = base + off;
        p.length = len;
        /* In place: the previous result's copy out is ordered before it. */
        st = op_transform(x, &p, cur, cur);
    } else {
        st = op_hist_add_range(x, &s->u.hist, cur, (size_t)off, len, acc);
    }
    if (st != STATUS_OK || off + len < span)
        return st;
    if (s->kind == STEP_HISTOGRAM)
        return op_hist_end(x, acc, slots);
    if (makes) {
        dev_buf_release(cur);   /* once the launches reading it have run */
        *cur = *next;
        memset(next, 0, sizeof(*next));
    }
    return st;
}

/* Resident: step i's launches over one chunk's range. */
static enum status_code dev_piece_kernel(struct dev_exec *x, struct dev_piece *pc, size_t i,
                                         uint64_t off, size_t len)
{
    return dev_piece_launch(x, &x->job->steps[i], &pc->cur, &pc->next, &pc->accs[i],
                            pc->slots[i], pc->out_len[i], off, len);
}

/* Chunked: the histograms' counts once the last chunk is in. */
static enum status_code dev_piece_chunked_end(struct dev_exec *x, struct dev_piece *pc)
{
    struct job *job = x->job;
    enum status_code st = STATUS_OK;
    for (size_t i = 0; i < job->nsteps && st == STATUS_OK; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            st = op_hist_end(x, &pc->accs[i], pc->slots[i]);
    return st;
}

/* Enqueues the piece at pc->at and moves pc->at past it. */
static enum status_code dev_piece_one(struct dev_exec *x, struct dev_piece *pc)
{
    struct job *job = x->job;
    struct dev_piece_at *at = &pc->at;
    uint64_t span = dev_piece_phase_span(job, pc->out_len, at);
    uint64_t left = span - at->off;
    size_t len = (size_t)(left < pc->chunk ? left : pc->chunk);
    enum status_code st = STATUS_OK;
    switch (at->phase) {
    case DEV_PIECE_IN:
        if (!pc->resident)
            st = dev_piece_chunk(x, pc, at->off, len);
        else
            st = dev_exec_write_at(x, &pc->cur, (size_t)at->off, job->in + at->off, len,
                                   pc->in_host);
        break;
    case DEV_PIECE_KERNEL:
        st = dev_piece_kernel(x, pc, at->step, at->off, len);
        break;
    case DEV_PIECE_OUT:
        st = dev_exec_read(x, &pc->cur, job->results[at->step].data + at->off,
                           (size_t)at->off, len, pc->out_host);
        break;
    default:
        break;
    }
    at->off += len;
    if (st != STATUS_OK || at->off < span)
        return st;
    if (!pc->resident)
        st = dev_piece_chunked_end(x, pc);
    dev_piece_advance(job, pc->resident, at);
    return st;
}

struct dev_exec *dev_piece_step(struct dev *d, struct job *job, bool *more)
{
    *more = false;
    struct dev_exec *x = malloc(sizeof(*x));
    if (!x) {
        job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
        return NULL;
    }
    dev_exec_init(x, d, job);
    if (!job->piece) {
        if (dev_piece_begin(x) != STATUS_OK)
            return x;
    } else if (job->status != STATUS_OK) {
        x->failed = true;   /* an earlier piece failed: the job ends here */
        return x;
    }
    struct dev_piece *pc = job->piece;
    if (dev_piece_one(x, pc) == STATUS_OK)
        *more = pc->at.phase != DEV_PIECE_DONE;
    return x;
}

enum status_code dev_piece_finish(struct dev_exec *x)
{
    enum status_code st = dev_exec_wait(x);
    free(x);
    return st;
}
