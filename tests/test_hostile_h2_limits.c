/* SPDX-License-Identifier: MIT */
/* test_hostile_h2_limits.c: HTTP/2 limits a client can break before or
 * after its call starts (issue 33 item 4 and its smaller items).
 *
 * An HPACK bomb: a 147 KB HEADERS block that adds one 4,000-byte field to
 * the dynamic table and refers to it once a byte, ~590 MB decoded, sent
 * on two connections without pause. ampd advertises a 64 KiB header list:
 * the connection must end with GOAWAY ENHANCE_YOUR_CALM as soon as the
 * decoded list passes it, for a few ms of ampd's CPU a block rather than
 * hundreds, while a client of another uid is served promptly. A 60 KB
 * header list, under the limit, is still served. A block nghttp2 ignores
 * after a malformed field (decoding the rest without telling anyone) is
 * bounded by its own size just the same.
 * MadeYouReset (CVE-2025-8671): calls started and then made to be reset by
 * ampd itself (a WINDOW_UPDATE that overflows the stream's window, a
 * stream error, RST_STREAM(FLOW_CONTROL_ERROR)): past a budget, GOAWAY
 * ENHANCE_YOUR_CALM, and no job is left behind.
 * content-length that does not match the DATA: RST_STREAM(PROTOCOL_ERROR)
 * (RFC 9113 section 8.1.1). grpc-timeout of zero: DEADLINE_EXCEEDED.
 * Every case ends with the daemon quiet, served and its memory back. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define BOMB_FRAME 16384
#define BOMB_FRAMES 9          /* HEADERS + 8 CONTINUATION: all nghttp2 lets a block span */
#define BOMB_ENTRY 4000        /* the value of the one field in the dynamic table */
#define BOMB_ATTACKERS 2
#define BOMB_ATTACK_MS 2000
/* ampd's CPU a block may cost: the old code took ~300 ms (release) to
 * decode one; the decoded list passes 64 KiB after ~16 references. */
#define BOMB_CPU_MS_PER_BLOCK 20
/* A well-behaved call during the attack: it took seconds on the old code. */
#define PROBE_MAX_MS 500
#define IGNORED_FRAMES 5       /* 80 KiB: past the 64 KiB limit on its own bytes */
#define UNDER_LIMIT_PAD 60000  /* an x-pad header value: the list stays under 64 KiB */
#define RESET_STREAMS 1000
#define NOBODY 65534

static struct daemon_proc ampd;

/* Starts the daemon with a socket another uid can reach, on io_threads
 * I/O loops ("1": every connection on one). */
static long start(const char *io_threads)
{
    const char *const args[] = { "--socket-mode", "0666", "--io-threads", io_threads, NULL };
    long base = hostile_start(&ampd, args);
    ck_assert_int_eq(chmod(ampd.dir, 0711), 0);
    return base;
}

static void finish(long base)
{
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

/* A well-behaved client of another uid (uid 65534 when the test runs as
 * root; the test's own otherwise): probes for ms milliseconds, in a child.
 * Its exit status is 0 when every call was served within PROBE_MAX_MS. */
static pid_t other_client_start(int ms)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid > 0)
        return pid;
    if (getuid() == 0 && (setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
        _exit(2);
    long long t0 = hostile_now_ms(), worst = 0;
    int calls = 0;
    while (hostile_now_ms() - t0 < ms || calls == 0) {
        char why[256];
        long long c0 = hostile_now_ms();
        int rc = hostile_probe(ampd.address, why, sizeof why);
        long long took = hostile_now_ms() - c0;
        if (rc != 0 || took > PROBE_MAX_MS) {
            fprintf(stderr, "uid %u: call %d: rc %d (%s) in %lld ms\n", (unsigned)getuid(), calls,
                    rc, rc ? why : "ok", took);
            _exit(1);
        }
        calls++;
        hostile_sleep_ms(20);
        if (took > worst)
            worst = took;
    }
    fprintf(stderr, "uid %u: %d calls, the slowest in %lld ms\n", (unsigned)getuid(), calls, worst);
    _exit(0);
}

static void other_client_assert_served(pid_t pid)
{
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "the other uid's client was not served promptly (status 0x%x)", st);
}

/* ampd's CPU time (user + system) in ms. */
static long cpu_ms(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    ck_assert_ptr_nonnull(p);
    unsigned long ut = 0, st = 0;
    /* After ")": state and ten more fields, then utime and stime. */
    ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st),
                     2);
    return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

/* A literal field without indexing, new name, both shorter than 127
 * bytes (RFC 7541 section 6.2.2), at p; returns its length. */
static size_t literal(uint8_t *p, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    p[0] = 0;
    p[1] = (uint8_t)n;
    memcpy(p + 2, name, n);
    p[2 + n] = (uint8_t)v;
    memcpy(p + 3 + n, value, v);
    return 3 + n + v;
}

/* The bomb's frames on stream 1 into out; returns their length. Its own
 * HPACK: hostile_request_block() turns the dynamic table off. */
static size_t bomb(uint8_t *out, size_t cap)
{
    uint8_t *block = malloc(BOMB_FRAME * BOMB_FRAMES);
    ck_assert_ptr_nonnull(block);
    size_t len = literal(block, ":method", "POST");
    len += literal(block + len, ":scheme", "http");
    len += literal(block + len, ":path", "/amp.v1.Amp/Reverse");
    len += literal(block + len, "content-type", "application/grpc");
    /* Literal with incremental indexing, new name "x-big" (RFC 7541 6.2.1). */
    block[len++] = 0x40;
    block[len++] = 5;
    memcpy(block + len, "x-big", 5);
    len += 5;
    block[len++] = 0x7f;   /* 127 + 3873 = 4000, as a 7-bit prefixed integer */
    block[len++] = (uint8_t)(((BOMB_ENTRY - 127) & 0x7f) | 0x80);
    block[len++] = (uint8_t)((BOMB_ENTRY - 127) >> 7);
    memset(block + len, 'b', BOMB_ENTRY);
    len += BOMB_ENTRY;
    memset(block + len, 0xbe, BOMB_FRAME * BOMB_FRAMES - len);   /* index 62: x-big */
    size_t o = 0;
    for (int i = 0; i < BOMB_FRAMES; i++) {
        ck_assert_uint_le(o + 9 + BOMB_FRAME, cap);
        o += hostile_frame(out + o, BOMB_FRAME, i ? HOSTILE_CONTINUATION : HOSTILE_HEADERS,
                           i == BOMB_FRAMES - 1 ? HOSTILE_FLAG_END_HEADERS : 0, 1);
        memcpy(out + o, block + (size_t)i * BOMB_FRAME, BOMB_FRAME);
        o += BOMB_FRAME;
    }
    free(block);
    return o;
}

struct attacker {
    int fd;
    struct hostile_reader r;
};

START_TEST(hpack_bomb_ends_connection)
{
    long base = start("1");   /* the other client's calls share the attackers' loop */
    static uint8_t frames[BOMB_FRAMES * (9 + BOMB_FRAME)];
    size_t flen = bomb(frames, sizeof frames);
    uint8_t hello[64];
    size_t hlen = hostile_hello(hello);
    struct attacker a[BOMB_ATTACKERS];
    for (int i = 0; i < BOMB_ATTACKERS; i++)
        a[i].fd = -1;
    pid_t other = other_client_start(BOMB_ATTACK_MS);
    long cpu0 = cpu_ms(ampd.pid);
    long long t0 = hostile_now_ms();
    int blocks = 0, calm = 0, ended = 0;
    while (hostile_now_ms() - t0 < BOMB_ATTACK_MS) {
        for (int i = 0; i < BOMB_ATTACKERS; i++) {
            if (a[i].fd < 0) {
                a[i].fd = hostile_connect_unix(ampd.sock_path);
                ck_assert_int_ge(a[i].fd, 0);
                hostile_reader_init(&a[i].r);
                ck_assert_int_eq(hostile_send(a[i].fd, hello, hlen), 0);
            }
            if (hostile_send(a[i].fd, frames, flen) == 0)
                blocks++;
            hostile_reader_pump(&a[i].r, a[i].fd, 0);
            if (a[i].r.goaway || a[i].r.eof) {
                hostile_reader_until_eof(&a[i].r, a[i].fd, HOSTILE_IO_MS);
                if (a[i].r.goaway && a[i].r.goaway_code == HOSTILE_ENHANCE_YOUR_CALM &&
                    strstr(a[i].r.goaway_debug, "SETTINGS_MAX_HEADER_LIST_SIZE"))
                    calm++;
                ended++;
                close(a[i].fd);
                a[i].fd = -1;
            }
        }
    }
    for (int i = 0; i < BOMB_ATTACKERS; i++) {
        if (a[i].fd < 0)
            continue;
        hostile_reader_until_eof(&a[i].r, a[i].fd, HOSTILE_IO_MS);
        if (a[i].r.goaway && a[i].r.goaway_code == HOSTILE_ENHANCE_YOUR_CALM)
            calm++;
        ended++;
        close(a[i].fd);
    }
    long cpu = cpu_ms(ampd.pid) - cpu0;
    other_client_assert_served(other);
    ck_assert_msg(calm > 0 && calm == ended,
                  "%d of %d connections that sent %d bomb blocks got GOAWAY ENHANCE_YOUR_CALM",
                  calm, ended, blocks);
    ck_assert_msg(cpu <= (long)blocks * BOMB_CPU_MS_PER_BLOCK,
                  "ampd used %ld ms of CPU for %d bomb blocks", cpu, blocks);
    finish(base);
}
END_TEST

START_TEST(ignored_block_bounded)
{
    long base = start("2");
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    static uint8_t frames[IGNORED_FRAMES * (9 + BOMB_FRAME)];
    size_t o = 0;
    for (int i = 0; i < IGNORED_FRAMES; i++) {
        uint8_t *p = frames + o + 9;
        size_t len = i ? 0 : literal(p, "X-Bad", "upper-case name: malformed");
        memset(p + len, 0x82, BOMB_FRAME - len);   /* :method GET, from the static table */
        o += hostile_frame(frames + o, BOMB_FRAME, i ? HOSTILE_CONTINUATION : HOSTILE_HEADERS,
                           i == IGNORED_FRAMES - 1 ? HOSTILE_FLAG_END_HEADERS : 0, 1);
        o += BOMB_FRAME;
    }
    uint8_t hello[64];
    ck_assert_int_eq(hostile_send(fd, hello, hostile_hello(hello)), 0);
    hostile_send(fd, frames, o);   /* the daemon may hang up before it all went */
    struct hostile_reader r;
    hostile_reader_init(&r);
    ck_assert(hostile_reader_until_eof(&r, fd, HOSTILE_IO_MS) >= 0);
    ck_assert_msg(r.goaway && r.goaway_code == HOSTILE_ENHANCE_YOUR_CALM &&
                      strstr(r.goaway_debug, "own bytes"),
                  "no GOAWAY ENHANCE_YOUR_CALM for a block of %zu bytes (%u resets, \"%s\")", o,
                  r.rst_streams, r.goaway_debug);
    close(fd);
    other_client_assert_served(other_client_start(0));
    finish(base);
}
END_TEST

START_TEST(header_list_under_limit_served)
{
    long base = start("2");
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    char *pad = malloc(UNDER_LIMIT_PAD + 1);
    ck_assert_ptr_nonnull(pad);
    memset(pad, 'p', UNDER_LIMIT_PAD);
    pad[UNDER_LIMIT_PAD] = '\0';
    const char *fields[] = {
        ":method", "POST", ":scheme", "http", ":path", "/amp.v1.Amp/Reverse",
        "content-type", "application/grpc", "x-pad", pad,
    };
    uint8_t body[GRPC_FRAME_HEADER + 4] = { 0, 0, 0, 0, 4, 0x0a, 2, 'h', 'i' };
    int32_t id = h2c_request_fields(c, fields, sizeof fields / sizeof fields[0] / 2, body, sizeof body);
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    ck_assert_int_eq(h2c_result(c, id)->grpc_status, STATUS_OK);
    ck_assert(!h2c_goaway(c, NULL, NULL));
    close(fd);
    h2c_free(c);
    free(pad);
    finish(base);
}
END_TEST

/* ReverseRequest{data: 64 bytes} with its gRPC prefix. */
static size_t reverse_message(uint8_t *out)
{
    grpc_frame_header(out, 66);
    out[GRPC_FRAME_HEADER] = 0x0a;
    out[GRPC_FRAME_HEADER + 1] = 64;
    memset(out + GRPC_FRAME_HEADER + 2, 'r', 64);
    return GRPC_FRAME_HEADER + 66;
}

START_TEST(made_you_reset_goaway)
{
    long base = start("2");
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    uint8_t hello[64];
    ck_assert_int_eq(hostile_send(fd, hello, hostile_hello(hello)), 0);
    uint8_t block[256], msg[GRPC_FRAME_HEADER + 66], buf[512];
    size_t blen = hostile_request_block(block, sizeof block, "/amp.v1.Amp/Reverse", 0);
    ck_assert_uint_gt(blen, 0);
    size_t mlen = reverse_message(msg);
    pid_t other = other_client_start(0);
    struct hostile_reader r;
    hostile_reader_init(&r);
    uint32_t i;
    for (i = 0; i < RESET_STREAMS && !r.eof && !r.goaway; i++) {
        uint32_t id = 2 * i + 1;
        /* A whole call, then a WINDOW_UPDATE past 2^31 - 1 on its stream:
         * a stream error ampd itself answers with RST_STREAM. */
        size_t len = hostile_frame(buf, (uint32_t)blen, HOSTILE_HEADERS, HOSTILE_FLAG_END_HEADERS, id);
        memcpy(buf + len, block, blen);
        len += blen;
        len += hostile_frame(buf + len, (uint32_t)mlen, HOSTILE_DATA, HOSTILE_FLAG_END_STREAM, id);
        memcpy(buf + len, msg, mlen);
        len += mlen;
        len += hostile_frame(buf + len, 4, HOSTILE_WINDOW_UPDATE, 0, id);
        memcpy(buf + len, "\x7f\xff\xff\xff", 4);
        len += 4;
        if (hostile_send(fd, buf, len) != 0)
            break;
        hostile_reader_pump(&r, fd, 0);
    }
    ck_assert_msg(hostile_reader_until_eof(&r, fd, HOSTILE_IO_MS) >= 0,
                  "still open after %u streams made to be reset (%u RST_STREAM seen)", i,
                  r.rst_streams);
    ck_assert_msg(r.goaway && r.goaway_code == HOSTILE_ENHANCE_YOUR_CALM,
                  "closed without GOAWAY ENHANCE_YOUR_CALM after %u streams (%u resets)", i,
                  r.rst_streams);
    ck_assert_msg(strstr(r.goaway_debug, "reset"), "GOAWAY says \"%s\"", r.goaway_debug);
    close(fd);
    other_client_assert_served(other);
    finish(base);
}
END_TEST

START_TEST(content_length_checked)
{
    long base = start("2");
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    uint8_t msg[GRPC_FRAME_HEADER + 66];
    size_t mlen = reverse_message(msg);
    char exact[16];
    snprintf(exact, sizeof exact, "%zu", mlen);
    const char *lengths[] = { "10", "1000", exact };
    int32_t ids[3];
    for (int i = 0; i < 3; i++) {
        const char *fields[] = {
            ":method", "POST", ":scheme", "http", ":path", "/amp.v1.Amp/Reverse",
            "content-type", "application/grpc", "content-length", lengths[i],
        };
        ids[i] = h2c_request_fields(c, fields, sizeof fields / sizeof fields[0] / 2, msg, mlen);
        ck_assert_int_gt(ids[i], 0);
    }
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    for (int i = 0; i < 2; i++) {
        const struct h2c_result *r = h2c_result(c, ids[i]);
        ck_assert_msg(r->grpc_status == -1 && r->rst_code == HOSTILE_PROTOCOL_ERROR,
                      "content-length %s for %zu bytes: status %d, reset %u", lengths[i], mlen,
                      r->grpc_status, r->rst_code);
    }
    ck_assert_int_eq(h2c_result(c, ids[2])->grpc_status, STATUS_OK);
    close(fd);
    h2c_free(c);
    pid_t other = other_client_start(0);
    other_client_assert_served(other);
    finish(base);
}
END_TEST

START_TEST(zero_timeout_expired)
{
    long base = start("2");
    static const char *const zeros[] = { "0n", "0u", "0m", "0S", "00000000H" };
    for (size_t i = 0; i < sizeof zeros / sizeof zeros[0]; i++) {
        int fd = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fd, 0);
        struct h2c *c = h2c_new();
        h2c_set_timeout(c, zeros[i]);
        uint8_t msg[GRPC_FRAME_HEADER + 66];
        size_t mlen = reverse_message(msg);
        int32_t id = h2c_call(c, "/amp.v1.Amp/Reverse", msg + GRPC_FRAME_HEADER,
                              mlen - GRPC_FRAME_HEADER);
        ck_assert_int_gt(id, 0);
        ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
        ck_assert_msg(h2c_result(c, id)->grpc_status == STATUS_DEADLINE_EXCEEDED,
                      "grpc-timeout %s: status %d", zeros[i], h2c_result(c, id)->grpc_status);
        close(fd);
        h2c_free(c);
    }
    pid_t other = other_client_start(0);
    other_client_assert_served(other);
    finish(base);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_h2_limits");
    const TTest *const tests[] = {
        hpack_bomb_ends_connection,
        ignored_block_bounded,
        header_list_under_limit_served,
        made_you_reset_goaway,
        content_length_checked,
        zero_timeout_expired,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
