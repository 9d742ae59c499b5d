/* SPDX-License-Identifier: MIT */
/* test_client_heap.c: libampclient's kept reply buffers (client/heap.c):
 * amp_free keeps large buffers and a reply that fits takes one back (not
 * one over twice its size, nothing under a MiB); at most four are kept;
 * and a gRPC reader told to take its whole buffers from there reads a
 * message into the kept buffer. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "heap.h"

#define MIB ((size_t)1 << 20)

/* Empties what earlier tests left kept. */
static void drain(void)
{
    size_t cap;
    void *p;
    while ((p = heap_take(MIB, &cap)) || (p = heap_take(4 * MIB, &cap)) ||
           (p = heap_take(16 * MIB, &cap)) || (p = heap_take(64 * MIB, &cap)))
        free(p);
}

START_TEST(a_freed_buffer_comes_back)
{
    drain();
    void *a = malloc(3 * MIB);
    ck_assert_ptr_nonnull(a);
    heap_give(a);
    size_t cap = 0;
    ck_assert_ptr_null(heap_take(MIB / 2, &cap));       /* small: malloc's own */
    ck_assert_ptr_null(heap_take(7 * MIB, &cap));       /* does not fit */
    ck_assert_ptr_null(heap_take(MIB, &cap));           /* 3x too large for it */
    void *b = heap_take(2 * MIB, &cap);
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_ge(cap, 3 * MIB);
    ck_assert_ptr_null(heap_take(2 * MIB, &cap));       /* taken once */
    free(b);
    heap_give(NULL);
    heap_give(malloc(100));                             /* small ones are freed */
}
END_TEST

START_TEST(at_most_four_kept_largest_first)
{
    drain();
    void *p[6];
    for (int i = 0; i < 6; i++) {
        p[i] = malloc((size_t)(i + 1) * 2 * MIB);
        heap_give(p[i]);
    }
    /* The four largest stay: 6, 8, 10 and 12 MiB. */
    size_t cap;
    int kept = 0;
    for (int i = 5; i >= 0; i--) {
        void *q = heap_take((size_t)(i + 1) * 2 * MIB, &cap);
        if (q) {
            ck_assert_ptr_eq(q, p[i]);
            ck_assert_int_ge(i, 2);
            kept++;
            free(q);
        }
    }
    ck_assert_int_eq(kept, 4);
}
END_TEST

static int on_message(const uint8_t *msg, size_t len, void *ctx)
{
    *(const uint8_t **)ctx = msg;
    ck_assert_uint_eq(len, 2 * MIB);
    ck_assert_uint_eq(msg[0], 'm');
    ck_assert_uint_eq(msg[len - 1], 'm');
    return 0;
}

static void *take(void *ctx, size_t n, size_t *cap)
{
    (void)ctx;
    return heap_take(n, cap);
}

START_TEST(reader_reads_into_a_kept_buffer)
{
    drain();
    void *kept = malloc(3 * MIB);
    heap_give(kept);
    struct grpc_frame_reader r;
    grpc_frame_reader_init(&r, 64 * MIB);
    r.prealloc_max = 64 * MIB;
    r.take = take;
    uint8_t *body = malloc(GRPC_FRAME_HEADER + 2 * MIB);
    grpc_frame_header(body, 2 * MIB);
    memset(body + GRPC_FRAME_HEADER, 'm', 2 * MIB);
    const uint8_t *got = NULL;
    ck_assert_int_eq(grpc_frame_feed(&r, body, GRPC_FRAME_HEADER + 2 * MIB, on_message, &got), 0);
    ck_assert_ptr_eq(got, kept);
    grpc_frame_reader_free(&r);
    free(body);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_heap");
    const TTest *const tests[] = {
        a_freed_buffer_comes_back,
        at_most_four_kept_largest_first,
        reader_reads_into_a_kept_buffer,
        NULL,
    };
    check_run_case(s, "heap", tests);
    return check_run(s, CK_FORK_GETENV);
}
