/* SPDX-License-Identifier: MIT */
/* test_kernel_pieces.c: unary jobs larger than a piece run piece by piece
 * (dev_task_step, dev_piece.c) with a small piece, so that every step kind
 * and pipelines of them cross many piece edges: reverses (odd lengths, the
 * edge words), transforms over sub-ranges, histograms of bytes and floats,
 * fills of every type, results written over the input, on the CPU kernels
 * and on the GPU ones. Every result is compared with host_step.c's. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "dev_task.h"
#include "host_step.h"

/* Small enough that a job of a few hundred KiB is many pieces; a multiple
 * of 16 (as --chunk-bytes must be) but not of a kernel's tile. */
#define PIECE_BYTES 4112

static struct transform_params xform(enum transform_op op, uint8_t v, uint64_t off,
                                     uint64_t len)
{
    struct transform_params p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.value = v;
    p.offset = off;
    p.length = len;
    for (int i = 0; i < 256; i++)
        p.table[i] = (uint8_t)(i * 7 + 3);
    return p;
}

static struct step step_reverse(void)
{
    return (struct step){.kind = STEP_REVERSE};
}

static struct step step_xform(struct transform_params p)
{
    struct step s = {.kind = STEP_TRANSFORM};
    s.u.transform = p;
    return s;
}

static struct step step_hist(struct hist_params p)
{
    struct step s = {.kind = STEP_HISTOGRAM};
    s.u.hist = p;
    return s;
}

static struct step step_fill(struct fill_params p)
{
    struct step s = {.kind = STEP_FILL};
    s.u.fill = p;
    return s;
}

static const struct hist_params HIST_BYTES = {.type = ELEM_U8, .bins = 256};
static const struct hist_params HIST_F32 = {.type = ELEM_F32, .bins = 37, .lo = -1e30,
                                            .hi = 1e30, .clamp = true};

/* Runs job as the runner does, a piece at a time; returns how many. */
static size_t run_in_pieces(struct dev *d, struct job *job)
{
    struct task t = {.kind = TASK_JOB, .job = job};
    size_t pieces = 0;
    for (bool more = true; more; pieces++) {
        struct dev_exec *x = dev_task_step(d, &t, &more);
        dev_task_finish(d, &t, x, !more);
    }
    ck_assert_int_eq(t.status, job->status);
    return pieces;
}

/* Each step's result as host_step.c computes it, checked against job's. */
static void expect_reference(struct job *job, const uint8_t *in, size_t n, const char *what)
{
    ck_assert_msg(job->status == STATUS_OK, "%s: %s", what, job->msg);
    uint8_t *cur = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(cur);
    memcpy(cur, in, n);
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *s = &job->steps[i];
        const struct step_result *r = &job->results[i];
        if (s->kind == STEP_HISTOGRAM) {
            struct hist_result want;
            ck_assert_int_eq(host_step_hist(&s->u.hist, cur, n, &want), 0);
            ck_assert_uint_eq(r->hist.bins, want.bins);
            ck_assert_msg(memcmp(r->hist.counts, want.counts,
                                 want.bins * sizeof(uint64_t)) == 0,
                          "%s: steps[%zu] counts differ", what, i);
            ck_assert_uint_eq(r->hist.below, want.below);
            ck_assert_uint_eq(r->hist.above, want.above);
            ck_assert_uint_eq(r->hist.nan, want.nan);
            free(want.counts);
            continue;
        }
        size_t out_len = (size_t)job_step_output_len(s, n);
        uint8_t *next = malloc(out_len ? out_len : 1);
        ck_assert_ptr_nonnull(next);
        if (s->kind == STEP_REVERSE)
            host_step_reverse(cur, next, n);
        else if (s->kind == STEP_FILL)
            host_step_fill(&s->u.fill, next);
        else {
            memcpy(next, cur, n);
            host_step_transform(&s->u.transform, next, n);
        }
        free(cur);
        cur = next;
        n = out_len;
        ck_assert_uint_eq(r->len, n);
        fixture_expect_bytes(r->data, cur, n, what);
    }
    free(cur);
}

/* job of the given steps over in[0, n), run in pieces on d; checked. */
static void check_job(struct dev *d, const struct step *steps, size_t nsteps, const uint8_t *in,
                      size_t n, bool in_place, const char *what)
{
    struct job *job = fixture_job(nsteps, in, n);
    memcpy(job->steps, steps, nsteps * sizeof(*steps));
    if (in_place)
        job_output_in_place(job);
    ck_assert_msg(dev_piece_wanted(d, job), "%s: not larger than a piece", what);
    size_t pieces = run_in_pieces(d, job);
    /* At least one piece per chunk of the largest data. */
    uint64_t len = n, most = n;
    for (size_t i = 0; i < nsteps; i++) {
        len = job_step_output_len(&steps[i], len);
        most = len > most ? len : most;
    }
    ck_assert_msg(pieces >= (most + PIECE_BYTES - 1) / PIECE_BYTES,
                  "%s: %zu pieces for %llu bytes (%s)", what, pieces, (unsigned long long)most,
                  job->msg);
    expect_reference(job, in, n, what);
    job_free(job);
}

/* Every step kind and pipelines of them, on d's current kernels. */
static void check_all(struct dev *d)
{
    size_t n = 40 * PIECE_BYTES + 13;   /* odd: reverse's edge words */
    uint8_t *in = malloc(n);
    fixture_random(in, n, 11);
    const struct fill_params fu32 = {.type = ELEM_U32, .count = 9 * PIECE_BYTES + 5,
                                     .start = 7, .step = 3};
    const struct fill_params fi64 = {.type = ELEM_I64, .count = 5 * PIECE_BYTES + 1,
                                     .start = -5, .step = 1000003};
    const struct fill_params ff32 = {.type = ELEM_F32, .count = 6 * PIECE_BYTES + 3,
                                     .start_f = -3.0f, .step_f = 0.25f};
    struct transform_params sub = xform(XFORM_ADD, 77, 3 * PIECE_BYTES + 5, 20 * PIECE_BYTES);
    struct transform_params map = xform(XFORM_MAP, 0, 1, n - 2);
    struct transform_params xr = xform(XFORM_XOR, 0x5a, 0, n);

    const struct step reverse[] = {step_reverse()};
    check_job(d, reverse, 1, in, n, false, "reverse");
    check_job(d, reverse, 1, in, n, true, "reverse in place");
    check_job(d, reverse, 1, in, n - 13, false, "reverse of whole words");
    const struct step transform[] = {step_xform(sub)};
    check_job(d, transform, 1, in, n, false, "transform of a sub-range");
    check_job(d, transform, 1, in, n, true, "transform in place");
    const struct step hist[] = {step_hist(HIST_BYTES)};
    check_job(d, hist, 1, in, n, false, "byte histogram");
    const struct step histf[] = {step_hist(HIST_F32)};
    check_job(d, histf, 1, in, n - 13, false, "float histogram");
    const struct step fills[] = {step_fill(fu32)};
    check_job(d, fills, 1, in, 16, false, "uint32 fill");
    const struct step filli[] = {step_fill(fi64)};
    check_job(d, filli, 1, in, 16, false, "int64 fill");
    const struct step fillf[] = {step_fill(ff32)};
    check_job(d, fillf, 1, in, 16, false, "float fill");

    /* Chunked: transforms and histograms only, several data results. */
    const struct step chunked[] = {step_hist(HIST_BYTES), step_xform(map), step_hist(HIST_BYTES),
                                   step_xform(sub), step_xform(xr)};
    check_job(d, chunked, 5, in, n, false, "histograms around transforms");
    /* Resident: a reverse or a fill among them. */
    const struct step resident[] = {step_xform(sub), step_reverse(), step_hist(HIST_BYTES),
                                    step_xform(map), step_reverse()};
    check_job(d, resident, 5, in, n, false, "transform, reverse, histogram, map, reverse");
    struct transform_params xf = xform(XFORM_XOR, 0x5a, 5, fu32.count * 4 - 9);
    const struct step filled[] = {step_fill(fu32), step_reverse(), step_hist(HIST_BYTES),
                                  step_xform(xf)};
    check_job(d, filled, 4, in, 16, false, "fill, reverse, histogram, transform");
    const struct step floats[] = {step_fill(ff32), step_hist(HIST_F32), step_reverse()};
    check_job(d, floats, 3, in, 16, false, "fill, float histogram, reverse");
    free(in);
}

START_TEST(every_step_in_pieces_cpu_kernels)
{
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    dev_set_shape_for_test(d, DEV_SHAPE_CPU);
    dev_set_chunk_bytes_for_test(d, PIECE_BYTES);
    check_all(d);
    dev_set_chunk_bytes_for_test(d, 0);
    dev_set_shape_for_test(d, own);
}
END_TEST

START_TEST(every_step_in_pieces_gpu_kernels)
{
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    dev_set_shape_for_test(d, DEV_SHAPE_GPU);
    dev_set_chunk_bytes_for_test(d, PIECE_BYTES);
    check_all(d);
    /* The other GPU reverse and transform kernels take ranges too. */
    struct dev_variants v = DEV_VARIANTS_SERVING;
    v.reverse = DEV_VARIANT_V1;
    v.transform = DEV_VARIANT_V1;
    struct dev_variants was = fixture_variants(v);
    check_all(d);
    fixture_variants(was);
    dev_set_chunk_bytes_for_test(d, 0);
    dev_set_shape_for_test(d, own);
}
END_TEST

/* A failing piece fails the job without partial results; a cancelled job
 * stops at its next piece. */
START_TEST(failure_and_cancel_between_pieces)
{
    struct dev *d = fixture_dev();
    dev_set_chunk_bytes_for_test(d, PIECE_BYTES);
    size_t n = 30 * PIECE_BYTES;
    uint8_t *in = malloc(n);
    fixture_random(in, n, 5);

    struct job *job = fixture_job(2, in, n);
    job->steps[0] = step_reverse();
    job->steps[1] = step_xform(xform(XFORM_XOR, 1, 0, n));
    struct task t = {.kind = TASK_JOB, .job = job};
    bool more;
    struct dev_exec *x = dev_task_step(d, &t, &more);
    ck_assert(more);
    dev_task_finish(d, &t, x, false);
    ck_assert_ptr_nonnull(job->piece);
    atomic_store(&job->cancelled, true);
    x = dev_task_step(d, &t, &more);
    ck_assert_ptr_null(x);
    ck_assert(!more);
    dev_task_finish(d, &t, x, true);
    ck_assert_int_eq(t.status, STATUS_CANCELLED);
    ck_assert_ptr_null(job->piece);            /* its device side is gone */
    ck_assert_ptr_null(job->results[0].data);  /* and no partial results */
    job_free(job);

    /* The same job runs to the end in `whole` pieces (their size is the
     * device's: a GPU copying pageable memory takes smaller ones). */
    job = fixture_job(1, in, n);
    job->steps[0] = step_reverse();
    size_t whole = run_in_pieces(d, job);
    ck_assert_int_eq(job->status, STATUS_OK);
    job_free(job);
    dev_set_launch_fault_for_test(d, CL_OUT_OF_RESOURCES);
    job = fixture_job(1, in, n);
    job->steps[0] = step_reverse();
    size_t pieces = run_in_pieces(d, job);
    ck_assert_int_eq(job->status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_uint_lt(pieces, whole);   /* it stopped at its first launch */
    ck_assert_ptr_null(job->results[0].data);
    ck_assert_ptr_null(job->piece);
    job_free(job);
    dev_set_launch_fault_for_test(d, 0);
    dev_set_chunk_bytes_for_test(d, 0);
    free(in);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_pieces");
    const TTest *const tests[] = {
        every_step_in_pieces_cpu_kernels,
        every_step_in_pieces_gpu_kernels,
        failure_and_cancel_between_pieces,
        NULL,
    };
    TCase *tc = check_run_case(s, "pieces", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
