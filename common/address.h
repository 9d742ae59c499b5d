/* SPDX-License-Identifier: MIT */
/* address.h: gRPC target syntax shared by ampd --listen and ampctl --address.
 *
 *   unix:/abs/path  unix:///abs/path  unix:rel/path   a Unix socket
 *   HOST:PORT  [V6ADDR]:PORT  :PORT                   TCP (":PORT" = loopback)
 *   dns:HOST:PORT  dns:///HOST:PORT                   TCP, as gRPC writes it
 *   ipv4:ADDR:PORT  ipv6:[V6ADDR]:PORT                TCP to a literal of that family
 *   tls:HOST:PORT  tls:[V6ADDR]:PORT  tls::PORT       TCP with TLS (not gRPC syntax:
 *                                                     gRPC says TLS out of band)
 * unix-abstract:NAME is refused, saying so: an abstract socket has no file
 * whose mode and group could keep other users out.
 */
#ifndef AMP_ADDRESS_H
#define AMP_ADDRESS_H

#include <stddef.h>

enum address_kind { ADDRESS_UNIX, ADDRESS_TCP };

#define ADDRESS_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) */
#define ADDRESS_HOST_MAX 256
/* Room for any message of address_parse(): it quotes the text it read. */
#define ADDRESS_ERROR_MAX (2 * ADDRESS_HOST_MAX)

struct address {
    enum address_kind kind;
    char path[ADDRESS_PATH_MAX]; /* ADDRESS_UNIX: NUL-terminated */
    char host[ADDRESS_HOST_MAX]; /* ADDRESS_TCP: without brackets */
    int port;                    /* ADDRESS_TCP: 0..65535 */
    int tls;                     /* ADDRESS_TCP only: 1 for a tls: address */
};

/* A Unix socket at PATH has its region socket (shared-memory regions,
 * docs/regions.md) at PATH ".regions". */
#define ADDRESS_REGION_SUFFIX ".regions"

/* The region socket's path for a Unix address a into out. Returns 0, or -1
 * when a is not a Unix address or the path would be too long. */
int address_region_path(const struct address *a, char *out, size_t outlen);

/* Parses text into *out. Returns 0, or -1 with a reason in err. */
int address_parse(const char *text, struct address *out, char *err, size_t errlen);

/* Most addresses in a list (libampclient spreads connections over them). */
#define ADDRESS_LIST_MAX 16
#define ADDRESS_LIST_SEPARATOR ','

/* Parses a comma-separated list of addresses (one address is a list of
 * one; so a Unix path in a list cannot hold a comma) into out[0..*n),
 * at most max. Returns 0, or -1 with a reason in err naming the entry. */
int address_parse_list(const char *text, struct address *out, size_t max, size_t *n, char *err,
                       size_t errlen);

#endif
