/* job.c: life of a struct job (see job.h). */
#include "job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

size_t elem_size(enum elem_type t)
{
    switch (t) {
    case ELEM_U8: return 1;
    case ELEM_U32:
    case ELEM_I32:
    case ELEM_F32: return 4;
    case ELEM_I64: return 8;
    }
    return 1;
}

struct job *job_new(size_t nsteps)
{
    struct job *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->steps = calloc(nsteps ? nsteps : 1, sizeof(*job->steps));
    if (!job->steps) {
        free(job);
        return NULL;
    }
    job->nsteps = nsteps;
    return job;
}

void job_free(struct job *job)
{
    if (!job)
        return;
    if (job->results) {
        for (size_t i = 0; i < job->nsteps; i++) {
            free(job->results[i].data);
            free(job->results[i].hist.counts);
        }
        free(job->results);
    }
    free(job->steps);
    free(job->in);
    free(job);
}

enum status_code job_fail(struct job *job, enum status_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->msg, sizeof(job->msg), fmt, ap);
    va_end(ap);
    job->status = code;
    return code;
}
