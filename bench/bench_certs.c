/* SPDX-License-Identifier: MIT */
/* bench_certs.c: certificates for a benchmark's run (see bench_certs.h). */
#include "bench_certs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

void bench_certs_make(struct bench_certs *c, const char *prefix, const char *source_dir)
{
    const char *src = getenv("AMP_SOURCE_DIR");
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/%s-tls-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    if (!mkdtemp(c->dir))
        bench_die("a directory for the TLS certificates: %s", strerror(errno));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/support/tls_certs.sh' '%s'",
             src && *src ? src : source_dir, c->dir);
    if (system(cmd) != 0)
        bench_die("%s failed (it needs the openssl command)", cmd);
    snprintf(c->cert, sizeof c->cert, "%s/server.pem", c->dir);
    snprintf(c->key, sizeof c->key, "%s/server.key", c->dir);
    snprintf(c->ca, sizeof c->ca, "%s/ca.pem", c->dir);
}

void bench_certs_remove(const struct bench_certs *c)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "%s failed\n", cmd);
}
