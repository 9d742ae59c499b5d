/* SPDX-License-Identifier: MIT */
/* consumer.c: a program built against an installed libampclient, as an
 * application would build it (tests/test_install.py builds it twice: with
 * pkg-config, and with CMake's find_package). It checks the header and the
 * library agree on the version, reverses a string through the daemon at
 * argv[1], and checks a refusal carries its own code and gRPC status. */
#include <stdio.h>
#include <string.h>

#include <amp.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: consumer ADDRESS\n");
        return 2;
    }
    if (amp_version() != AMP_VERSION_HEX) {
        fprintf(stderr, "header %s, library %s\n", AMP_VERSION_STRING, amp_version_string());
        return 1;
    }
    amp_connect_opts co = { .size = sizeof co, .timeout_ms = 10000 };
    amp_conn *c;
    int rc = amp_connect_with(argv[1], &co, &c);
    if (rc != 0) {
        fprintf(stderr, "connect: %s: %s\n", amp_error_name(rc), amp_last_message(NULL));
        return 1;
    }
    amp_opts o = { .size = sizeof o, .timeout_ms = 60000 };
    void *out = NULL;
    size_t n = 0;
    rc = amp_reverse(c, &o, "stressed", 8, &out, &n);
    int ok = rc == 0 && n == 8 && memcmp(out, "desserts", 8) == 0;
    amp_free(out);
    /* 0 bins: the daemon's INVALID_ARGUMENT, raw status 3. */
    amp_hist_params hp = { .type = AMP_TYPE_UINT32, .bins = 0, .lo = 0, .hi = 1 };
    amp_hist h;
    int bad = amp_histogram(c, &o, &hp, "abcd", 4, &h);
    ok = ok && bad == AMP_EINVAL && amp_last_grpc_status(c) == 3;
    printf("libampclient %s: reverse %s, refusal %s (gRPC %d)\n", amp_version_string(),
           amp_error_name(rc), amp_error_name(bad), amp_last_grpc_status(c));
    amp_close(c);
    return ok ? 0 : 1;
}
