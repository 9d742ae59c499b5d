/* SPDX-License-Identifier: MIT */
/* descriptor_set.c: finding files and symbols in a FileDescriptorSet.
 *
 * Reflection asks rarely and the set is a few tens of KiB, so every lookup
 * walks the bytes from the start with pb_field_next() instead of building
 * an index: no allocation, no start-up step, nothing shared between the
 * I/O loops. The field numbers are descriptor.proto's (google.protobuf).
 * A malformed set (only a test would give one) reads as ending where it
 * stops making sense.
 */
#include "descriptor_set.h"

#include <stdbool.h>
#include <string.h>

#include "pb_wire.h"

/* descriptor.proto field numbers. */
#define DESC_SET_FILE 1          /* FileDescriptorSet.file */
#define DESC_FILE_NAME 1         /* FileDescriptorProto.name */
#define DESC_FILE_PACKAGE 2
#define DESC_FILE_DEPENDENCY 3
#define DESC_FILE_MESSAGE 4
#define DESC_FILE_ENUM 5
#define DESC_FILE_SERVICE 6
#define DESC_NAME 1              /* .name of DescriptorProto, EnumDescriptorProto,
                                  * ServiceDescriptorProto and MethodDescriptorProto */
#define DESC_MESSAGE_NESTED 3    /* DescriptorProto.nested_type */
#define DESC_MESSAGE_ENUM 4      /* DescriptorProto.enum_type */
#define DESC_SERVICE_METHOD 2    /* ServiceDescriptorProto.method */

/* A message's bytes, as the walk sees them. */
struct descriptor_msg {
    const uint8_t *data;
    size_t len;
};

/* The next length-delimited field number of m at *i into *out; false at
 * the end (or where m is malformed). */
static bool descriptor_next(struct descriptor_msg m, size_t *i, uint32_t number,
                            struct descriptor_msg *out)
{
    struct pb_field f;
    while (*i < m.len && pb_field_next(m.data, m.len, i, &f) == 0) {
        if (f.number == number && f.wire == PB_WIRE_LEN) {
            out->data = m.data + f.value;
            out->len = f.end - f.value;
            return true;
        }
    }
    *i = m.len;
    return false;
}

/* m's string field number (the last, as protobuf has it); empty if none. */
static struct descriptor_msg descriptor_string(struct descriptor_msg m, uint32_t number)
{
    struct descriptor_msg s = { (const uint8_t *)"", 0 }, v;
    size_t i = 0;
    while (descriptor_next(m, &i, number, &v))
        s = v;
    return s;
}

static bool descriptor_is(struct descriptor_msg s, const char *name, size_t len)
{
    return s.len == len && memcmp(s.data, name, len) == 0;
}

/* Whether name (len bytes) is s followed by a dot; then *rest is past it. */
static bool descriptor_scope(struct descriptor_msg s, const char *name, size_t len,
                             const char **rest, size_t *rest_len)
{
    if (len <= s.len || name[s.len] != '.' || memcmp(name, s.data, s.len) != 0)
        return false;
    *rest = name + s.len + 1;
    *rest_len = len - s.len - 1;
    return true;
}

/* Among m's length-delimited fields number (messages with a name), one
 * named name exactly. */
static bool descriptor_has_named(struct descriptor_msg m, uint32_t number, const char *name,
                                 size_t len)
{
    struct descriptor_msg v;
    size_t i = 0;
    while (descriptor_next(m, &i, number, &v))
        if (descriptor_is(descriptor_string(v, DESC_NAME), name, len))
            return true;
    return false;
}

/* name relative to the scope holding message m (a DescriptorProto). */
static enum descriptor_kind descriptor_in_message(struct descriptor_msg m, const char *name,
                                                  size_t len)
{
    struct descriptor_msg own = descriptor_string(m, DESC_NAME), v;
    if (descriptor_is(own, name, len))
        return DESCRIPTOR_MESSAGE;
    const char *rest;
    size_t rest_len;
    if (!descriptor_scope(own, name, len, &rest, &rest_len))
        return DESCRIPTOR_NONE;
    if (descriptor_has_named(m, DESC_MESSAGE_ENUM, rest, rest_len))
        return DESCRIPTOR_ENUM;
    size_t i = 0;
    while (descriptor_next(m, &i, DESC_MESSAGE_NESTED, &v)) {
        enum descriptor_kind k = descriptor_in_message(v, rest, rest_len);
        if (k != DESCRIPTOR_NONE)
            return k;
    }
    return DESCRIPTOR_NONE;
}

/* name relative to file's package. */
static enum descriptor_kind descriptor_in_file(struct descriptor_msg file, const char *name,
                                               size_t len)
{
    struct descriptor_msg v;
    size_t i = 0;
    while (descriptor_next(file, &i, DESC_FILE_MESSAGE, &v)) {
        enum descriptor_kind k = descriptor_in_message(v, name, len);
        if (k != DESCRIPTOR_NONE)
            return k;
    }
    if (descriptor_has_named(file, DESC_FILE_ENUM, name, len))
        return DESCRIPTOR_ENUM;
    i = 0;
    while (descriptor_next(file, &i, DESC_FILE_SERVICE, &v)) {
        struct descriptor_msg own = descriptor_string(v, DESC_NAME);
        const char *rest;
        size_t rest_len;
        if (descriptor_is(own, name, len))
            return DESCRIPTOR_SERVICE;
        if (descriptor_scope(own, name, len, &rest, &rest_len) &&
            descriptor_has_named(v, DESC_SERVICE_METHOD, rest, rest_len))
            return DESCRIPTOR_METHOD;
    }
    return DESCRIPTOR_NONE;
}

static struct descriptor_msg descriptor_set_msg(const struct descriptor_set *set)
{
    return (struct descriptor_msg){ set->data, set->len };
}

int descriptor_set_find_file(const struct descriptor_set *set, const char *name, size_t len,
                             struct descriptor_file *f)
{
    struct descriptor_msg file;
    size_t i = 0;
    while (descriptor_next(descriptor_set_msg(set), &i, DESC_SET_FILE, &file)) {
        if (descriptor_is(descriptor_string(file, DESC_FILE_NAME), name, len)) {
            *f = (struct descriptor_file){ file.data, file.len };
            return 0;
        }
    }
    return -1;
}

enum descriptor_kind descriptor_set_find_symbol(const struct descriptor_set *set,
                                                const char *symbol, struct descriptor_file *f)
{
    size_t len = strlen(symbol);
    struct descriptor_msg file;
    size_t i = 0;
    while (descriptor_next(descriptor_set_msg(set), &i, DESC_SET_FILE, &file)) {
        struct descriptor_msg pkg = descriptor_string(file, DESC_FILE_PACKAGE);
        const char *rest = symbol;
        size_t rest_len = len;
        if (pkg.len && !descriptor_scope(pkg, symbol, len, &rest, &rest_len))
            continue;
        enum descriptor_kind k = descriptor_in_file(file, rest, rest_len);
        if (k != DESCRIPTOR_NONE) {
            *f = (struct descriptor_file){ file.data, file.len };
            return k;
        }
    }
    return DESCRIPTOR_NONE;
}

int descriptor_file_dependency(const struct descriptor_file *f, size_t i, const char **name,
                               size_t *len)
{
    struct descriptor_msg file = { f->data, f->len }, dep;
    size_t at = 0;
    for (size_t n = 0; descriptor_next(file, &at, DESC_FILE_DEPENDENCY, &dep); n++) {
        if (n == i) {
            *name = (const char *)dep.data;
            *len = dep.len;
            return 0;
        }
    }
    return -1;
}

size_t descriptor_set_files(const struct descriptor_set *set)
{
    struct descriptor_msg file;
    size_t i = 0, n = 0;
    while (descriptor_next(descriptor_set_msg(set), &i, DESC_SET_FILE, &file))
        n++;
    return n;
}
