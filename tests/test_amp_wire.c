/* SPDX-License-Identifier: MIT */
/* test_amp_wire.c: the protocol facts both ends use without protobuf-c
 * (common/amp_wire.h) agree with proto/amp.proto, read from the descriptors
 * protobuf-c generated from it. */
#include <check.h>

#include "amp.pb-c.h"
#include "amp_wire.h"
#include "check_run.h"

/* The tag of desc's field name, length-delimited, as the .proto numbers it. */
static uint64_t wire_tag(const ProtobufCMessageDescriptor *desc, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(desc, name);
    ck_assert_msg(f != NULL, "%s has no field %s", desc->name, name);
    ck_assert_msg(f->type == PROTOBUF_C_TYPE_BYTES || f->type == PROTOBUF_C_TYPE_STRING,
                  "%s.%s is not length-delimited", desc->name, name);
    return PB_TAG(f->id, PB_WIRE_LEN);
}

START_TEST(bulk_field_tags_match_the_proto)
{
    ck_assert_uint_eq(AMP_WIRE_STREAM_REQUEST_DATA,
                      wire_tag(&amp__v1__stream_request__descriptor, "data"));
    ck_assert_uint_eq(AMP_WIRE_STREAM_REPLY_DATA,
                      wire_tag(&amp__v1__stream_reply__descriptor, "data"));
    ck_assert_uint_eq(AMP_WIRE_STREAM_REPLY_DEVICE,
                      wire_tag(&amp__v1__stream_reply__descriptor, "device"));
    ck_assert_uint_eq(AMP_WIRE_DATA_REPLY_DATA, wire_tag(&amp__v1__data_reply__descriptor, "data"));
    ck_assert_uint_eq(AMP_WIRE_DATA_REPLY_DEVICE,
                      wire_tag(&amp__v1__data_reply__descriptor, "device"));
}
END_TEST

START_TEST(tags_fit_one_byte)
{
    /* Both ends write and match each tag as a single byte. */
    const uint64_t tags[] = {AMP_WIRE_STREAM_REQUEST_DATA, AMP_WIRE_STREAM_REPLY_DATA,
                             AMP_WIRE_STREAM_REPLY_DEVICE, AMP_WIRE_DATA_REPLY_DATA,
                             AMP_WIRE_DATA_REPLY_DEVICE};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        ck_assert_uint_lt(tags[i], 0x80);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("amp_wire");
    const TTest *const tests[] = {
        bulk_field_tags_match_the_proto,
        tags_fit_one_byte,
        NULL,
    };
    check_run_case(s, "wire", tests);
    return check_run(s, CK_FORK_GETENV);
}
