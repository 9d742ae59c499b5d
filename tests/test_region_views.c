/* SPDX-License-Identifier: MIT */
/* test_region_views.c: each device's view of a region (daemon/region.c's
 * region_pin_view, region_view): the first device to pin a region pins the
 * mapping itself, each further one an alias of the same pages, and an
 * address translates between them. No OpenCL: pins are stand-ins. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_run.h"
#include "region.h"

#define REGION_BYTES (64 * 1024)

static int unpinned;
static int fake_pins[2];

static void count_unpin(struct dev_pinned *p)
{
    (void)p;
    unpinned++;
}

struct fixture {
    struct region_set *set;
    struct region_client *client;
    struct region *r;
    uint8_t *map;   /* what region_use hands a job */
};

static void fixture_open(struct fixture *f, size_t ndevs)
{
    const struct region_limits limits = {4, 1 << 20, 1 << 20};
    f->set = region_set_new(&limits, ndevs, count_unpin);
    ck_assert_ptr_nonnull(f->set);
    f->client = region_client_new(f->set, getuid());
    ck_assert_ptr_nonnull(f->client);
    int fd = memfd_create("test_region_views", MFD_ALLOW_SEALING);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, REGION_BYTES), 0);
    ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    uint64_t id, size;
    char err[256];
    ck_assert_int_eq(region_register(f->client, fd, &id, &size, err, sizeof err), STATUS_OK);
    ck_assert_int_eq(region_use(f->set, getuid(), id, 0, REGION_BYTES, "input_region", &f->r,
                                &f->map, err, sizeof err),
                     STATUS_OK);
}

static void fixture_close(struct fixture *f)
{
    region_put(f->r);
    region_client_free(f->client);
    region_set_free(f->set);
}

/* Device dev pins f's region as dev_pin_region does; returns its view. */
static uint8_t *fixture_pin(struct fixture *f, size_t dev)
{
    ck_assert(region_pin_claim(f->r, dev));
    uint8_t *view = region_pin_view(f->r, dev);
    region_pin_set(f->r, dev, (struct dev_pinned *)&fake_pins[dev]);
    return view;
}

START_TEST(first_device_pins_the_mapping_the_next_an_alias)
{
    struct fixture f;
    fixture_open(&f, 2);
    uint8_t *v0 = fixture_pin(&f, 0);
    uint8_t *v1 = fixture_pin(&f, 1);
    ck_assert_ptr_eq(v0, f.map);
    ck_assert_ptr_ne(v1, f.map);
    /* The alias holds the same pages, both ways. */
    memset(f.map, 0x5a, REGION_BYTES);
    ck_assert_int_eq(v1[0], 0x5a);
    ck_assert_int_eq(v1[REGION_BYTES - 1], 0x5a);
    v1[100] = 0x11;
    ck_assert_int_eq(f.map[100], 0x11);
    unpinned = 0;
    fixture_close(&f);
    ck_assert_int_eq(unpinned, 2);
}
END_TEST

START_TEST(addresses_translate_between_views)
{
    struct fixture f;
    fixture_open(&f, 2);
    uint8_t *v1 = fixture_pin(&f, 1);   /* device 1 first: it gets the mapping */
    ck_assert_ptr_eq(v1, f.map);
    uint8_t *v0 = fixture_pin(&f, 0);
    ck_assert_ptr_ne(v0, f.map);
    uint8_t *p = f.map + 4096;
    ck_assert_ptr_eq(region_view(f.r, 0, p), v0 + 4096);
    ck_assert_ptr_eq(region_view(f.r, 1, p), p);
    ck_assert_ptr_eq(region_view(f.r, 1, v0 + 4096), p);
    /* The end of the region (an empty tail) stays in the same view. */
    ck_assert_ptr_eq(region_view(f.r, 0, f.map + REGION_BYTES), v0 + REGION_BYTES);
    ck_assert_ptr_null(region_view(f.r, 0, NULL));
    fixture_close(&f);
}
END_TEST

START_TEST(a_device_without_a_view_sees_the_mapping)
{
    struct fixture f;
    fixture_open(&f, 2);
    uint8_t *v1 = fixture_pin(&f, 0) == f.map ? fixture_pin(&f, 1) : NULL;
    ck_assert_ptr_nonnull(v1);
    fixture_close(&f);
    fixture_open(&f, 2);
    /* Nobody pinned: every device copies through the mapping. */
    ck_assert_ptr_eq(region_view(f.r, 0, f.map + 7), f.map + 7);
    ck_assert_ptr_eq(region_view(f.r, 1, f.map + 7), f.map + 7);
    ck_assert_ptr_eq(region_view(f.r, 5, f.map + 7), f.map + 7);   /* not a device */
    fixture_close(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("region_views");
    const TTest *const tests[] = {
        first_device_pins_the_mapping_the_next_an_alias,
        addresses_translate_between_views,
        a_device_without_a_view_sees_the_mapping,
        NULL,
    };
    check_run_case(s, "region_views", tests);
    return check_run(s, CK_FORK_GETENV);
}
