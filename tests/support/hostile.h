/* SPDX-License-Identifier: MIT */
/* hostile.h: what the hostile-client tests (tests/test_hostile_*.c) share.
 *
 * Those tests attack a real ampd (daemon_proc.h) over real sockets and then
 * check three things every time: a well-behaved libampclient call is still
 * served, the daemon's resident memory is back near what it was before the
 * attack, and SIGTERM still ends it with status 0. This module holds the
 * pieces for that: raw sockets (Unix, or TCP from a chosen source address
 * so that one test can be two peers), hand-built HTTP/2 frames, a reader
 * that picks GOAWAY out of whatever the daemon sends back, VmRSS from
 * /proc, and the probe call.
 *
 * Functions that fail a test on their own say so; the rest return a value
 * the test asserts on, so that the assertion names what went wrong.
 */
#ifndef AMP_TEST_HOSTILE_H
#define AMP_TEST_HOSTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "amp.h"
#include "daemon_proc.h"

/* Slack on top of a baseline for "memory is back": malloc keeps some of
 * what it freed, so only a gross leak or a held buffer should fail. */
#define HOSTILE_RSS_SLACK_KB (64 * 1024)
/* How long a test waits for memory to come back after an attack. */
#define HOSTILE_SETTLE_MS 8000
/* Upper bound on one I/O wait in these tests (a hung daemon fails fast). */
#define HOSTILE_IO_MS 15000

/* HTTP/2 frame types and error codes used by the tests (RFC 9113). */
enum {
    HOSTILE_DATA = 0x0, HOSTILE_HEADERS = 0x1, HOSTILE_RST_STREAM = 0x3,
    HOSTILE_SETTINGS = 0x4, HOSTILE_PING = 0x6, HOSTILE_GOAWAY = 0x7,
    HOSTILE_WINDOW_UPDATE = 0x8, HOSTILE_CONTINUATION = 0x9,
};
enum {
    HOSTILE_FLAG_END_STREAM = 0x1, HOSTILE_FLAG_ACK = 0x1, HOSTILE_FLAG_END_HEADERS = 0x4,
};
enum {
    HOSTILE_NO_ERROR = 0x0, HOSTILE_PROTOCOL_ERROR = 0x1, HOSTILE_FLOW_CONTROL_ERROR = 0x3,
    HOSTILE_FRAME_SIZE_ERROR = 0x6, HOSTILE_CANCEL = 0x8, HOSTILE_ENHANCE_YOUR_CALM = 0xb,
};

/* The 24-byte client connection preface. */
extern const uint8_t hostile_preface[24];

/* Starts ampd with args (NULL-terminated, may be NULL) in an environment
 * where ASan's quarantine is small (glibc's heap is left as the daemon sets
 * it), makes one probe call so that lazily built
 * state exists before the baseline is taken, and returns that baseline
 * VmRSS in KiB. Fails the test if ampd does not start or the probe fails. */
long hostile_start(struct daemon_proc *d, const char *const *args);

/* Runs the job shapes an attack will cause, so that what the daemon and
 * its OpenCL runtime keep for reuse (a stream's staging buffers, device
 * buffers PoCL caches: VmRSS grows by up to ~150 MiB over the first dozen
 * 16 MiB fills and then stays) is there before the baseline: `fills` Fill
 * calls of fill_count int32 and, if stream, one 8 MiB Stream transform.
 * Returns the new baseline VmRSS in KiB. Fails the test if a call fails. */
long hostile_warm(const struct daemon_proc *d, uint64_t fill_count, int fills, bool stream);

/* VmRSS of pid in KiB, or -1 if it cannot be read. */
long hostile_rss_kb(pid_t pid);

/* Polls VmRSS until it is at most bound_kb or timeout_ms pass; returns
 * the last value read. */
long hostile_rss_settle_kb(pid_t pid, long bound_kb, int timeout_ms);

/* One well-behaved call on a new connection to address: amp_reverse of a
 * few KiB with a 10 s deadline, the reply checked byte for byte. Returns
 * 0, or the AMP_E* code with the daemon's message copied into why. */
int hostile_probe(const char *address, char *why, size_t whylen);

/* Fails the test unless hostile_probe(address) succeeds. */
void hostile_assert_served(const char *address);

/* The uid hostile_other_start() runs as: nobody. */
#define HOSTILE_OTHER_UID 65534

/* A client of another uid, served while a test attacks: a child that
 * drops to HOSTILE_OTHER_UID and makes `probes` hostile_probe() calls to
 * d, one after another. d's directory is opened to it, so d must run with
 * --socket-mode 0666. Returns the child's pid, or 0 where the test cannot
 * change uid (not root): that part is then skipped. */
pid_t hostile_other_start(const struct daemon_proc *d, int probes);

/* Waits for hostile_other_start's child (0: none); fails the test unless
 * every one of its calls was served. */
void hostile_other_assert_served(pid_t pid);

/* Descriptors pid has open (entries of /proc/PID/fd), or -1. */
long hostile_fd_count(pid_t pid);

/* Fails the test unless d's open descriptors come back to at most
 * baseline within HOSTILE_SETTLE_MS (connections close asynchronously). */
void hostile_assert_fds_back(const struct daemon_proc *d, long baseline);

/* Fails the test unless VmRSS of d comes back to baseline_kb +
 * HOSTILE_RSS_SLACK_KB within HOSTILE_SETTLE_MS. */
void hostile_assert_rss_back(const struct daemon_proc *d, long baseline_kb);

/* The daemon's counters over a new connection: 0 or an AMP_E* code. */
int hostile_status(const char *address, amp_daemon_status *st);

/* Polls the Status RPC until at most `connections` connections (the
 * status call's own included), no job and no held byte (every
 * --max-job-memory budget given back) are left, or timeout_ms pass.
 * Returns true when that was reached. */
bool hostile_wait_quiet(const char *address, uint32_t connections, int timeout_ms);

/* A blocking Unix-socket connection, or -1. */
int hostile_connect_unix(const char *path);

/* A blocking TCP connection to 127.0.0.1:port from source address src
 * ("127.0.0.2" makes the daemon see another peer; NULL: the kernel's
 * choice), or -1 with errno saying why. */
int hostile_connect_tcp(const char *src, int port);

/* A TCP port free on every address a moment ago, below the kernel's
 * ephemeral range so that no connect() takes it meanwhile (the Python
 * tests' free_port draws from the same range). */
#define HOSTILE_PORT_LOW 20000
#define HOSTILE_PORT_HIGH 32768
int hostile_free_port(void);

/* Sends all of p (MSG_NOSIGNAL). 0, or -1 once the peer is gone. */
int hostile_send(int fd, const void *p, size_t n);

/* Sends at most n bytes without blocking; returns how many went (0 when
 * the socket buffer is full) or -1 once the peer is gone. */
ssize_t hostile_send_some(int fd, const void *p, size_t n);

/* Writes a 9-byte HTTP/2 frame header into out; returns 9. */
size_t hostile_frame(uint8_t *out, uint32_t len, uint8_t type, uint8_t flags, uint32_t stream_id);

/* The preface and an empty SETTINGS frame into out (33 bytes); returns
 * the length. */
size_t hostile_hello(uint8_t *out);

/* An HPACK block (no dynamic table, so it can be sent on any connection
 * in any order) of a gRPC POST to path, with extra_pad header bytes of a
 * filler header "x-pad" added (0: none); path NULL: the x-pad header
 * alone (a CONTINUATION's worth). Returns its length, or 0 if cap is too
 * small. */
size_t hostile_request_block(uint8_t *out, size_t cap, const char *path, size_t extra_pad);

/* What the daemon sent on a raw connection, frame by frame. */
struct hostile_reader {
    uint8_t buf[1 << 16];   /* bytes of an incomplete frame; len <= sizeof buf */
    size_t len;
    size_t skip;            /* bytes of an oversize frame still to discard */
    bool eof;               /* the daemon closed (or reset) the connection */
    bool goaway;            /* a GOAWAY arrived: code and debug hold it */
    uint32_t goaway_code;
    char goaway_debug[256];
    uint32_t rst_streams;   /* RST_STREAM frames seen */
    uint32_t ping_acks;
    uint32_t frames;
};

void hostile_reader_init(struct hostile_reader *r);

/* Waits up to timeout_ms for bytes on fd and parses what arrived. Returns
 * 1 once the connection has ended (r->eof), else 0. */
int hostile_reader_pump(struct hostile_reader *r, int fd, int timeout_ms);

/* Pumps until the connection ends or timeout_ms pass. Returns the
 * milliseconds it took, or -1 on timeout. */
long hostile_reader_until_eof(struct hostile_reader *r, int fd, int timeout_ms);

/* Monotonic milliseconds. */
long long hostile_now_ms(void);

/* Sleeps ms milliseconds. */
void hostile_sleep_ms(int ms);

#endif
