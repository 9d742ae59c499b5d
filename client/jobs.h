/* jobs.h: helpers jobs.c shares with the other call files (devices.c). */
#ifndef AMP_CLIENT_JOBS_H
#define AMP_CLIENT_JOBS_H

#include "amp.h"

/* AMP_EINVAL with a message when o holds a bad value (negative timeout). */
int jobs_check_opts(amp_conn *c, const amp_opts *o);

/* o->timeout_ms, or 0 (no deadline) when o is NULL. */
int jobs_timeout(const amp_opts *o);

/* Records the device that ran the last job, for amp_last_device(). */
void jobs_set_device(amp_conn *c, const char *device);

#endif
