/* SPDX-License-Identifier: MIT */
/* rpc_bulk_rx.h: a unary request's bulk field received in pieces,
 * straight into pinned memory where a run is free, else into host memory.
 *
 * A 32 MiB Transform on the H100 spent about a quarter of its time in the
 * device copies of its input and output, made from and to the request's
 * pageable buffer at 7-11 GB/s where pinned memory moves 50. So when a
 * unary request message begins with its bulk field (encoders write fields
 * in number order, and `data` is field 1) and that field is at least a
 * quarter of a staging buffer, h2 hands the message over in pieces (h2.h
 * piece_start): the field's bytes go into a run of the default device's
 * staging buffers (staging_get_run), read from the socket straight there
 * where the connection can (piece_dest), and the bytes after the field
 * into a small buffer, decoded like any request once the message is whole
 * (rpc.c, rpc_bulk.h: a later `data` field still wins, and the run goes
 * back). The job then copies from pinned memory, and a job whose one data
 * step keeps the input's length writes its output back into the same run
 * (rpc_jobs.c), from where the reply leaves. A request whose bulk field is
 * small or not first is read whole, as before.
 *
 * A run is never more than three quarters of the pool, so streams always
 * find buffers, and never waits: the pool is the daemon's fixed pinned
 * memory, not the client's budget, which holds only the rest. Where no
 * run is free the field is taken in pieces all the same, into host memory
 * counted in the client's budget like a whole message: pieces are what
 * the socket's reader thread can fill (listen.h), so a neighbour's 32 MiB
 * request is not copied by the I/O loop that serves a tiny call beside it.
 */
#ifndef AMPD_RPC_BULK_RX_H
#define AMPD_RPC_BULK_RX_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct h2_call;
struct job;
struct rpc_bulk_rx;
struct sched_port;

/* piece_start() for a unary call (h2 call) of a method whose bulk field is
 * bulk, on a loop whose scheduler port is sched: the offset of the field's
 * bytes in the message, with *out where they go (the call holds the rest's
 * bytes and rpc_bulk_rx_held's); or 0 (*out untouched) to read the
 * message whole. */
size_t rpc_bulk_rx_start(struct rpc_bulk_rx **out, struct sched_port *sched, struct h2_call *call,
                         const ProtobufCFieldDescriptor *bulk, const uint8_t *head, size_t msg_len);

/* The field's bytes that count in the client's budget: its length in
 * host memory, 0 in a pinned run (or for NULL). */
uint64_t rpc_bulk_rx_held(const struct rpc_bulk_rx *f);

/* piece() and piece_dest() for it. piece returns true once the message is
 * whole: the caller then decodes what follows the field, taken with
 * rpc_bulk_rx_rest (malloc'd, *len bytes, now the caller's). */
bool rpc_bulk_rx_piece(struct rpc_bulk_rx *f, const uint8_t *data, size_t n);
uint8_t *rpc_bulk_rx_rest(struct rpc_bulk_rx *f, size_t *len);
uint8_t *rpc_bulk_rx_dest(struct rpc_bulk_rx *f, size_t *room);

/* Makes the bulk bytes in *slot the job's input (job->in_mem, freed
 * with rpc_bulk_rx_free) and empties the slot. False when it holds none. */
bool rpc_bulk_rx_give(struct rpc_bulk_rx **slot, struct job *job);

/* Returns the run and frees the rest; NULL is a no-op. Any thread. */
void rpc_bulk_rx_free(void *f);

#endif
