/* SPDX-License-Identifier: MIT */
/* jobs.h: helpers jobs.c shares with the other call files (devices.c). */
#ifndef AMP_CLIENT_JOBS_H
#define AMP_CLIENT_JOBS_H

#include <protobuf-c/protobuf-c.h>

#include "amp.h"
#include "amp.pb-c.h"

/* AMP_EINVAL with a message when o holds a bad value (a size short of its
 * first layout, a negative timeout). */
int jobs_check_opts(amp_conn *c, const amp_opts *o);

/* o->timeout_ms, or 0 (no deadline) when o is NULL. */
int jobs_timeout(const amp_opts *o);

/* Records the device that ran the last job, for amp_last_device(). */
void jobs_set_device(amp_conn *c, const char *device);

/* o->device or "" (protobuf-c wants a mutable char * even for fields it
 * only reads). */
char *jobs_device(const amp_opts *o);

/* A protobuf bytes field pointing at the caller's buffer (not copied). */
ProtobufCBinaryData jobs_bytes(const void *in, size_t len);

/* Encode the caller's step parameters into protobuf messages that borrow
 * their pointers (the map table). where names them in messages ("params",
 * "steps[2].transform"). Return 0, or AMP_EINVAL with a message. */
int jobs_transform_params(amp_conn *c, const char *where, const amp_transform_params *p,
                          Amp__V1__TransformParams *tp);
int jobs_hist_params(amp_conn *c, const char *where, const amp_hist_params *p,
                     Amp__V1__HistogramParams *hp);
int jobs_fill_params(amp_conn *c, const char *where, const amp_fill_params *p,
                     Amp__V1__FillParams *fp);

/* Where the data (field 1, tag 0x0a) and device (tag device_tag) fields of
 * a reply lie, for a msg_len-byte message that holds nothing else (in any
 * order), scanned over its first avail bytes. The data field may run past
 * avail only as the last field, to the message's end. Returns 1, or 0
 * when the bytes hold anything else, or a field does not fit: protobuf-c
 * (or the whole message) then takes over. Lets data replies be read in
 * place instead of copied by protobuf-c. */
struct jobs_reply_fields {
    int has_data;
    size_t data_off, data_len;  /* in the message */
    const uint8_t *dev;         /* NULL: no device field */
    size_t dev_len;
};
int jobs_reply_fields(const uint8_t *msg, size_t avail, size_t msg_len, uint8_t device_tag,
                      struct jobs_reply_fields *f);

/* A job's request message, built over the caller's memory (its input and
 * map table are borrowed, not copied) by the jobs_*_req functions for the
 * blocking calls (jobs.c) and the ones started without waiting (async.c). */
struct jobs_req {
    const char *path;            /* the method */
    ProtobufCMessage *msg;       /* points into u */
    union {
        Amp__V1__ReverseRequest reverse;
        Amp__V1__TransformRequest transform;
        Amp__V1__HistogramRequest hist;
    } u;
    Amp__V1__TransformParams transform;
    Amp__V1__HistogramParams hist;
};

/* Check the arguments (AMP_EINVAL with a message) and build r. */
int jobs_reverse_req(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                     struct jobs_req *r);
int jobs_transform_req(amp_conn *c, const amp_opts *o, const amp_transform_params *p,
                       const void *in, size_t len, struct jobs_req *r);
int jobs_hist_req(amp_conn *c, const amp_opts *o, const amp_hist_params *p, const void *in,
                  size_t len, struct jobs_req *r);

/* Decode a reply message: a DataReply's bytes into *out (the caller frees
 * them with amp_free; msg, malloc'd, is taken over: freed or handed out),
 * a HistogramReply into *h (msg stays the caller's). Both record the
 * device. Return 0 or AMP_EPROTO / AMP_ENOMEM with a message. */
int jobs_data_reply(amp_conn *c, uint8_t *msg, size_t len, void **out, size_t *out_len);
int jobs_hist_reply(amp_conn *c, const uint8_t *msg, size_t len, amp_hist *h);

/* Copies a reply's histogram into *h (counts malloc'd, caller frees with
 * amp_hist_free). Returns 0, AMP_EPROTO when src is NULL or too large,
 * AMP_ENOMEM; *h is zeroed on failure. */
int jobs_copy_hist(amp_conn *c, const Amp__V1__Histogram *src, amp_hist *h);

#endif
