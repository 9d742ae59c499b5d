/* SPDX-License-Identifier: MIT */
/* descriptor_set.h: the protobuf descriptors of what ampd serves, and
 * lookups in them for server reflection (rpc_reflection.c).
 *
 * The set is protoc's own output (--descriptor_set_out --include_imports
 * over the served .proto files), embedded at build time by
 * cmake/embed_descriptor_set.cmake, so the descriptors a client gets are
 * exactly what protoc made of the files the daemon was built from. It is
 * read in place with pb_wire.h: a lookup walks the bytes, allocates
 * nothing, and what it returns points into the set.
 */
#ifndef AMPD_DESCRIPTOR_SET_H
#define AMPD_DESCRIPTOR_SET_H

#include <stddef.h>
#include <stdint.h>

/* A google.protobuf.FileDescriptorSet's bytes; data outlives every view
 * taken from it. */
struct descriptor_set {
    const uint8_t *data;
    size_t len;
};

/* The daemon's own (generated, in descriptor_set_embed.c). */
extern const struct descriptor_set descriptor_set_builtin;

/* One FileDescriptorProto's bytes, inside a set. */
struct descriptor_file {
    const uint8_t *data;
    size_t len;
};

/* What a fully qualified name names. */
enum descriptor_kind {
    DESCRIPTOR_NONE,      /* nothing in the set */
    DESCRIPTOR_MESSAGE,   /* a message, nested ones too ("pkg.Outer.Inner") */
    DESCRIPTOR_ENUM,      /* an enum, at file level or in a message */
    DESCRIPTOR_SERVICE,
    DESCRIPTOR_METHOD,    /* "pkg.Service.Method" */
};

/* The file named name (len bytes; as it is imported:
 * "grpc/health/v1/health.proto") into *f. Returns 0, or -1 when the set
 * has none. */
int descriptor_set_find_file(const struct descriptor_set *set, const char *name, size_t len,
                             struct descriptor_file *f);

/* The file that defines symbol (fully qualified, no leading dot) into *f,
 * and what the symbol is; DESCRIPTOR_NONE (f untouched) when no file does. */
enum descriptor_kind descriptor_set_find_symbol(const struct descriptor_set *set,
                                                const char *symbol, struct descriptor_file *f);

/* The i-th file f imports (FileDescriptorProto.dependency), not
 * NUL-terminated: *name, *len point into the set. Returns 0, or -1 past
 * the last one. */
int descriptor_file_dependency(const struct descriptor_file *f, size_t i, const char **name,
                               size_t *len);

/* Files in the set. */
size_t descriptor_set_files(const struct descriptor_set *set);

#endif
