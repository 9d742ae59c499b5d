/* SPDX-License-Identifier: MIT */
/* test_descriptor_set.c: the lookups server reflection answers from
 * (daemon/descriptor_set.c). Every method of the daemon's table is found,
 * as a service and as a method, in the descriptor set embedded at build
 * time; symbols of every kind resolve to the file that defines them and
 * near misses to nothing; dependencies and file names read from a set
 * built here by hand; a truncated set finds nothing and reads nothing
 * past its end. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "descriptor_set.h"
#include "pb_wire.h"
#include "rpc.h"

/* The FileDescriptorProto's name field (1), read by hand. */
static void file_name(const struct descriptor_file *f, char *out, size_t outlen)
{
    struct pb_field fld;
    size_t i = 0;
    out[0] = '\0';
    while (i < f->len && pb_field_next(f->data, f->len, &i, &fld) == 0) {
        if (fld.number == 1 && fld.wire == PB_WIRE_LEN) {
            snprintf(out, outlen, "%.*s", (int)(fld.end - fld.value), f->data + fld.value);
            return;
        }
    }
}

static void expect_symbol(const char *symbol, enum descriptor_kind kind, const char *file)
{
    struct descriptor_file f = { NULL, 0 };
    char name[256];
    ck_assert_int_eq(descriptor_set_find_symbol(&descriptor_set_builtin, symbol, &f), kind);
    if (kind == DESCRIPTOR_NONE) {
        ck_assert_ptr_null(f.data);
        return;
    }
    file_name(&f, name, sizeof name);
    ck_assert_str_eq(name, file);
}

START_TEST(every_method_served_is_described)
{
    const struct rpc_method *m;
    size_t i;
    for (i = 0; (m = rpc_method_at(i)) != NULL; i++) {
        char symbol[256], service[256];
        snprintf(symbol, sizeof symbol, "%s", m->path + 1);
        *strchr(symbol, '/') = '.';   /* "/pkg.Svc/Method" -> "pkg.Svc.Method" */
        snprintf(service, sizeof service, "%.*s", (int)(strrchr(symbol, '.') - symbol), symbol);
        struct descriptor_file f;
        ck_assert_msg(descriptor_set_find_symbol(&descriptor_set_builtin, symbol, &f) ==
                          DESCRIPTOR_METHOD, "%s is not described", symbol);
        ck_assert_msg(descriptor_set_find_symbol(&descriptor_set_builtin, service, &f) ==
                          DESCRIPTOR_SERVICE, "%s is not described", service);
    }
    ck_assert_uint_ge(i, 12);
}
END_TEST

START_TEST(symbols_of_every_kind)
{
    expect_symbol("amp.v1.Amp", DESCRIPTOR_SERVICE, "amp.proto");
    expect_symbol("amp.v1.Amp.Reverse", DESCRIPTOR_METHOD, "amp.proto");
    expect_symbol("amp.v1.ReverseRequest", DESCRIPTOR_MESSAGE, "amp.proto");
    expect_symbol("amp.v1.ElementType", DESCRIPTOR_ENUM, "amp.proto");
    expect_symbol("grpc.health.v1.HealthCheckResponse.ServingStatus", DESCRIPTOR_ENUM,
                  "grpc/health/v1/health.proto");
    expect_symbol("grpc.reflection.v1alpha.ServerReflectionRequest", DESCRIPTOR_MESSAGE,
                  "grpc/reflection/v1alpha/reflection.proto");
    expect_symbol("grpc.reflection.v1.ServerReflectionRequest", DESCRIPTOR_MESSAGE,
                  "grpc/reflection/v1/reflection.proto");
}
END_TEST

START_TEST(near_misses_find_nothing)
{
    const char *misses[] = {"", ".", "amp", "amp.v1", "amp.v1.", "amp.v1.Amp.", "amp.v1.Am",
                            "amp.v1.Ampx", "amp.v1.Amp.Reversex", "amp.v1.ReverseRequest.data",
                            ".amp.v1.Amp", "amp.v2.Amp", "v1.Amp", "grpc.health.v1.Health.Check.x"};
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++)
        expect_symbol(misses[i], DESCRIPTOR_NONE, NULL);
}
END_TEST

START_TEST(builtin_files_by_name)
{
    const char *names[] = {"amp.proto", "grpc/health/v1/health.proto",
                           "grpc/reflection/v1/reflection.proto",
                           "grpc/reflection/v1alpha/reflection.proto"};
    struct descriptor_file f;
    char got[256];
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(descriptor_set_find_file(&descriptor_set_builtin, names[i],
                                                  strlen(names[i]), &f), 0);
        file_name(&f, got, sizeof got);
        ck_assert_str_eq(got, names[i]);
    }
    ck_assert_uint_eq(descriptor_set_files(&descriptor_set_builtin), 4);
    ck_assert_int_eq(descriptor_set_find_file(&descriptor_set_builtin, "amp", 3, &f), -1);
    ck_assert_int_eq(descriptor_set_find_file(&descriptor_set_builtin, "amp.proto", 8, &f), -1);
}
END_TEST

/* A set by hand: "a.proto" (package p, imports b.proto, message
 * M with a nested N) and "b.proto" (no package, enum E). */
static const uint8_t hand_set[] = {
    0x0a, 31,                                    /* file 1: 31 bytes */
    0x0a, 7, 'a', '.', 'p', 'r', 'o', 't', 'o',  /* name */
    0x12, 1, 'p',                                /* package */
    0x1a, 7, 'b', '.', 'p', 'r', 'o', 't', 'o',  /* dependency */
    0x22, 8, 0x0a, 1, 'M', 0x1a, 3, 0x0a, 1, 'N', /* message M { message N } */
    0x0a, 14,                                    /* file 2: 14 bytes */
    0x0a, 7, 'b', '.', 'p', 'r', 'o', 't', 'o',
    0x2a, 3, 0x0a, 1, 'E',                       /* enum E */
};

START_TEST(hand_built_set)
{
    struct descriptor_set set = { hand_set, sizeof hand_set };
    struct descriptor_file a, b, f;
    const char *name;
    size_t len;
    ck_assert_uint_eq(descriptor_set_files(&set), 2);
    ck_assert_int_eq(descriptor_set_find_file(&set, "a.proto", 7, &a), 0);
    ck_assert_int_eq(descriptor_set_find_file(&set, "b.proto", 7, &b), 0);
    ck_assert_int_eq(descriptor_file_dependency(&a, 0, &name, &len), 0);
    ck_assert_uint_eq(len, 7);
    ck_assert_int_eq(memcmp(name, "b.proto", 7), 0);
    ck_assert_int_eq(descriptor_file_dependency(&a, 1, &name, &len), -1);
    ck_assert_int_eq(descriptor_file_dependency(&b, 0, &name, &len), -1);
    ck_assert_int_eq(descriptor_set_find_symbol(&set, "p.M.N", &f), DESCRIPTOR_MESSAGE);
    ck_assert_ptr_eq(f.data, a.data);
    ck_assert_int_eq(descriptor_set_find_symbol(&set, "E", &f), DESCRIPTOR_ENUM);
    ck_assert_ptr_eq(f.data, b.data);
    ck_assert_int_eq(descriptor_set_find_symbol(&set, "M", &f), DESCRIPTOR_NONE);
    ck_assert_int_eq(descriptor_set_find_symbol(&set, "p.E", &f), DESCRIPTOR_NONE);
}
END_TEST

START_TEST(truncated_sets_find_nothing_past_their_end)
{
    /* Every cut of the hand set: lookups stay inside it (ASan watches). */
    for (size_t cut = 0; cut < sizeof hand_set; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, hand_set, cut);
        struct descriptor_set set = { copy, cut };
        struct descriptor_file f;
        ck_assert_int_eq(descriptor_set_find_file(&set, "b.proto", 7, &f), -1);
        enum descriptor_kind k = descriptor_set_find_symbol(&set, "E", &f);
        ck_assert_int_eq(k, DESCRIPTOR_NONE);
        ck_assert_uint_le(descriptor_set_files(&set), 1);
        free(copy);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("descriptor_set");
    const TTest *const tests[] = {
        every_method_served_is_described,
        symbols_of_every_kind,
        near_misses_find_nothing,
        builtin_files_by_name,
        hand_built_set,
        truncated_sets_find_nothing_past_their_end,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
