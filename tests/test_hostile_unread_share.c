/* SPDX-License-Identifier: MIT */
/* test_hostile_unread_share.c: issue 33, items 5 and 9. One client (this
 * test's uid) opens 8 connections that never read a byte and sends
 * Transform jobs on each until refused; their replies wait behind a
 * window the client never opens. Before: they held all of
 * --max-job-memory, for ever, and another uid's Transform was refused,
 * unary and streamed; the resident memory stayed high after they went.
 * Now: the client holds at most its default share (--max-client-memory,
 * half), another client's unary and streamed Transform are served
 * meanwhile and checked against the CPU (the stream finds staging
 * buffers: unary replies' runs leave streams a quarter of the pool, so it
 * is served before --send-timeout, not after), the stalled connections are
 * closed after --send-timeout with every byte given back while the
 * attacker still holds them open, and VmRSS comes back within 1.5x the
 * idle figure + 64 MiB, with no MALLOC_* tuning in the daemon's
 * environment (heap_trim.c). The other client is uid 65534 (a forked
 * child) when the test runs as root, else the TCP listener's address. */
#include <check.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "hostile.h"

#define JOB_MEMORY (256ull * 1024 * 1024)   /* --max-job-memory */
#define JOB_MEMORY_ARG "268435456"
#define JOB_BYTES (7u * 1024 * 1024)        /* one Transform's data: its message fits
                                             * the daemon's 8 MiB stream window */
#define ATTACK_CONNS 8
/* Calls per connection: their requests fit the daemon's 32 MiB connection
 * window, so the attacker never needs to read a WINDOW_UPDATE. */
#define ATTACK_CALLS 4
#define SEND_TIMEOUT_S 5
#define SEND_TIMEOUT_ARG "5"
#define FRAME_DATA 16384                   /* the default SETTINGS_MAX_FRAME_SIZE */
#define GRPC_PREFIX 5
#define XOR_VALUE 0x5a
#define NOBODY 65534
/* The bound: VmRSS within 1.5x idle + 64 MiB once the load ends. */
#define RSS_BOUND_KB(idle) ((idle) * 3 / 2 + 64 * 1024)
#define RSS_SETTLE_MS 15000

static struct daemon_proc ampd;
static char tcp_address[64];

/* A gRPC Transform request (xor) over JOB_BYTES bytes, with its prefix. */
static uint8_t *transform_message(size_t *len)
{
    uint8_t *data = malloc(JOB_BYTES);
    ck_assert_ptr_nonnull(data);
    for (size_t i = 0; i < JOB_BYTES; i++)
        data[i] = (uint8_t)(i * 31 + 7);
    Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_XOR;
    p.value = XOR_VALUE;
    Amp__V1__TransformRequest req = AMP__V1__TRANSFORM_REQUEST__INIT;
    req.data.data = data;
    req.data.len = JOB_BYTES;
    req.params = &p;
    size_t n = protobuf_c_message_get_packed_size(&req.base);
    uint8_t *msg = malloc(GRPC_PREFIX + n);
    ck_assert_ptr_nonnull(msg);
    msg[0] = 0;
    msg[1] = (uint8_t)(n >> 24);
    msg[2] = (uint8_t)(n >> 16);
    msg[3] = (uint8_t)(n >> 8);
    msg[4] = (uint8_t)n;
    protobuf_c_message_pack(&req.base, msg + GRPC_PREFIX);
    free(data);
    *len = GRPC_PREFIX + n;
    return msg;
}

/* A connection that sends its calls and then reads nothing more: its
 * SETTINGS leave the daemon the default 64 KiB window, never opened. */
static int attack(const uint8_t *msg, size_t len)
{
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    uint8_t buf[FRAME_DATA + 64];
    ck_assert_int_eq(hostile_send(fd, buf, hostile_hello(buf)), 0);
    /* The ack of the daemon's SETTINGS (sent as it accepts), unread: its
     * 8 MiB stream window holds from then on. */
    ck_assert_int_eq(hostile_send(fd, buf, hostile_frame(buf, 0, HOSTILE_SETTINGS, HOSTILE_FLAG_ACK, 0)), 0);
    for (uint32_t i = 0; i < ATTACK_CALLS; i++) {
        uint32_t id = 2 * i + 1;
        uint8_t block[512];
        size_t blen = hostile_request_block(block, sizeof block, "/amp.v1.Amp/Transform", 0);
        ck_assert_uint_gt(blen, 0);
        hostile_frame(buf, (uint32_t)blen, HOSTILE_HEADERS, HOSTILE_FLAG_END_HEADERS, id);
        memcpy(buf + 9, block, blen);
        ck_assert_int_eq(hostile_send(fd, buf, 9 + blen), 0);
        for (size_t off = 0; off < len; off += FRAME_DATA) {
            size_t n = len - off < FRAME_DATA ? len - off : FRAME_DATA;
            uint8_t flags = off + n == len ? HOSTILE_FLAG_END_STREAM : 0;
            hostile_frame(buf, (uint32_t)n, HOSTILE_DATA, flags, id);
            memcpy(buf + 9, msg + off, n);
            ck_assert_int_eq(hostile_send(fd, buf, 9 + n), 0);
        }
    }
    /* The PING's ack comes once the daemon has read every call before it;
     * it is the last thing read here. */
    hostile_frame(buf, 8, HOSTILE_PING, 0, 0);
    memset(buf + 9, 0, 8);
    ck_assert_int_eq(hostile_send(fd, buf, 9 + 8), 0);
    struct hostile_reader r;
    hostile_reader_init(&r);
    long long deadline = hostile_now_ms() + HOSTILE_IO_MS;
    while (r.ping_acks == 0 && !r.eof && hostile_now_ms() < deadline)
        hostile_reader_pump(&r, fd, HOSTILE_IO_MS);
    ck_assert_uint_eq(r.ping_acks, 1);
    return fd;
}

static amp_daemon_status status_now(void)
{
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(hostile_status(ampd.address, &st), 0);
    return st;
}

/* Waits for no job to be queued or running: what is held now is replies. */
static void wait_jobs_done(void)
{
    long long deadline = hostile_now_ms() + HOSTILE_IO_MS;
    while (status_now().jobs_in_flight > 0 && hostile_now_ms() < deadline)
        hostile_sleep_ms(50);
    ck_assert_uint_eq(status_now().jobs_in_flight, 0);
}

static int xor_checked(const uint8_t *in, const uint8_t *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (out[i] != (uint8_t)(in[i] ^ XOR_VALUE))
            return -1;
    return 0;
}

/* The well-behaved client's two calls; 0, or the step that failed
 * (printed). Runs in a child, so it reports rather than asserts. */
static int served(const char *address)
{
    uint8_t *in = malloc(JOB_BYTES), *out = malloc(JOB_BYTES);
    if (!in || !out)
        return 1;
    for (size_t i = 0; i < JOB_BYTES; i++)
        in[i] = (uint8_t)(i * 13 + 1);
    amp_conn *c;
    if (amp_connect(address, &c) != 0) {
        fprintf(stderr, "connect %s: %s\n", address, amp_last_message(NULL));
        return 2;
    }
    amp_opts o = { .size = sizeof o, .timeout_ms = HOSTILE_IO_MS };
    amp_transform_params p = { .op = AMP_OP_XOR, .value = XOR_VALUE };
    void *got = NULL;
    size_t got_len = 0;
    int rc = amp_transform(c, &o, &p, in, JOB_BYTES, &got, &got_len);
    if (rc != 0 || got_len != JOB_BYTES || xor_checked(in, got, JOB_BYTES) != 0) {
        fprintf(stderr, "unary transform: %s: %s\n", amp_strerror(rc), amp_last_message(c));
        return 3;
    }
    amp_free(got);
    amp_step step = { .size = sizeof step, .kind = AMP_STEP_TRANSFORM, .transform = p };
    rc = amp_stream_mem_into(c, &o, &step, 1, in, JOB_BYTES, out, JOB_BYTES, &got_len, NULL, 0);
    if (rc != 0 || got_len != JOB_BYTES || xor_checked(in, out, JOB_BYTES) != 0) {
        fprintf(stderr, "streamed transform: %s: %s\n", amp_strerror(rc), amp_last_message(c));
        return 4;
    }
    amp_close(c);
    free(in);
    free(out);
    return 0;
}

/* served() as uid 65534 when root (its own client), else over TCP (the
 * client "address 127.0.0.1", not this uid). */
static void assert_other_client_served(void)
{
    if (geteuid() != 0) {
        ck_assert_int_eq(served(tcp_address), 0);
        return;
    }
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
            _exit(10);
        _exit(served(ampd.address));
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "uid %d's calls failed: status %d", NOBODY,
                  st);
}

START_TEST(unread_replies_share_and_time_out)
{
    snprintf(tcp_address, sizeof tcp_address, "127.0.0.1:%d", hostile_free_port());
    /* Defaults but for the sizes (scaled from the 1 GiB and 32 MiB)
     * and the send timeout: the client share is the default's. */
    static const char *args[] = { "--max-job-memory", JOB_MEMORY_ARG, "--send-timeout",
                                  SEND_TIMEOUT_ARG, "--socket-mode", "0666", "--listen", tcp_address,
                                  "--tcp-require-token", "off", NULL };
    hostile_start(&ampd, args);
    ck_assert_int_eq(chmod(ampd.dir, 0711), 0);   /* uid 65534 reaches the socket */
    ck_assert_int_eq(served(ampd.address), 0);     /* the job shapes, before the idle figure */
    hostile_sleep_ms(3000);                        /* quiet: trimmed once */
    long idle = hostile_rss_kb(ampd.pid);

    size_t len;
    uint8_t *msg = transform_message(&len);
    int fds[ATTACK_CONNS];
    for (int i = 0; i < ATTACK_CONNS; i++)
        fds[i] = attack(msg, len);
    free(msg);
    wait_jobs_done();
    amp_daemon_status st = status_now();
    long during = hostile_rss_kb(ampd.pid);
    fprintf(stderr, "attack: %" PRIu64 " of %llu bytes held, VmRSS %ld KiB (idle %ld)\n",
            st.held_bytes, JOB_MEMORY, during, idle);
    /* The client's share (half) bounds it, and the attack did reach it. */
    ck_assert_uint_le(st.held_bytes, JOB_MEMORY / 2);
    ck_assert_uint_gt(st.held_bytes, JOB_MEMORY / 4);

    assert_other_client_served();
    /* Served while the attack held its bytes, not after --send-timeout:
     * its stream found staging buffers that unread unary replies cannot take. */
    ck_assert_uint_gt(status_now().held_bytes, 0);

    /* The attacker keeps its connections open and reads nothing: the
     * daemon closes those whose replies wait after --send-timeout and gives
     * every byte back (those whose calls were all refused hold nothing). */
    long long start = hostile_now_ms(), deadline = start + SEND_TIMEOUT_S * 1000 + HOSTILE_IO_MS;
    while ((st = status_now()).held_bytes > 0 && hostile_now_ms() < deadline)
        hostile_sleep_ms(50);
    fprintf(stderr, "%" PRIu64 " bytes held after %lld ms\n", st.held_bytes,
            hostile_now_ms() - start);
    ck_assert_uint_eq(st.held_bytes, 0);
    ck_assert_uint_lt(st.connections, ATTACK_CONNS);
    for (int i = 0; i < ATTACK_CONNS; i++)
        close(fds[i]);

    long after = hostile_rss_settle_kb(ampd.pid, RSS_BOUND_KB(idle), RSS_SETTLE_MS);
    fprintf(stderr, "VmRSS %ld KiB after, idle %ld, bound %ld\n", after, idle, RSS_BOUND_KB(idle));
    ck_assert_msg(after <= RSS_BOUND_KB(idle), "ampd VmRSS %ld KiB after the load, idle %ld KiB",
                  after, idle);
    hostile_assert_served(ampd.address);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_unread_share");
    const TTest *const tests[] = {
        unread_replies_share_and_time_out,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 120);
    return check_run(s, CK_FORK_GETENV);
}
