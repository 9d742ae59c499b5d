/* SPDX-License-Identifier: MIT */
/* address.c: parse gRPC target syntax (see address.h) for ampd --listen and
 * the client's amp_connect. Only parsing: no name resolution, no sockets.
 *
 * Accepted forms:
 *   unix:PATH, unix:///ABS       Unix socket (unix://x with a relative x is
 *                                refused, as gRPC does)
 *   HOST:PORT, [V6]:PORT         TCP; the port is required
 *   :PORT                        TCP on the loopback address
 *   dns:HOST:PORT, dns:///HOST:PORT   the same, with gRPC's resolver prefix
 *   tls:TCP-ADDRESS              any TCP form above, spoken over TLS
 */
#include "address.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ADDRESS_UNIX_PREFIX "unix:"
#define ADDRESS_UNIX_AUTHORITY "//"
#define ADDRESS_DNS_PREFIX "dns:"
#define ADDRESS_DNS_AUTHORITY "///"
#define ADDRESS_TLS_PREFIX "tls:"
#define ADDRESS_IPV4_PREFIX "ipv4:"
#define ADDRESS_IPV6_PREFIX "ipv6:"
#define ADDRESS_ABSTRACT_PREFIX "unix-abstract:"
#define ADDRESS_LOOPBACK "127.0.0.1"
#define ADDRESS_PORT_MAX 65535
#define ADDRESS_URL_MARK "://"

static int address_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int address_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int address_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int address_parse_unix(const char *rest, struct address *out, char *err, size_t errlen)
{
    const char *path = rest;
    if (address_starts(rest, ADDRESS_UNIX_AUTHORITY)) {
        /* unix://ABS: the authority must be empty, i.e. a third slash. */
        path = rest + strlen(ADDRESS_UNIX_AUTHORITY);
        if (path[0] != '/')
            return address_fail(err, errlen,
                                "unix:// needs an absolute path: write unix:///%s, or unix:%s "
                                "for a path relative to the working directory", path, path);
    }
    if (path[0] == '\0')
        return address_fail(err, errlen, "unix: address has an empty path");
    if (strlen(path) >= ADDRESS_PATH_MAX)
        return address_fail(err, errlen, "unix socket path longer than %d bytes",
                            ADDRESS_PATH_MAX - 1);
    out->kind = ADDRESS_UNIX;
    memcpy(out->path, path, strlen(path) + 1);
    return 0;
}

/* Parses a decimal port 0..65535 (digits only, no sign or spaces). */
static int address_parse_port(const char *s, int *port, char *err, size_t errlen)
{
    if (*s == '\0')
        return address_fail(err, errlen, "missing port after ':'");
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return address_fail(err, errlen, "port '%s' is not a number", s);
        v = v * 10 + (*p - '0');
        if (v > ADDRESS_PORT_MAX)
            return address_fail(err, errlen, "port '%s' is out of range 0..%d", s,
                                ADDRESS_PORT_MAX);
    }
    *port = (int)v;
    return 0;
}

static int address_set_host(struct address *out, const char *host, size_t len, char *err,
                            size_t errlen)
{
    if (len >= ADDRESS_HOST_MAX)
        return address_fail(err, errlen, "host name longer than %d bytes", ADDRESS_HOST_MAX - 1);
    memcpy(out->host, host, len);
    out->host[len] = '\0';
    return 0;
}

/* [V6]:PORT */
static int address_parse_bracketed(const char *text, struct address *out, char *err,
                                   size_t errlen)
{
    const char *close = strchr(text, ']');
    if (!close)
        return address_fail(err, errlen, "missing ']' in '%s'", text);
    size_t hlen = (size_t)(close - text - 1);
    if (hlen == 0)
        return address_fail(err, errlen, "empty IPv6 address in '%s'", text);
    if (close[1] != ':')
        return address_fail(err, errlen, "expected ':PORT' after ']' in '%s'", text);
    if (memchr(text + 1, '[', hlen))
        return address_fail(err, errlen, "unexpected '[' in '%s'", text);
    if (address_parse_port(close + 2, &out->port, err, errlen) != 0)
        return -1;
    return address_set_host(out, text + 1, hlen, err, errlen);
}

static int address_parse_tcp(const char *text, struct address *out, char *err, size_t errlen)
{
    out->kind = ADDRESS_TCP;
    if (text[0] == '[')
        return address_parse_bracketed(text, out, err, errlen);
    const char *colon = strrchr(text, ':');
    if (!colon)
        return address_fail(err, errlen,
                            "'%s' is not an address: use unix:PATH or HOST:PORT", text);
    if (memchr(text, ':', (size_t)(colon - text)))
        return address_fail(err, errlen, "IPv6 addresses need brackets: [%.*s]:PORT",
                            (int)(colon - text), text);
    if (strpbrk(text, "[]/ "))
        return address_fail(err, errlen, "bad character in host of '%s'", text);
    if (address_parse_port(colon + 1, &out->port, err, errlen) != 0)
        return -1;
    if (colon == text)
        return address_set_host(out, ADDRESS_LOOPBACK, strlen(ADDRESS_LOOPBACK), err, errlen);
    return address_set_host(out, text, (size_t)(colon - text), err, errlen);
}

/* gRPC's ipv4:ADDR:PORT and ipv6:[ADDR]:PORT: a TCP address whose host
 * must be a literal of that family. */
static int address_parse_ip(const char *text, int family, struct address *out, char *err,
                            size_t errlen)
{
    if (address_parse_tcp(text, out, err, errlen) != 0)
        return -1;
    unsigned char bin[sizeof(struct in6_addr)];
    if (inet_pton(family, out->host, bin) != 1)
        return address_fail(err, errlen, family == AF_INET
                                ? "ipv4: wants an IPv4 address and a port (ipv4:127.0.0.1:50051)"
                                : "ipv6: wants an IPv6 address in brackets and a port "
                                  "(ipv6:[::1]:50051)");
    return 0;
}

/* A URL (http://, https://, grpc://) is what people paste from a browser
 * or another tool's docs. Target syntax has no such scheme (it would be
 * read as a host), so the error names what to write instead. */
static int address_refuse_url(const char *text, char *err, size_t errlen)
{
    const char *mark = strstr(text, ADDRESS_URL_MARK);
    if (!mark || mark == text)
        return 0;
    for (const char *p = text; p < mark; p++)
        if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
            return 0;
    const char *rest = mark + strlen(ADDRESS_URL_MARK);
    int authority = (int)strcspn(rest, "/");
    int has_port = memchr(rest, ':', (size_t)authority) != NULL;
    address_fail(err, errlen, "a URL scheme (%.*s) is no part of an address: write %.*s%s",
                 (int)(mark - text) + (int)strlen(ADDRESS_URL_MARK), text, authority, rest,
                 has_port ? "" : ":PORT");
    return -1;
}

int address_parse(const char *text, struct address *out, char *err, size_t errlen)
{
    if (!text || !out)
        return address_fail(err, errlen, "no address given");
    memset(out, 0, sizeof *out);
    if (text[0] == '\0')
        return address_fail(err, errlen, "empty address");
    if (address_starts(text, ADDRESS_TLS_PREFIX)) {
        text += strlen(ADDRESS_TLS_PREFIX);
        if (address_starts(text, ADDRESS_UNIX_PREFIX))
            return address_fail(err, errlen, "tls: is for TCP addresses (tls:HOST:PORT)");
        out->tls = 1;
    }
    if (address_starts(text, ADDRESS_UNIX_PREFIX))
        return address_parse_unix(text + strlen(ADDRESS_UNIX_PREFIX), out, err, errlen);
    if (address_starts(text, ADDRESS_ABSTRACT_PREFIX))
        return address_fail(err, errlen, "unix-abstract: sockets are not supported; use "
                            "unix:PATH (a socket file, which its mode and group guard)");
    if (address_starts(text, ADDRESS_IPV4_PREFIX))
        return address_parse_ip(text + strlen(ADDRESS_IPV4_PREFIX), AF_INET, out, err, errlen);
    if (address_starts(text, ADDRESS_IPV6_PREFIX))
        return address_parse_ip(text + strlen(ADDRESS_IPV6_PREFIX), AF_INET6, out, err, errlen);
    if (address_starts(text, ADDRESS_DNS_PREFIX)) {
        text += strlen(ADDRESS_DNS_PREFIX);
        if (address_starts(text, ADDRESS_DNS_AUTHORITY))
            text += strlen(ADDRESS_DNS_AUTHORITY);
        else if (address_starts(text, "//"))
            return address_fail(err, errlen, "dns: authorities are not supported; use dns:///HOST:PORT");
    }
    if (address_refuse_url(text, err, errlen) != 0)
        return -1;
    return address_parse_tcp(text, out, err, errlen);
}

int address_region_path(const struct address *a, char *out, size_t outlen)
{
    if (a->kind != ADDRESS_UNIX)
        return -1;
    int n = snprintf(out, outlen, "%s" ADDRESS_REGION_SUFFIX, a->path);
    return n < 0 || (size_t)n >= outlen || (size_t)n >= ADDRESS_PATH_MAX ? -1 : 0;
}

int address_parse_list(const char *text, struct address *out, size_t max, size_t *n, char *err,
                       size_t errlen)
{
    *n = 0;
    for (const char *p = text;; p++) {
        const char *end = strchr(p, ADDRESS_LIST_SEPARATOR);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (*n == max)
            return address_fail(err, errlen, "more than %zu addresses in '%s'", max, text);
        char one[ADDRESS_PATH_MAX + ADDRESS_HOST_MAX];
        if (len == 0 || len >= sizeof one)
            return address_fail(err, errlen, "address %zu of '%s' is %s", *n + 1, text,
                                len ? "too long" : "empty");
        memcpy(one, p, len);
        one[len] = '\0';
        char why[ADDRESS_ERROR_MAX];
        if (address_parse(one, &out[*n], why, sizeof why) != 0)
            return end || *n ? address_fail(err, errlen, "address %zu of '%s': %s", *n + 1, text,
                                            why)
                             : address_fail(err, errlen, "%s", why);
        ++*n;
        if (!end)
            return 0;
        p = end;
    }
}
