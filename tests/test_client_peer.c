/* SPDX-License-Identifier: MIT */
/* test_client_peer.c: libampclient against peers that misbehave, over
 * real Unix sockets: one that hangs up mid-call, one that never answers,
 * one that does not speak HTTP/2. Every case must end in an error code,
 * never a hang or a crash, and a broken connection must keep failing fast.
 * A deaf peer also shows that a call to a daemon not heard from
 * lately sleeps instead of polling (amp_connect_opts.busy_poll_us).
 *
 * The peer is a thread of this test playing a broken server; it is a
 * fixture for failure paths the real daemon does not produce on demand.
 */
#define _GNU_SOURCE   /* RUSAGE_THREAD */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"

#define PEER_DEADLINE_MS 300   /* for the silent peer */
#define PEER_SAFETY_MS 30000   /* any call that should fail fast gets this as a backstop */
#define PEER_BIG_REQUEST (8u << 20)
#define PEER_READ_BEFORE_HANGUP (64 * 1024)
#define PEER_QUIET_CPU_MAX_US 3000 /* a call that polled its 10 ms window took ~10,000 */

enum peer_mode {
    PEER_HANGUP_AFTER_READ, /* read PEER_READ_BEFORE_HANGUP bytes, then close */
    PEER_HANGUP_AT_ONCE,    /* read once (the preface), then close */
    PEER_SILENT,            /* read everything, answer nothing */
    PEER_NOT_HTTP2,         /* answer with HTTP/1.1 */
    PEER_DEAF,              /* read nothing: a request wakes no thread of the peer */
};

struct peer {
    enum peer_mode mode;
    int listen_fd;
    char dir[64];
    char path[100];
    char address[140];
    int quit[2];            /* PEER_DEAF waits for a byte on quit[0] */
    pthread_t thread;
};

static void peer_drain(int fd)
{
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

static void *peer_main(void *arg)
{
    struct peer *p = arg;
    int fd = accept(p->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    static const char http1[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    size_t got = 0;
    char buf[4096];
    switch (p->mode) {
    case PEER_HANGUP_AFTER_READ:
        while (got < PEER_READ_BEFORE_HANGUP) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        break;
    case PEER_HANGUP_AT_ONCE:
        if (read(fd, buf, sizeof buf) < 0)
            break;
        break;
    case PEER_SILENT: peer_drain(fd); break;
    case PEER_DEAF:
        if (read(p->quit[0], buf, 1) < 0)
            break;
        break;
    case PEER_NOT_HTTP2:
        if (write(fd, http1, sizeof http1 - 1) < 0)
            break;
        peer_drain(fd);
        break;
    }
    close(fd);
    return NULL;
}

static void peer_start(struct peer *p, enum peer_mode mode)
{
    memset(p, 0, sizeof *p);
    p->mode = mode;
    snprintf(p->dir, sizeof p->dir, "/tmp/amp-peer-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(p->dir));
    snprintf(p->path, sizeof p->path, "%s/s.sock", p->dir);
    snprintf(p->address, sizeof p->address, "unix:%s", p->path);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", p->path);
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(p->listen_fd, 0);
    ck_assert_int_eq(bind(p->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(p->listen_fd, 4), 0);
    ck_assert_int_eq(pipe(p->quit), 0);
    ck_assert_int_eq(pthread_create(&p->thread, NULL, peer_main, p), 0);
}

/* Call after the client closed: the peer thread sees EOF and exits. */
static void peer_stop(struct peer *p)
{
    close(p->quit[1]);
    pthread_join(p->thread, NULL);
    close(p->quit[0]);
    close(p->listen_fd);
    unlink(p->path);
    rmdir(p->dir);
}

START_TEST(hangup_mid_call_is_eio)
{
    struct peer p;
    peer_start(&p, PEER_HANGUP_AFTER_READ);
    amp_conn *c;
    amp_connect_opts co = { .size = sizeof co, .no_reconnect = 1 };
    ck_assert_int_eq(amp_connect_with(p.address, &co, &c), 0);
    uint8_t *big = calloc(1, PEER_BIG_REQUEST);
    ck_assert_ptr_nonnull(big);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = PEER_SAFETY_MS };
    void *out = NULL;
    size_t n = 0;
    int rc = amp_reverse(c, &o, big, PEER_BIG_REQUEST, &out, &n);
    ck_assert_msg(rc == AMP_EIO, "rc %d (%s): %s", rc, amp_strerror(rc), amp_last_message(c));
    ck_assert_ptr_null(out);
    ck_assert_str_ne(amp_last_message(c), "");
    /* Without reconnection the connection stays broken: the next call
     * fails at once. */
    rc = amp_reverse(c, &o, "ab", 2, &out, &n);
    ck_assert_int_eq(rc, AMP_EIO);
    ck_assert_ptr_nonnull(strstr(amp_last_message(c), "reconnect"));
    amp_close(c);
    free(big);
    peer_stop(&p);
}
END_TEST

START_TEST(hangup_before_reply_is_eio)
{
    struct peer p;
    peer_start(&p, PEER_HANGUP_AT_ONCE);
    amp_conn *c;
    /* The peer serves one connection: a reconnect, had the close been
     * seen before the call, would wait in its queue. */
    amp_connect_opts co = { .size = sizeof co, .no_reconnect = 1 };
    ck_assert_int_eq(amp_connect_with(p.address, &co, &c), 0);
    /* A small request is all sent, or the close seen first; both AMP_EIO. */
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = PEER_SAFETY_MS };
    int serving;
    int rc = amp_health(c, &o, "", &serving);
    ck_assert_msg(rc == AMP_EIO, "rc %d (%s): %s", rc, amp_strerror(rc), amp_last_message(c));
    amp_close(c);
    peer_stop(&p);
}
END_TEST

START_TEST(silent_peer_hits_deadline)
{
    struct peer p;
    peer_start(&p, PEER_SILENT);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(p.address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = PEER_DEADLINE_MS };
    void *out = NULL;
    size_t n = 0;
    int rc = amp_reverse(c, &o, "abc", 3, &out, &n);
    ck_assert_msg(rc == AMP_EDEADLINE, "rc %d (%s)", rc, amp_strerror(rc));
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(amp_last_message(c), "deadline"));
    /* A deadline is not a broken connection: the next call tries again. */
    rc = amp_reverse(c, &o, "abc", 3, &out, &n);
    ck_assert_int_eq(rc, AMP_EDEADLINE);
    amp_close(c);
    peer_stop(&p);
}
END_TEST

/* CPU time this thread has used, us. */
static long long peer_thread_cpu_us(void)
{
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_THREAD, &ru), 0);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

/* The deaf peer never answers, so a call waits out its deadline; the
 * longest poll window is allowed, but the daemon has not been heard from
 * within it, so the call sleeps at once (a loop it woke may be waiting
 * for this very CPU) and takes almost no CPU. Polling would take the
 * window's 10 ms: the peer reads nothing, so no thread it wakes takes
 * the CPU from the poll (which would end it). */
START_TEST(quiet_peer_call_sleeps)
{
    struct peer p;
    peer_start(&p, PEER_DEAF);
    amp_conn *c;
    amp_connect_opts co = { .size = sizeof co, .busy_poll_us = AMP_BUSY_POLL_MAX_US };
    ck_assert_int_eq(amp_connect_with(p.address, &co, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = PEER_DEADLINE_MS };
    void *out = NULL;
    size_t n = 0;
    long long before = peer_thread_cpu_us();
    int rc = amp_reverse(c, &o, "abc", 3, &out, &n);
    long long used = peer_thread_cpu_us() - before;
    ck_assert_msg(rc == AMP_EDEADLINE, "rc %d (%s)", rc, amp_strerror(rc));
    ck_assert_msg(used < PEER_QUIET_CPU_MAX_US, "the call took %lld us of CPU waiting", used);
    amp_close(c);
    peer_stop(&p);
}
END_TEST

START_TEST(http1_peer_is_eproto)
{
    struct peer p;
    peer_start(&p, PEER_NOT_HTTP2);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(p.address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = PEER_SAFETY_MS };
    amp_daemon_status st = { .size = sizeof st };
    int rc = amp_status(c, &o, &st);
    ck_assert_msg(rc == AMP_EPROTO, "rc %d (%s): %s", rc, amp_strerror(rc), amp_last_message(c));
    ck_assert_str_ne(amp_last_message(c), "");
    amp_close(c);
    peer_stop(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_peer");
    const TTest *const tests[] = {
        hangup_mid_call_is_eio,
        hangup_before_reply_is_eio,
        silent_peer_hits_deadline,
        quiet_peer_call_sleeps,
        http1_peer_is_eproto,
        NULL,
    };
    check_run_case(s, "broken peers", tests);
    return check_run(s, CK_FORK_GETENV);
}
