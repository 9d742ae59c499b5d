/* SPDX-License-Identifier: MIT */
/* listen.h: every socket of the daemon, on the libuv loops.
 *
 * A listener is one bound Unix or TCP socket on the main loop; it accepts
 * connections as bare descriptors and hands each to the accept callback
 * (server.c), which passes it to an I/O loop (io_loop.c); there it becomes a
 * listen_sock (listen_sock_open), served by conn.c. A listen_sock reads into its callbacks, writes whole malloc'd buffers one at
 * a time, and closes either at once or gracefully (shut down the write side,
 * drain the peer's bytes until EOF or a linger timeout) so that a last
 * GOAWAY is not lost to a TCP reset. This is the only file with socket I/O.
 */
#ifndef AMPD_LISTEN_H
#define AMPD_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uv.h>

#include "address.h"

/* A connection's writer and reader threads (sock_writer.h, sock_reader.h)
 * run this much nicer than the daemon: they only carry a stream's or a
 * large call's bytes, while the I/O loops, runners and host workers serve
 * every call. On the 2-core machine, beside a neighbour's four streams
 * whose writers took a CPU share equal to theirs, a 16-byte job's calls/s
 * went from 61-211 to 227-597 (bench_tenants), the streams' own GB/s
 * unchanged: they still get every CPU the others leave. */
#define LISTEN_BULK_NICE 10

/* A read straight into a call's memory of this many bytes or more goes to
 * the socket's reader thread (common/sock_reader.h), in reads of
 * LISTEN_READ_DEST_MAX (listen.c): a stream's 1 MiB DATA frames, a large
 * unary request's bulk field. */
#define LISTEN_READER_MIN (256 * 1024)

struct listener;
struct listen_sock;

/* What the listener that took a connection is. */
struct listen_kind {
    bool is_unix;
    bool tls;           /* a tls: address: the socket carries TLS, which conn.c speaks */
    bool health_only;   /* --health-listen: its calls may reach grpc.health.v1 only */
};

/* Called with a freshly accepted, non-blocking connection fd, which the
 * callee owns from then on (listen_sock_open() or close()), and the kind
 * of listener that took it. */
typedef void (*listen_accept_cb)(int fd, struct listen_kind kind, void *ctx);

struct listen_sock_cbs {
    void (*read)(void *ctx, const uint8_t *data, size_t len); /* bytes from the peer */
    /* Optional: a place the next read may go instead of the socket's own
     * buffer, and at most how many bytes (*len); NULL for the buffer. */
    uint8_t *(*read_dest)(void *ctx, size_t *len);
    /* Optional: whether a place of LISTEN_READER_MIN bytes or more that
     * read_dest gives now goes to the socket's reader thread
     * (common/sock_reader.h), to be filled while the loop serves its other
     * sockets. True promises that the place stays valid until its bytes
     * reached read() or listen_sock_read_settle() returned. */
    bool (*reader_wanted)(void *ctx);
    void (*eof)(void *ctx);          /* peer closed or the socket failed */
    void (*written)(void *ctx, int status); /* the oldest write in flight finished (0 or error) */
    void (*closed)(void *ctx);       /* the socket is gone; last callback */
};

/* Who a Unix socket file is for: its permission bits and group (-1: the
 * daemon's own). */
struct listen_unix_access {
    unsigned mode;
    long gid;
};

/* Binds and listens on addr. A stale Unix socket file (nothing accepting
 * on it) is removed first; a live one is an error. A Unix socket file is
 * created with access's mode and group, never wider even for a moment.
 * Returns 0, or -1 with a reason in err. */
int listen_open(uv_loop_t *loop, const struct address *addr, const struct listen_unix_access *access,
                listen_accept_cb cb, void *ctx, struct listener **out, char *err, size_t errlen);

/* A non-blocking TCP socket bound to addr and listening (startup only:
 * the host is looked up, blocking). Returns 0, or -1 with the step that
 * failed and why in err. */
int listen_tcp_fd(const struct address *addr, int *fd, char *err, size_t errlen);

/* A listener on fd, a socket already bound and listening (non-blocking),
 * passed by the service manager (activate.h): its socket file, if any, is
 * not removed on close. Plain h2, no TLS. The fd is the listener's from
 * then on, or closed on failure. Returns 0, or -1 with a reason in err. */
int listen_adopt(uv_loop_t *loop, int fd, bool is_unix, listen_accept_cb cb, void *ctx,
                 struct listener **out, char *err, size_t errlen);

/* A bound, listening, non-blocking Unix socket at path, made as
 * listen_open() makes its Unix listeners (stale file removed, access's mode
 * and group), for a listener that reads it itself (region_sock.c).
 * Returns 0 with the descriptor in *fd, or -1 with a reason in err. */
int listen_unix_fd(const char *path, const struct listen_unix_access *access, int *fd, char *err,
                   size_t errlen);

/* Resolves a --socket-group value (a group name or a numeric gid; "" is
 * the daemon's own, -1) into *gid. Returns 0, or -1 with a reason in err. */
int listen_group(const char *name, long *gid, char *err, size_t errlen);

#define LISTEN_PEER_MAX 64


/* The same answer for an accepted fd (listen_accept_cb), before it
 * becomes a listen_sock. */
void listen_fd_peer(int fd, bool is_unix, char *out, size_t outlen);

/* The peer process's uid and primary gid on a Unix socket (SO_PEERCRED).
 * Returns 0, or -1 on TCP or when the system will not say. */
int listen_fd_cred(int fd, bool is_unix, long *uid, long *gid);

/* True when the TCP listener l is bound to a loopback address (127/8,
 * ::1, or ::ffff:127/104); false for Unix listeners. */
/* Marks l as a --health-listen listener (struct listen_kind), before
 * its loop runs. */
void listen_serve_health_only(struct listener *l);

bool listen_loopback(const struct listener *l);

/* Stops accepting, removes a Unix socket file, and frees the listener once
 * libuv has closed it. */
void listen_close(struct listener *l);

/* An accepted connection fd (listen_accept_cb) as a listen_sock on loop,
 * which must be the calling thread's. The fd is the sock's from then on,
 * or closed on failure. Returns 0, or a uv error. */
int listen_sock_open(uv_loop_t *loop, int fd, bool is_unix, struct listen_sock **out);

/* Starts reading; cbs and ctx must stay valid until closed() ran. */
int listen_sock_start(struct listen_sock *s, const struct listen_sock_cbs *cbs, void *ctx);

/* Before the owner gives up the place of a read it offered: ends the
 * reader's read into it, if one is in flight, and keeps what it got, which
 * reaches read() on the loop's next turn (the socket's bytes stay in
 * order). */
void listen_sock_read_settle(struct listen_sock *s);

/* Bytes one connection may read in one turn of its loop before the loop's
 * other connections get theirs. libuv reads a readable socket up to 32
 * times in a row, and a TCP peer's bulk upload keeps it readable: 8 MiB,
 * milliseconds of copying, ahead of a tiny call on the same loop. On the
 * H200 host, a client's 16 B GPU reverse beside another's sixteen 32 MiB
 * unary uploads had p99 2.2 ms with no turns, 1.1 ms with 1 MiB turns and
 * 0.96 ms with 256 KiB (0.52 ms alone); the host path's 1.9, 1.2 and
 * 0.53 ms; the uploads' rate 0.96-0.98 of alone in each (bench_tenants).
 * A short read ends a turn too, so a Unix socket's reads never wait. */
#define LISTEN_TURN_BYTES (256 * 1024)

/* Most iovecs a write takes at once. */
#define LISTEN_WRITE_IOV 16

/* Whether a write may be handed now: none of the loop's own is in flight
 * and the writer thread (if any) has room for another (SOCK_WRITER_QUEUE:
 * a stream's next frame waits behind the one going out). */
bool listen_sock_can_write(struct listen_sock *s);

/* Writes the n (<= LISTEN_WRITE_IOV) pieces of iov, whose bytes the caller
 * keeps valid until its written() (or closed()); the iovec array itself
 * may go at once. Only while listen_sock_can_write(); writes go out in the
 * order handed, and written() comes once for each, in that order. Returns
 * 0 or a uv error. */
int listen_sock_writev(struct listen_sock *s, const struct iovec *iov, int n);

/* Writes what the socket takes at once of the n (<= LISTEN_WRITE_IOV)
 * pieces of iov (not owned), without waiting: returns the bytes written (0
 * when it would block, when the writer thread still has writes, which
 * must go first, and for a write large enough for the writer thread,
 * which listen_sock_writev() then hands it whole), or a negative uv error.
 * Only while listen_sock_can_write(). */
ssize_t listen_sock_try_writev(struct listen_sock *s, const struct iovec *iov, int n);

/* Closes the socket. linger_ms > 0: shut down the write side (after the
 * writes in flight), discard what the peer still sends until it closes or
 * linger_ms pass, then close. closed() follows either way; read() and eof()
 * are not called after this. */
void listen_sock_close(struct listen_sock *s, unsigned linger_ms);

#endif
