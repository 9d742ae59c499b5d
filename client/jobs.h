/* jobs.h: helpers jobs.c shares with the other call files (devices.c). */
#ifndef AMP_CLIENT_JOBS_H
#define AMP_CLIENT_JOBS_H

#include <protobuf-c/protobuf-c.h>

#include "amp.h"
#include "amp.pb-c.h"

/* AMP_EINVAL with a message when o holds a bad value (negative timeout). */
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

/* Copies a reply's histogram into *h (counts malloc'd, caller frees with
 * amp_hist_free). Returns 0, AMP_EPROTO when src is NULL or too large,
 * AMP_ENOMEM; *h is zeroed on failure. */
int jobs_copy_hist(amp_conn *c, const Amp__V1__Histogram *src, amp_hist *h);

#endif
