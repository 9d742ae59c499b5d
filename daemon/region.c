/* SPDX-License-Identifier: MIT */
/* region.c: the registry of clients' shared-memory regions (region.h). */
#define _GNU_SOURCE
#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Linux 5.14; older headers lack the name. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Pages region_populate asks mincore about at once (its vector, on the stack). */
#define REGION_POPULATE_WINDOW 4096

struct region {
    struct region_set *set;
    struct region_client *client;  /* NULL once released: no job may name it */
    struct region_owner *owner;    /* charged its size until unmapped (region_put) */
    struct region *prev, *next;    /* set->head, while registered */
    uint64_t id;
    uid_t uid;
    uint8_t *map;
    size_t size;
    atomic_uint refs;              /* the registration's, and one per job using it */
    _Atomic(struct dev_pinned *) *pins; /* npins slots (region_pin_claim) */
    _Atomic(uint8_t *) *views;     /* npins slots: a device's alias of map, or NULL (region_pin_view) */
    atomic_bool map_pinned;        /* map itself is some device's view */
    size_t npins;                  /* set->ndevs when registered: 0 before the devices opened */
};

/* A uid's regions, the client (as client_share.h names Unix clients) that
 * --max-client-region-bytes bounds: a job or a device's pin may commit every
 * page of a region, so its whole size is charged, released ones included
 * until unmapped. */
struct region_owner {
    struct region_owner *next;
    uid_t uid;
    uint64_t bytes;                /* > 0 while listed: freed when it falls to 0 */
};

struct region_set {
    struct region_limits limits;
    /* Guards head, owners, next_id and the list links: region_sock.c
     * registers and releases on the main loop while calls on every I/O loop
     * look regions up (region_use) and jobs let them go (region_put). */
    pthread_mutex_t lock;
    struct region *head;           /* registered regions */
    struct region_owner *owners;   /* uids with bytes charged */
    uint64_t next_id;
    size_t ndevs;                  /* the loop's (region_set_devices); regions keep their own */
    void (*unpin)(struct dev_pinned *);
    void (*on_register)(void *ctx, struct region *r);
    void *on_register_ctx;
    atomic_uint_fast64_t bytes;    /* mapped now, released ones included */
};

struct region_client {
    struct region_set *set;
    uid_t uid;
    uint32_t count;                /* regions registered and not released */
};

static struct dev_pinned *region_pinned(struct region *r, size_t dev_index);

struct region_set *region_set_new(const struct region_limits *limits, size_t ndevs,
                                  void (*unpin)(struct dev_pinned *))
{
    struct region_set *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->limits = *limits;
    s->ndevs = ndevs;
    s->unpin = unpin;
    s->next_id = 1;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void region_set_devices(struct region_set *s, size_t ndevs)
{
    s->ndevs = ndevs;
}

void region_set_free(struct region_set *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

uint64_t region_set_bytes(const struct region_set *s)
{
    return atomic_load(&s->bytes);
}

size_t region_set_count(struct region_set *s)
{
    size_t n = 0;
    pthread_mutex_lock(&s->lock);
    for (struct region *r = s->head; r; r = r->next)
        n++;
    pthread_mutex_unlock(&s->lock);
    return n;
}

struct region_client *region_client_new(struct region_set *s, uid_t uid)
{
    struct region_client *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->set = s;
    c->uid = uid;
    return c;
}

/* uid's charge, made when absent (with s->lock held); NULL when out of memory. */
static struct region_owner *region_owner_get(struct region_set *s, uid_t uid)
{
    for (struct region_owner *o = s->owners; o; o = o->next)
        if (o->uid == uid)
            return o;
    struct region_owner *o = calloc(1, sizeof(*o));
    if (o) {
        o->uid = uid;
        o->next = s->owners;
        s->owners = o;
    }
    return o;
}

/* Takes bytes off o's charge (with s->lock held), freeing it at 0. */
static void region_owner_uncharge_locked(struct region_set *s, struct region_owner *o,
                                         uint64_t bytes)
{
    o->bytes -= bytes;
    if (o->bytes)
        return;
    for (struct region_owner **p = &s->owners; *p; p = &(*p)->next) {
        if (*p == o) {
            *p = o->next;
            break;
        }
    }
    free(o);
}

static void region_owner_uncharge(struct region_set *s, struct region_owner *o, uint64_t bytes)
{
    pthread_mutex_lock(&s->lock);
    region_owner_uncharge_locked(s, o, bytes);
    pthread_mutex_unlock(&s->lock);
}

uint64_t region_set_client_bytes(struct region_set *s, uid_t uid)
{
    uint64_t n = 0;
    pthread_mutex_lock(&s->lock);
    for (struct region_owner *o = s->owners; o; o = o->next)
        if (o->uid == uid)
            n = o->bytes;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void region_put(struct region *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (size_t i = 0; i < r->npins; i++) {
        struct dev_pinned *p = region_pinned(r, i);   /* no claim outlives its reference */
        if (p)
            r->set->unpin(p);   /* before the pages it pins go */
        uint8_t *alias = atomic_load(&r->views[i]);
        if (alias)
            munmap(alias, r->size);
    }
    free((void *)r->pins);
    free((void *)r->views);
    munmap(r->map, r->size);
    region_owner_uncharge(r->set, r->owner, r->size);
    atomic_fetch_sub(&r->set->bytes, r->size);
    free(r);
}

/* Takes r off the list (with the set's lock held); the caller puts the
 * registration's reference once the lock is let go. */
static void region_unlink(struct region *r)
{
    struct region_set *s = r->set;
    r->client->count--;
    r->client = NULL;
    if (r->prev)
        r->prev->next = r->next;
    else
        s->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

void region_client_free(struct region_client *c)
{
    if (!c)
        return;
    struct region_set *s = c->set;
    struct region *ended = NULL;   /* linked through next once off the list */
    pthread_mutex_lock(&s->lock);
    for (struct region *r = s->head, *next; r; r = next) {
        next = r->next;
        if (r->client == c) {
            region_unlink(r);
            r->next = ended;
            ended = r;
        }
    }
    pthread_mutex_unlock(&s->lock);
    for (struct region *r = ended, *next; r; r = next) {
        next = r->next;
        region_put(r);
    }
    free(c);
}

/* Seals that make the mapping safe to keep: the size can never change, so
 * no page of it can vanish under a job (which would be SIGBUS). */
static enum status_code region_check_fd(int fd, struct stat *st, char *err, size_t errlen)
{
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "the descriptor is not a memfd (not a regular file)");
        return STATUS_INVALID_ARGUMENT;
    }
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0) {
        snprintf(err, errlen, "the descriptor is not a memfd (F_GET_SEALS: %s)", strerror(errno));
        return STATUS_INVALID_ARGUMENT;
    }
    if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
        snprintf(err, errlen,
                 "the memfd must be sealed with F_SEAL_SHRINK and F_SEAL_GROW (its size must "
                 "never change while the daemon maps it)");
        return STATUS_FAILED_PRECONDITION;
    }
    if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) {
        snprintf(err, errlen, "the memfd is sealed against writing; jobs write their output into "
                              "regions");
        return STATUS_FAILED_PRECONDITION;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_ACCMODE) != O_RDWR) {
        snprintf(err, errlen, "the memfd must be open for reading and writing");
        return STATUS_INVALID_ARGUMENT;
    }
    if (st->st_size <= 0) {
        snprintf(err, errlen, "the memfd is empty: a region needs at least one byte");
        return STATUS_INVALID_ARGUMENT;
    }
    return STATUS_OK;
}

/* Charges r's size to its uid (with s->lock held), within
 * --max-client-region-bytes. */
static enum status_code region_charge(struct region_set *s, struct region *r, char *err,
                                      size_t errlen)
{
    struct region_owner *o = region_owner_get(s, r->uid);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    uint64_t max = s->limits.max_client_bytes;
    if (r->size > max || o->bytes > max - r->size) {
        snprintf(err, errlen,
                 "--max-client-region-bytes (%" PRIu64 ") would be exceeded for uid %u: %" PRIu64
                 " bytes registered, %zu more wanted",
                 max, (unsigned)r->uid, o->bytes, r->size);
        region_owner_uncharge_locked(s, o, 0);   /* a fresh one goes again */
        return STATUS_RESOURCE_EXHAUSTED;
    }
    o->bytes += r->size;
    r->owner = o;
    return STATUS_OK;
}

enum status_code region_register(struct region_client *c, int fd, uint64_t *id, uint64_t *size,
                                 char *err, size_t errlen)
{
    struct region_set *s = c->set;
    struct stat st;
    enum status_code code = region_check_fd(fd, &st, err, errlen);
    uint64_t bytes = (uint64_t)st.st_size;
    if (code == STATUS_OK && c->count >= s->limits.max_per_client) {
        snprintf(err, errlen, "--max-regions (%" PRIu32 ") regions are registered on this connection",
                 s->limits.max_per_client);
        code = STATUS_RESOURCE_EXHAUSTED;
    }
    if (code == STATUS_OK && (bytes > SIZE_MAX || bytes > s->limits.max_bytes ||
                              region_set_bytes(s) > s->limits.max_bytes - bytes)) {
        snprintf(err, errlen,
                 "--max-region-bytes (%" PRIu64 ") would be exceeded: %" PRIu64
                 " bytes mapped, %" PRIu64 " more wanted",
                 s->limits.max_bytes, region_set_bytes(s), bytes);
        code = STATUS_RESOURCE_EXHAUSTED;
    }
    struct region *r = NULL;
    size_t nslots = s->ndevs ? s->ndevs : 1;
    if (code == STATUS_OK && (!(r = calloc(1, sizeof(*r))) ||
                              !(r->pins = calloc(nslots, sizeof(*r->pins))) ||
                              !(r->views = calloc(nslots, sizeof(*r->views))))) {
        if (r)
            free((void *)r->pins);
        free(r);
        snprintf(err, errlen, "out of memory");
        code = STATUS_RESOURCE_EXHAUSTED;
    }
    if (code == STATUS_OK) {
        r->npins = s->ndevs;
        /* Not populated here, on the loop (~100 ms per GiB): region_populate
         * does that on a worker thread right after registration. */
        r->map = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (r->map == MAP_FAILED) {
            snprintf(err, errlen, "cannot map the memfd: %s", strerror(errno));
            code = errno == ENOMEM ? STATUS_RESOURCE_EXHAUSTED : STATUS_INVALID_ARGUMENT;
            free((void *)r->pins);
            free((void *)r->views);
            free(r);
        }
    }
    close(fd);   /* the mapping keeps the file */
    if (code != STATUS_OK)
        return code;
    r->set = s;
    r->client = c;
    r->uid = c->uid;
    r->size = (size_t)bytes;
    atomic_init(&r->refs, 1);
    pthread_mutex_lock(&s->lock);
    code = region_charge(s, r, err, errlen);
    if (code != STATUS_OK) {
        pthread_mutex_unlock(&s->lock);
        munmap(r->map, r->size);
        free((void *)r->pins);
        free((void *)r->views);
        free(r);
        return code;
    }
    atomic_fetch_add(&s->bytes, bytes);
    r->id = s->next_id++;
    r->next = s->head;
    if (s->head)
        s->head->prev = r;
    s->head = r;
    c->count++;
    pthread_mutex_unlock(&s->lock);
    *id = r->id;
    *size = bytes;
    if (s->on_register)
        s->on_register(s->on_register_ctx, r);
    return STATUS_OK;
}

/* With s->lock held. */
static struct region *region_find(const struct region_set *s, long uid, uint64_t id)
{
    for (struct region *r = s->head; r; r = r->next)
        if (r->id == id && (long)r->uid == uid)
            return r;
    return NULL;
}

enum status_code region_release(struct region_client *c, uint64_t id, char *err, size_t errlen)
{
    struct region_set *s = c->set;
    pthread_mutex_lock(&s->lock);
    struct region *r = region_find(s, (long)c->uid, id);
    bool mine = r && r->client == c;
    if (mine)
        region_unlink(r);
    pthread_mutex_unlock(&s->lock);
    if (!mine) {
        snprintf(err, errlen, "region %" PRIu64 " is not registered on this connection", id);
        return STATUS_NOT_FOUND;
    }
    region_put(r);
    return STATUS_OK;
}

enum status_code region_use(struct region_set *s, long uid, uint64_t id, uint64_t offset,
                            uint64_t length, const char *field, struct region **out, uint8_t **p,
                            char *err, size_t errlen)
{
    if (uid < 0) {
        snprintf(err, errlen, "%s: regions are only for clients on the daemon's Unix socket",
                 field);
        return STATUS_FAILED_PRECONDITION;
    }
    if (!s) {
        snprintf(err, errlen, "%s: region %" PRIu64 " is not registered by this client "
                              "(regions are off: --regions off)", field, id);
        return STATUS_NOT_FOUND;
    }
    /* The reference is taken under the lock: a RELEASE on the main loop
     * cannot drop the last one between the lookup and the take. */
    pthread_mutex_lock(&s->lock);
    struct region *r = region_find(s, uid, id);
    size_t size = r ? r->size : 0;
    bool fits = r && offset <= size && length <= size - offset;
    if (fits)
        atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&s->lock);
    if (!r) {
        snprintf(err, errlen, "%s: region %" PRIu64 " is not registered by this client", field,
                 id);
        return STATUS_NOT_FOUND;
    }
    if (!fits) {
        snprintf(err, errlen,
                 "%s: offset %" PRIu64 " + length %" PRIu64 " is past the end of region %" PRIu64
                 " (%zu bytes)",
                 field, offset, length, id, size);
        return STATUS_OUT_OF_RANGE;
    }
    *out = r;
    *p = r->map + offset;
    return STATUS_OK;
}

void region_ref(struct region *r)
{
    atomic_fetch_add(&r->refs, 1);
}

/* Maps in [start, end) of r's mapping, pages the memfd holds already. */
static void region_populate_run(struct region *r, size_t start, size_t end)
{
    if (end > start)
        madvise(r->map + start, end - start, MADV_POPULATE_WRITE);
}

bool region_populate(struct region *r)
{
    /* Only pages the memfd holds already, which the client wrote: mincore
     * tells them apart (on a shared mapping it reports the file's pages,
     * not ours). Populating the rest would allocate them, at the daemon's
     * cost: a sparse 2 GiB memfd grew host Shmem and ampd's RSS by 2 GiB.
     * Best effort: without MADV_POPULATE_WRITE (before Linux 5.14) a job's
     * first pass faults the pages in instead. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[REGION_POPULATE_WINDOW];
    bool all = true;
    size_t run = 0;   /* where the current run of held pages began */
    for (size_t at = 0; at < r->size;) {
        size_t len = r->size - at;
        if (len > sizeof vec * page)
            len = sizeof vec * page;
        size_t npages = (len + page - 1) / page;
        if (mincore(r->map + at, len, vec) != 0) {
            region_populate_run(r, run, at);
            return false;
        }
        for (size_t i = 0; i < npages; i++, at += page) {
            if (vec[i] & 1)
                continue;
            region_populate_run(r, run, at);
            run = at + page;
            all = false;
        }
    }
    if (run < r->size)
        region_populate_run(r, run, r->size);
    return all;
}

size_t region_size(const struct region *r)
{
    return r->size;
}

uint8_t *region_pin_view(struct region *r, size_t dev_index)
{
    bool taken = false;
    if (atomic_compare_exchange_strong(&r->map_pinned, &taken, true))
        return r->map;
    void *alias = mremap(r->map, 0, r->size, MREMAP_MAYMOVE);
    if (alias == MAP_FAILED)
        return r->map;   /* pinned by another device already: copies run pageable */
    atomic_store(&r->views[dev_index], alias);
    return alias;
}

uint8_t *region_view(const struct region *r, size_t dev_index, uint8_t *p)
{
    if (!p)
        return NULL;
    uint8_t *from = r->map;
    for (size_t i = 0; i < r->npins; i++) {
        uint8_t *alias = atomic_load(&r->views[i]);
        if (alias && p >= alias && p <= alias + r->size)
            from = alias;
    }
    uint8_t *to = dev_index < r->npins ? atomic_load(&r->views[dev_index]) : NULL;
    return (to ? to : r->map) + (p - from);
}

/* A slot being pinned: claimed, its pin not there yet. */
static struct dev_pinned *const region_pinning = (struct dev_pinned *)&region_pinning;

/* Device dev_index's pin of r's mapping (dev_pinned_wrap), or NULL: none
 * (yet), or dev_index is not a device's. Any thread. */
static struct dev_pinned *region_pinned(struct region *r, size_t dev_index)
{
    struct dev_pinned *p = dev_index < r->npins ? atomic_load(&r->pins[dev_index]) : NULL;
    return p == region_pinning ? NULL : p;
}

bool region_pin_claim(struct region *r, size_t dev_index)
{
    struct dev_pinned *none = NULL;
    return dev_index < r->npins &&
           atomic_compare_exchange_strong(&r->pins[dev_index], &none, region_pinning);
}

void region_pin_set(struct region *r, size_t dev_index, struct dev_pinned *p)
{
    atomic_store(&r->pins[dev_index], p);   /* NULL after a failure: anyone may try again */
}

bool region_is_pinned(struct region *r, size_t dev_index)
{
    return region_pinned(r, dev_index) != NULL;
}

void region_set_on_register(struct region_set *s, void (*fn)(void *ctx, struct region *r),
                            void *ctx)
{
    s->on_register = fn;
    s->on_register_ctx = ctx;
}
