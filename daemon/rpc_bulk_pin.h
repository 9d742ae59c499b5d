/* SPDX-License-Identifier: MIT */
/* rpc_bulk_pin.h: a unary request's bulk bytes received straight into
 * pinned memory.
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
 * small, not first, or finds no free run is read whole, as before.
 *
 * A run is never more than three quarters of the pool, so streams always
 * find buffers, and never waits: the pool is the daemon's fixed pinned
 * memory, not the client's budget, which holds only the rest.
 */
#ifndef AMPD_RPC_BULK_PIN_H
#define AMPD_RPC_BULK_PIN_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rpc_call;
struct rpc_pin;
struct job;

/* piece_start() for a unary call of a method whose bulk field is bulk:
 * the offset of the field's bytes in the message, or 0 to read it whole. */
size_t rpc_bulk_pin_start(struct rpc_call *rc, const ProtobufCFieldDescriptor *bulk,
                          const uint8_t *head, size_t msg_len);

/* piece() and piece_dest() for it. The last piece decodes the request
 * (rc->req) or fails the call. */
size_t rpc_bulk_pin_piece(struct rpc_call *rc, const uint8_t *data, size_t n);
uint8_t *rpc_bulk_pin_dest(struct rpc_call *rc, size_t *room);

/* Makes rc's pinned bulk bytes the job's input (job->in_mem, freed with
 * rpc_bulk_pin_free). False when rc has none. */
bool rpc_bulk_pin_give(struct rpc_call *rc, struct job *job);

/* Returns the run and frees the rest; NULL is a no-op. Any thread. */
void rpc_bulk_pin_free(void *pin);

#endif
