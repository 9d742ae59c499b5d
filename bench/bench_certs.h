/* SPDX-License-Identifier: MIT */
/* bench_certs.h: TLS certificates a benchmark makes for its own run, with
 * the tests' script (tests/support/tls_certs.sh, the openssl command), in
 * a temporary directory it removes at the end (bench_certs.c). */
#ifndef AMP_BENCH_CERTS_H
#define AMP_BENCH_CERTS_H

#define BENCH_CERTS_PATH_MAX 128

struct bench_certs {
    char dir[64];                                 /* the temporary directory */
    char cert[BENCH_CERTS_PATH_MAX];              /* server.pem: 127.0.0.1 and localhost */
    char key[BENCH_CERTS_PATH_MAX];               /* server.key */
    char ca[BENCH_CERTS_PATH_MAX];                /* ca.pem, which signed cert */
};

/* Makes the certificates; the script is $AMP_SOURCE_DIR's, else the one
 * in source_dir (the tree the bench was built from). Dies (bench_die)
 * when it cannot. */
void bench_certs_make(struct bench_certs *c, const char *prefix, const char *source_dir);

/* Removes the directory and what is in it. */
void bench_certs_remove(const struct bench_certs *c);

#endif
