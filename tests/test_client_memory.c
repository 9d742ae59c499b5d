/* SPDX-License-Identifier: MIT */
/* test_client_memory.c: each client's share of the memory held for calls
 * (--max-client-memory, issue 13 item 4), over real TCP sockets.
 *
 * A client fills its share with uploads it stalls a little before their
 * end (each holds ~3 MiB in the daemon, on two connections); its next
 * call, on a new connection or beside another client's on one connection,
 * gets RESOURCE_EXHAUSTED naming --max-client-memory and the client, while
 * the other client's calls are served. Once its connections close, Status
 * shows no byte held and it is served again. A client is its token's name
 * (one connection may carry calls of two tokens), else its address
 * (127.0.0.2 beside 127.0.0.1). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define CONN_MEMORY "8388608"          /* 8 MiB: two stalled uploads */
#define CLIENT_MEMORY "10485760"       /* 10 MiB: three stalled uploads */
#define STALL_DATA (3u * 1024 * 1024 - 64 * 1024)  /* a Reverse's data: ~3 MiB held */
#define STALL_LEFT 1024                /* bytes of it never sent */
#define SERVED_DATA (1536u * 1024) /* more than a full share leaves, 1.2 MiB; room for 3 on a connection */
#define ALICE "alice-token-0123456789"
#define BOB "bob-token-9876543210"
#define IO_MS 20000

static struct daemon_proc ampd;
static int port;
static char tcp_address[64];
static char token_dir[] = "/tmp/ampd-client-memory-XXXXXX";
static char token_path[sizeof token_dir + 16];

static void start(bool tokens)
{
    port = hostile_free_port();
    snprintf(tcp_address, sizeof tcp_address, "127.0.0.1:%d", port);
    ck_assert_ptr_nonnull(mkdtemp(token_dir));
    snprintf(token_path, sizeof token_path, "%s/tokens", token_dir);
    FILE *f = fopen(token_path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "alice %s\nbob %s\n", ALICE, BOB);
    fclose(f);
    ck_assert_int_eq(chmod(token_path, 0600), 0);
    /* No --request-timeout: the stalled uploads stay until their client goes. */
    const char *args[] = { "--listen", tcp_address, "--request-timeout", "0",
                           "--max-job-memory", "67108864", "--max-connection-memory", CONN_MEMORY,
                           "--max-client-memory", CLIENT_MEMORY,
                           tokens ? "--token-file" : "--tcp-require-token",
                           tokens ? token_path : "off", NULL };
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
}

static void stop(void)
{
    ck_assert_int_eq(daemon_stop(&ampd), 0);
    unlink(token_path);
    rmdir(token_dir);
    strcpy(token_dir + strlen(token_dir) - 6, "XXXXXX");
}

/* A ReverseRequest of data_len bytes, with its gRPC prefix: *len bytes.
 * Its device field ("": the default) comes first, so that the daemon reads
 * it whole, held in the budgets, and not into pinned staging memory
 * (rpc_bulk_rx.h: only a message that begins with its data goes there). */
static uint8_t *reverse_request(size_t data_len, size_t *len)
{
    uint8_t head[16];
    size_t h = 0;
    head[h++] = 0x12;   /* field 2, device: "" */
    head[h++] = 0x00;
    head[h++] = 0x0a;   /* field 1, data */
    for (size_t v = data_len; ; v >>= 7) {
        head[h++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
        if (v < 0x80)
            break;
    }
    *len = GRPC_FRAME_HEADER + h + data_len;
    uint8_t *buf = malloc(*len);
    ck_assert_ptr_nonnull(buf);
    grpc_frame_header(buf, h + data_len);
    memcpy(buf + GRPC_FRAME_HEADER, head, h);
    memset(buf + GRPC_FRAME_HEADER + h, 'x', data_len);
    return buf;
}

/* One connection of a client: its calls carry auth ("Bearer TOKEN" or
 * NULL), from source address src (NULL: the kernel's). */
struct client_conn {
    int fd;
    struct h2c *c;
};

static void conn_open(struct client_conn *k, const char *src, const char *auth)
{
    k->fd = hostile_connect_tcp(src, port);
    ck_assert_msg(k->fd >= 0, "connecting from %s to port %d: %s", src ? src : "any", port,
                  strerror(errno));
    k->c = h2c_new();
    h2c_set_authorization(k->c, auth);
}

static void conn_close(struct client_conn *k)
{
    close(k->fd);
    h2c_free(k->c);
}

static bool all_sent(struct h2c *c, void *arg)
{
    return h2c_body_unsent(c, *(int32_t *)arg) == 0;
}

static uint64_t held_bytes(void)
{
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(hostile_status(ampd.address, &st), 0);
    return st.held_bytes;
}

/* Starts a Reverse on k whose request stops STALL_LEFT bytes before its
 * end, and waits until the daemon holds `held` bytes in all, which it
 * does once it has read what was sent. */
static int32_t stall(struct client_conn *k, uint64_t held)
{
    size_t len;
    uint8_t *req = reverse_request(STALL_DATA, &len);
    int32_t id = h2c_request_open(k->c, "/amp.v1.Amp/Reverse", req, len - STALL_LEFT);
    free(req);
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(h2c_run_until(k->c, k->fd, IO_MS, all_sent, &id), 0);
    ck_assert_int_eq(h2c_flush(k->c, k->fd), 0);
    long long deadline = hostile_now_ms() + IO_MS;
    uint64_t now;
    while ((now = held_bytes()) < held) {
        ck_assert_msg(hostile_now_ms() < deadline, "%llu bytes held, want %llu",
                      (unsigned long long)now, (unsigned long long)held);
        hostile_sleep_ms(20);
    }
    return id;
}

static bool answered(struct h2c *c, void *arg)
{
    const struct h2c_result *r = h2c_result(c, *(int32_t *)arg);
    return r && r->grpc_status >= 0;
}

static const char *decoded(const struct h2c_result *r)
{
    static char msg[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, msg, sizeof msg);
    return msg;
}

/* Call id on k is answered RESOURCE_EXHAUSTED naming the client's share. */
static void assert_over_share(struct client_conn *k, int32_t id, const char *client)
{
    ck_assert_int_eq(h2c_run_until(k->c, k->fd, IO_MS, answered, &id), 0);
    const struct h2c_result *r = h2c_result(k->c, id);
    ck_assert_msg(r->grpc_status == STATUS_RESOURCE_EXHAUSTED, "status %d: %s", r->grpc_status,
                  decoded(r));
    ck_assert_msg(strstr(decoded(r), "--max-client-memory (" CLIENT_MEMORY ")"), "%s", decoded(r));
    ck_assert_msg(strstr(decoded(r), client), "no %s in: %s", client, decoded(r));
}

/* A whole Reverse of SERVED_DATA on k: answered OK, its reply reversed. */
static void assert_served(struct client_conn *k)
{
    size_t len;
    uint8_t *req = reverse_request(SERVED_DATA, &len);
    int32_t id = h2c_request(k->c, "/amp.v1.Amp/Reverse", NULL, req, len, true);
    free(req);
    ck_assert_int_eq(h2c_run_until(k->c, k->fd, IO_MS, answered, &id), 0);
    const struct h2c_result *r = h2c_result(k->c, id);
    ck_assert_msg(r->grpc_status == STATUS_OK, "status %d: %s", r->grpc_status, decoded(r));
    const uint8_t *m;
    size_t mlen;
    ck_assert_int_eq(h2c_message(r, &m, &mlen), 0);
    ck_assert_uint_gt(mlen, SERVED_DATA);
}

/* src and auth's client fills its share (3 stalls on 2 connections), then
 * its next call is refused naming it while other's are served, on a new
 * connection and beside it on one (with tokens, a connection can carry
 * both). After it goes, nothing is held and it is served again. */
static void fill_share(const char *src, const char *auth, const char *client,
                       const char *other_src, const char *other_auth, bool mixed)
{
    struct client_conn a[2], late, other;
    conn_open(&a[0], src, auth);
    conn_open(&a[1], src, auth);
    int32_t held[3];
    for (int i = 0; i < 3; i++)
        held[i] = stall(&a[i == 2], (i + 1) * (uint64_t)STALL_DATA);

    /* One more stall, on a third connection of its own: over its share. */
    conn_open(&late, src, auth);
    size_t len;
    uint8_t *req = reverse_request(STALL_DATA, &len);
    int32_t id = h2c_request_open(late.c, "/amp.v1.Amp/Reverse", req, len - STALL_LEFT);
    free(req);
    assert_over_share(&late, id, client);

    /* The other client, on a connection of its own, is served. */
    conn_open(&other, other_src, other_auth);
    assert_served(&other);
    conn_close(&other);

    if (mixed) {   /* one connection, a call of each: the call's token decides */
        req = reverse_request(SERVED_DATA, &len);
        id = h2c_request(late.c, "/amp.v1.Amp/Reverse", NULL, req, len, true);
        free(req);
        assert_over_share(&late, id, client);
        h2c_set_authorization(late.c, other_auth);
        assert_served(&late);
    }
    conn_close(&late);

    /* The stalled uploads are still held, unanswered. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_lt(h2c_result(a[i == 2].c, held[i])->grpc_status, 0);
    conn_close(&a[0]);
    conn_close(&a[1]);
    ck_assert_msg(hostile_wait_quiet(ampd.address, 1, IO_MS), "still held: %llu bytes",
                  (unsigned long long)held_bytes());
    conn_open(&late, src, auth);
    assert_served(&late);
    conn_close(&late);
}

START_TEST(token_share)
{
    start(true);
    fill_share(NULL, "Bearer " ALICE, "by token alice", NULL, "Bearer " BOB, true);
    stop();
}
END_TEST

START_TEST(address_share)
{
    start(false);
    fill_share("127.0.0.2", NULL, "by address 127.0.0.2", "127.0.0.1", NULL, false);
    stop();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_memory");
    TCase *tc = tcase_create("daemon");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, token_share);
    tcase_add_test(tc, address_share);
    suite_add_tcase(s, tc);
    return check_run(s, CK_FORK_GETENV);
}
