/* SPDX-License-Identifier: MIT */
/* fuzz_regions.c: the region socket's line protocol (region_sock.c over
 * region.c), with descriptors attached.
 *
 * recvmsg() and SCM_RIGHTS are the protocol, so this one goes through real
 * sockets: a listener on an abstract Unix address, adopted with
 * region_listen_adopt() on a loop run here, and client connections that
 * send the input's pieces with what they name attached. Input: pieces
 *
 *     ctrl (1 byte) | length (1 byte) | bytes
 *
 * | bits | meaning |
 * |------|---------|
 * | 0-2 | attached: 0 none, 1 a sealed memfd, 2 an unsealed one, 3 one sealed against writing, 4 two sealed, 5 five sealed (past the per-connection cap), 6 a pipe, 7 an empty sealed memfd |
 * | 3 | the client reads no answers after this piece |
 * | 4 | the piece goes on a new connection (at most FUZZ_REGIONS_CONNS) |
 * | 5 | the current connection closes after this piece |
 * | 6-7 | a memfd's size: (1 + value) pages |
 *
 * Limits are small (4 regions per connection, 8 pages per uid, 16 pages in
 * all) so that every refusal is near. Invariants (abort): every answer is
 * a line "OK ..." or "ERROR <STATUS> ..."; once the clients are gone, no
 * region is registered, no byte is charged, and the daemon holds no
 * descriptor more than before the input.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "region.h"
#include "region_sock.h"

#define FUZZ_REGIONS_CONNS 4          /* connections open at once */
#define FUZZ_REGIONS_ATTACH_MAX 5     /* descriptors one piece attaches */
#define FUZZ_REGIONS_PAGE 4096
#define FUZZ_REGIONS_TURNS 8          /* loop turns after a piece */
#define FUZZ_REGIONS_SETTLE_TURNS 64  /* at the end, until the connections are gone */
#define FUZZ_REGIONS_ANSWER_MAX 4096

static uv_loop_t fuzz_regions_loop;
static struct region_set *fuzz_regions_set;
static struct sockaddr_un fuzz_regions_addr;
static socklen_t fuzz_regions_addrlen;

static void fuzz_regions_fail(const char *what)
{
    fprintf(stderr, "fuzz_regions: %s\n", what);
    abort();
}

static void fuzz_regions_init(void)
{
    uv_loop_init(&fuzz_regions_loop);
    struct region_limits rl = { .max_per_client = 4, .max_bytes = 16 * FUZZ_REGIONS_PAGE,
                                .max_client_bytes = 8 * FUZZ_REGIONS_PAGE };
    fuzz_regions_set = region_set_new(&rl, 0, NULL);
    fuzz_regions_addr.sun_family = AF_UNIX;
    /* Abstract: nothing on disk, one per process (libFuzzer's -jobs). */
    int n = snprintf(fuzz_regions_addr.sun_path + 1, sizeof fuzz_regions_addr.sun_path - 1,
                     "ampd-fuzz-regions-%d", (int)getpid());
    fuzz_regions_addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&fuzz_regions_addr, fuzz_regions_addrlen) != 0 ||
        listen(fd, FUZZ_REGIONS_CONNS * 4) != 0)
        fuzz_regions_fail("cannot listen");
    struct region_sock_limits sl = { .max_connections = FUZZ_REGIONS_CONNS,
                                     .max_peer_connections = FUZZ_REGIONS_CONNS };
    struct region_listener *l;
    char err[256];
    if (!fuzz_regions_set ||
        region_listen_adopt(&fuzz_regions_loop, fd, fuzz_regions_set, &sl, &l, err, sizeof err))
        fuzz_regions_fail(err);
}

static int fuzz_regions_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        fuzz_regions_fail("cannot list /proc/self/fd");
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int fuzz_regions_memfd(size_t size, unsigned seals)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
        fuzz_regions_fail("memfd");
    if (seals && fcntl(fd, F_ADD_SEALS, seals) != 0)
        fuzz_regions_fail("seals");
    return fd;
}

/* The descriptors a piece's ctrl names into fds; how many. */
static size_t fuzz_regions_attach(uint8_t ctrl, int *fds)
{
    const unsigned sealed = F_SEAL_SHRINK | F_SEAL_GROW;
    size_t size = (size_t)(1 + (ctrl >> 6)) * FUZZ_REGIONS_PAGE;
    switch (ctrl & 7) {
    case 1:
        fds[0] = fuzz_regions_memfd(size, sealed);
        return 1;
    case 2:
        fds[0] = fuzz_regions_memfd(size, 0);
        return 1;
    case 3:
        fds[0] = fuzz_regions_memfd(size, sealed | F_SEAL_WRITE);
        return 1;
    case 4:
    case 5: {
        size_t n = (ctrl & 7) == 4 ? 2 : FUZZ_REGIONS_ATTACH_MAX;
        for (size_t i = 0; i < n; i++)
            fds[i] = fuzz_regions_memfd(size, sealed);
        return n;
    }
    case 6: {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0)
            fuzz_regions_fail("pipe");
        close(p[1]);
        fds[0] = p[0];
        return 1;
    }
    case 7:
        fds[0] = fuzz_regions_memfd(0, sealed);
        return 1;
    default:
        return 0;
    }
}

static void fuzz_regions_send(int s, const uint8_t *data, size_t len, const int *fds, size_t nfds)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * FUZZ_REGIONS_ATTACH_MAX)];
    } ctl;
    struct iovec iov = { (void *)data, len };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds) {
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(h), fds, sizeof(int) * nfds);
    }
    if (len || nfds)   /* a refused or closed connection: the daemon has gone, fine */
        (void)sendmsg(s, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Reads the answers waiting on s and checks each line's shape. */
static void fuzz_regions_answers(int s, char *buf, size_t *len)
{
    for (;;) {
        ssize_t n = recv(s, buf + *len, FUZZ_REGIONS_ANSWER_MAX - 1 - *len, MSG_DONTWAIT);
        if (n <= 0)
            break;
        *len += (size_t)n;
        char *nl;
        while ((nl = memchr(buf, '\n', *len))) {
            *nl = '\0';
            if (strncmp(buf, "OK ", 3) != 0 && strncmp(buf, "ERROR ", 6) != 0)
                fuzz_regions_fail("an answer is neither OK nor ERROR");
            size_t used = (size_t)(nl - buf) + 1;
            memmove(buf, nl + 1, *len - used);
            *len -= used;
        }
        if (*len == FUZZ_REGIONS_ANSWER_MAX - 1)
            fuzz_regions_fail("an answer line is too long");
    }
}

static void fuzz_regions_turns(int n)
{
    for (int i = 0; i < n; i++)
        uv_run(&fuzz_regions_loop, UV_RUN_NOWAIT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        fuzz_regions_init();
        ready = 1;
    }
    int before = fuzz_regions_open_fds();
    int conns[FUZZ_REGIONS_CONNS];
    size_t nconns = 0;
    static char answers[FUZZ_REGIONS_ANSWER_MAX];
    size_t alen = 0;
    int reading = 1;
    for (size_t at = 0; at + 2 <= size;) {
        uint8_t ctrl = data[at];
        size_t len = data[at + 1];
        at += 2;
        if (len > size - at)
            len = size - at;
        if (!nconns || ((ctrl & 0x10) && nconns < FUZZ_REGIONS_CONNS)) {
            int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (s < 0 || connect(s, (struct sockaddr *)&fuzz_regions_addr,
                                 fuzz_regions_addrlen) != 0)
                fuzz_regions_fail("cannot connect");
            conns[nconns++] = s;
            alen = 0;
        }
        int fds[FUZZ_REGIONS_ATTACH_MAX];
        size_t nfds = fuzz_regions_attach(ctrl, fds);
        int s = conns[nconns - 1];
        fuzz_regions_send(s, data + at, len, fds, nfds);
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);   /* the daemon has its own, or none */
        at += len;
        fuzz_regions_turns(FUZZ_REGIONS_TURNS);
        if (ctrl & 0x08)
            reading = 0;
        if (reading)
            fuzz_regions_answers(s, answers, &alen);
        if (ctrl & 0x20) {
            close(s);
            nconns--;
            alen = 0;
        }
    }
    for (size_t i = 0; i < nconns; i++)
        close(conns[i]);
    /* Every connection sees its EOF and closes (a turn), then its handle
     * (another). */
    for (int i = 0; i < FUZZ_REGIONS_SETTLE_TURNS && fuzz_regions_open_fds() > before; i++)
        fuzz_regions_turns(1);
    if (fuzz_regions_open_fds() > before)
        fuzz_regions_fail("the daemon holds descriptors after its clients went");
    if (region_set_count(fuzz_regions_set) || region_set_bytes(fuzz_regions_set) ||
        region_set_client_bytes(fuzz_regions_set, getuid()))
        fuzz_regions_fail("regions outlive their clients");
    return 0;
}
