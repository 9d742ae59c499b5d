/* SPDX-License-Identifier: MIT */
/* region.h: clients' shared-memory regions, the registry.
 *
 * A region is a memfd a local client handed over on the region socket
 * (region_sock.c), sealed against shrinking and growing, mapped here once
 * at registration. Jobs then read their input from a region and write
 * their output into one (rpc_jobs.c): the device copies straight between
 * the mapping and device memory, so the bytes never cross a socket.
 *
 * A region belongs to the region-socket connection that registered it (its
 * "client": limits count per client) and may be named by any gRPC call from
 * the same uid on a Unix socket; other uids, and TCP, see no such region.
 * It ends with RELEASE or its client's connection, but is unmapped only
 * when the last job using it lets go (region_put), so a job never touches
 * memory that went away. Seals mean the client cannot truncate the file
 * under a running job (no SIGBUS).
 *
 * Threads: registration, release and clients (region_sock.c) belong to
 * the main loop; region_use() runs on any I/O loop and region_put() on any
 * thread. The set's lock makes a lookup and its reference one step.
 */
#ifndef AMPD_REGION_H
#define AMPD_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "status.h"

struct dev_pinned;
struct region;
struct region_set;
struct region_client;

struct region_limits {
    uint32_t max_per_client;  /* --max-regions */
    uint64_t max_bytes;       /* --max-region-bytes: mapped by every client together */
    uint64_t max_client_bytes; /* --max-client-region-bytes: by one uid, <= max_bytes */
};

/* ndevs: the daemon's devices, each of which may pin a region (region_pin);
 * unpin frees such a pin (dev_pinned_free: passed in, so that the registry
 * does not depend on OpenCL). */
struct region_set *region_set_new(const struct region_limits *limits, size_t ndevs,
                                  void (*unpin)(struct dev_pinned *));
/* The devices opened (the set was made before, with none): regions
 * registered from now on may be pinned for each; earlier ones never are.
 * On the loop that registers regions. */
void region_set_devices(struct region_set *s, size_t ndevs);
/* Frees the set; every client must be gone and every job done. */
void region_set_free(struct region_set *s);

/* Bytes mapped for regions now (registered, or released and still used). */
uint64_t region_set_bytes(const struct region_set *s);

/* Regions registered now, every client's. Any thread. */
size_t region_set_count(struct region_set *s);

/* Bytes of regions charged to uid now (registered, or released and still
 * used). Any thread. */
uint64_t region_set_client_bytes(struct region_set *s, uid_t uid);

/* One region-socket connection, for uid. NULL when out of memory. */
struct region_client *region_client_new(struct region_set *s, uid_t uid);
/* Ends every region of the client (see region_release), frees it. */
void region_client_free(struct region_client *c);

/* Registers the memfd fd (always consumed: closed, or kept by the region):
 * checks that it is a sealed, writable memfd of a size the limits allow,
 * maps it, and gives it the daemon-wide id *id. Returns STATUS_OK, or a
 * status with the reason in err. */
enum status_code region_register(struct region_client *c, int fd, uint64_t *id, uint64_t *size,
                                 char *err, size_t errlen);

/* Ends the registration of c's region id: no new job can name it; it is
 * unmapped once the jobs using it are done. */
enum status_code region_release(struct region_client *c, uint64_t id, char *err, size_t errlen);

/* For a job of a client with uid (-1: not a Unix-socket client): the bytes
 * [offset, offset + length) of region id, checked with overflow-safe
 * arithmetic, and a reference the job gives back with region_put(). field
 * names the request field in messages ("input_region"). Returns STATUS_OK
 * with *r and *p set, or a status with the reason in err. */
enum status_code region_use(struct region_set *s, long uid, uint64_t id, uint64_t offset,
                            uint64_t length, const char *field, struct region **r, uint8_t **p,
                            char *err, size_t errlen);

/* Gives back a reference from region_use(). NULL is a no-op. */
void region_put(struct region *r);

/* Another reference on r, for work that outlives the caller's (region_put). */
void region_ref(struct region *r);

/* Maps in the pages of r's mapping that the memfd holds already (the
 * client wrote them), so that no job faults them one by one; never
 * allocates the others (a sparse memfd stays sparse). Slow (~100 ms per
 * GiB held), so not on the loop. Any thread. Returns true when the memfd
 * held every page: then pinning it for a device (which commits every
 * page) costs no memory the client has not spent. */
bool region_populate(struct region *r);

/* r's size in bytes. */
size_t region_size(const struct region *r);

/* Where device dev_index pins r and copies through: the claimant of its pin
 * (region_pin_claim) calls this once. NVIDIA's driver pins pages for one
 * OpenCL context only: a second context's buffer over the same addresses
 * is made at once and pins nothing (4 H200s: 0.0 ms, and that GPU copied
 * the region at pageable speed). So the first device pins the mapping
 * itself and each further one an alias of it: the same pages mapped again
 * at an address of its own (mremap, old size 0). */
uint8_t *region_pin_view(struct region *r, size_t dev_index);

/* p, an address in r's mapping or any device's alias of it, as seen
 * through device dev_index's view (the mapping where it has none yet: the
 * same bytes, copied at pageable speed). Any thread. */
uint8_t *region_view(const struct region *r, size_t dev_index, uint8_t *p);

/* Claims the making of device dev_index's pin of r: true for the one
 * caller that gets it, who then hands the pin (or NULL, having failed) to
 * region_pin_set. Any thread: pins are made off the loop right after
 * registration (server.c), or by the runner of a job that comes first
 * (dev_pin_region); a second thread never pins the same pages again while
 * the first is at it (~95 ms per GiB): its job copies from pageable pages
 * meanwhile. */
bool region_pin_claim(struct region *r, size_t dev_index);
void region_pin_set(struct region *r, size_t dev_index, struct dev_pinned *p);
/* Whether device dev_index has pinned r's mapping. Any thread. */
bool region_is_pinned(struct region *r, size_t dev_index);

/* Called on the loop with each region just registered (NULL: nothing). */
void region_set_on_register(struct region_set *s, void (*fn)(void *ctx, struct region *r),
                            void *ctx);

#endif
