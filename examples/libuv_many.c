/* SPDX-License-Identifier: MIT */
/* libuv_many.c: libampclient in a libuv loop (docs/event-loop.md).
 *
 *   libuv_many [ADDRESS [CALLS [IN_FLIGHT]]]
 *
 * One thread, one libuv loop, one connection: IN_FLIGHT (256) reverses of
 * distinct inputs are kept in flight, each finished one checked and
 * replaced from its completion callback, until CALLS (10000) finished.
 * The loop watches amp_fd() for reading and calls amp_process() when it
 * is readable: nothing else. Prints the count and the rate; exits 0 when
 * every answer was right, 1 otherwise. ADDRESS defaults to ampd's socket.
 *
 * Build: cc libuv_many.c $(pkg-config --cflags --libs ampclient libuv)
 */
#include <amp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define DEFAULT_CALLS 10000
#define DEFAULT_IN_FLIGHT 256
#define INPUT_LEN 64

struct app {
    amp_conn *c;
    uv_poll_t poll;       /* watches amp_fd(c) */
    long calls;           /* to run in all */
    long started, finished, wrong;
    int error;            /* the first failure that stops the loop, or 0 */
    uint8_t (*in)[INPUT_LEN]; /* one input per call in flight, reused by its slot */
};

static struct app app;   /* the callbacks' context: one per program */

static void on_done(amp_call *call, void *user);

/* Input of call number n: distinct per call, so a mixed-up answer shows. */
static void fill_input(uint8_t *p, long n)
{
    for (int i = 0; i < INPUT_LEN; i++)
        p[i] = (uint8_t)(n * 131 + i * 7);
}

/* Starts call number app.started in slot (its input buffer). */
static void start_one(long slot)
{
    long n = app.started++;
    fill_input(app.in[slot], n);
    amp_call *call;
    int rc = amp_start_reverse(app.c, NULL, app.in[slot], INPUT_LEN, &call);
    if (rc == 0)
        rc = amp_call_on_done(call, on_done, (void *)(intptr_t)slot);
    if (rc != 0 && !app.error) {
        fprintf(stderr, "libuv_many: start: %s: %s\n", amp_strerror(rc),
                amp_last_message(app.c));
        app.error = rc;
    }
}

/* A call finished: check its answer against its slot's input, then start
 * the next in the same slot. */
static void on_done(amp_call *call, void *user)
{
    long slot = (long)(intptr_t)user;
    void *out;
    size_t n;
    int rc = amp_call_data(call, &out, &n);
    if (rc != 0) {
        fprintf(stderr, "libuv_many: call: %s: %s\n", amp_strerror(rc), amp_call_message(call));
        app.wrong++;
    } else {
        const uint8_t *got = out;
        int ok = n == INPUT_LEN;
        for (size_t i = 0; ok && i < n; i++)
            ok = got[i] == app.in[slot][INPUT_LEN - 1 - i];
        app.wrong += !ok;
        amp_free(out);
    }
    amp_call_free(call);
    app.finished++;
    if (app.started < app.calls && !app.error)
        start_one(slot);
}

/* amp_fd() is readable: let the library work; stop once all are back. */
static void on_readable(uv_poll_t *poll, int status, int events)
{
    (void)events;
    int rc = status < 0 ? -1 : amp_process(app.c);
    if (rc != 0 && !app.error) {
        fprintf(stderr, "libuv_many: %s\n", status < 0 ? uv_strerror(status)
                                                       : amp_last_message(app.c));
        app.error = rc;
    }
    if (app.error || app.finished == app.calls)
        uv_poll_stop(poll);
}

int main(int argc, char **argv)
{
    const char *address = argc > 1 ? argv[1] : NULL;
    app.calls = argc > 2 ? atol(argv[2]) : DEFAULT_CALLS;
    long in_flight = argc > 3 ? atol(argv[3]) : DEFAULT_IN_FLIGHT;
    if (app.calls < 1 || in_flight < 1) {
        fprintf(stderr, "usage: libuv_many [ADDRESS [CALLS [IN_FLIGHT]]] (both >= 1)\n");
        return 2;
    }
    if (in_flight > app.calls)
        in_flight = app.calls;
    int rc = amp_connect(address, &app.c);
    if (rc != 0) {
        fprintf(stderr, "libuv_many: connect: %s\n", amp_last_message(NULL));
        return 1;
    }
    app.in = malloc((size_t)in_flight * sizeof *app.in);
    uv_loop_t *loop = uv_default_loop();
    int fd = amp_fd(app.c);
    if (!app.in || fd < 0 || uv_poll_init(loop, &app.poll, fd) != 0) {
        fprintf(stderr, "libuv_many: set-up failed\n");
        return 1;
    }
    uint64_t t0 = uv_hrtime();
    for (long slot = 0; slot < in_flight; slot++)
        start_one(slot);
    uv_poll_start(&app.poll, UV_READABLE, on_readable);
    uv_run(loop, UV_RUN_DEFAULT);
    double secs = (double)(uv_hrtime() - t0) / 1e9;
    uv_close((uv_handle_t *)&app.poll, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    amp_close(app.c);   /* calls still in flight (after an error) get their callbacks here */
    uv_loop_close(loop);
    free(app.in);
    printf("%ld calls, %ld in flight, %ld wrong, %.0f calls/s\n", app.finished, in_flight,
           app.wrong, app.finished / secs);
    return app.error || app.wrong || app.finished != app.calls ? 1 : 0;
}
