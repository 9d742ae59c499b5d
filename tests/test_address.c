/* SPDX-License-Identifier: MIT */
/* test_address.c: gRPC target syntax parsing (common/address.c), good and
 * bad forms. No sockets involved. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "address.h"

static struct address parse_ok(const char *text)
{
    struct address a;
    char err[128] = "";
    int rc = address_parse(text, &a, err, sizeof err);
    ck_assert_msg(rc == 0, "'%s' refused: %s", text, err);
    return a;
}

static void parse_bad(const char *text, const char *want_in_err)
{
    struct address a;
    char err[128] = "";
    ck_assert_msg(address_parse(text, &a, err, sizeof err) == -1, "'%s' accepted", text);
    ck_assert_msg(err[0] != '\0', "no reason for '%s'", text);
    if (want_in_err)
        ck_assert_msg(strstr(err, want_in_err), "'%s': reason '%s' lacks '%s'", text, err,
                      want_in_err);
}

START_TEST(unix_forms)
{
    struct address a = parse_ok("unix:/run/ampd/ampd.sock");
    ck_assert_int_eq(a.kind, ADDRESS_UNIX);
    ck_assert_str_eq(a.path, "/run/ampd/ampd.sock");
    a = parse_ok("unix:///tmp/x.sock");
    ck_assert_int_eq(a.kind, ADDRESS_UNIX);
    ck_assert_str_eq(a.path, "/tmp/x.sock");
    a = parse_ok("unix:rel/dir/s");
    ck_assert_str_eq(a.path, "rel/dir/s");
}
END_TEST

START_TEST(unix_bad)
{
    parse_bad("unix:", "empty");
    parse_bad("unix://", "absolute");
    parse_bad("unix://host/path", "absolute");
    char longpath[300] = "unix:/";
    memset(longpath + 6, 'a', 200);
    longpath[206] = '\0';
    parse_bad(longpath, "longer");
}
END_TEST

START_TEST(unix_path_limit)
{
    /* 107 bytes of path fit sun_path with its NUL; 108 do not. */
    char text[200] = "unix:/";
    memset(text + 6, 'p', 106);
    text[112] = '\0';
    struct address a = parse_ok(text);
    ck_assert_uint_eq(strlen(a.path), ADDRESS_PATH_MAX - 1);
    text[112] = 'p';
    text[113] = '\0';
    parse_bad(text, "longer");
}
END_TEST

START_TEST(tcp_forms)
{
    struct address a = parse_ok("127.0.0.1:50051");
    ck_assert_int_eq(a.kind, ADDRESS_TCP);
    ck_assert_str_eq(a.host, "127.0.0.1");
    ck_assert_int_eq(a.port, 50051);
    a = parse_ok("localhost:1");
    ck_assert_str_eq(a.host, "localhost");
    ck_assert_int_eq(a.port, 1);
    a = parse_ok("[::1]:65535");
    ck_assert_str_eq(a.host, "::1");
    ck_assert_int_eq(a.port, 65535);
    a = parse_ok("[fe80::1%lo]:0");
    ck_assert_str_eq(a.host, "fe80::1%lo");
    ck_assert_int_eq(a.port, 0);
    a = parse_ok(":8080");
    ck_assert_int_eq(a.kind, ADDRESS_TCP);
    ck_assert_str_eq(a.host, "127.0.0.1");
    ck_assert_int_eq(a.port, 8080);
    a = parse_ok("dns:///example.org:443");
    ck_assert_str_eq(a.host, "example.org");
    ck_assert_int_eq(a.port, 443);
    a = parse_ok("dns:h:2");
    ck_assert_str_eq(a.host, "h");
    /* gRPC's ipv4: and ipv6: forms. */
    a = parse_ok("ipv4:127.0.0.1:50051");
    ck_assert_int_eq(a.kind, ADDRESS_TCP);
    ck_assert_str_eq(a.host, "127.0.0.1");
    ck_assert_int_eq(a.port, 50051);
    a = parse_ok("ipv6:[::1]:50051");
    ck_assert_str_eq(a.host, "::1");
    ck_assert_int_eq(a.port, 50051);
    ck_assert_int_eq(parse_ok("tls:ipv4:10.0.0.7:443").tls, 1);
}
END_TEST

START_TEST(tcp_bad)
{
    parse_bad("", "empty");
    parse_bad("localhost", "not an address");
    parse_bad("localhost:", "missing port");
    parse_bad("host:port", "not a number");
    parse_bad("host:-1", "not a number");
    parse_bad("host:65536", "out of range");
    parse_bad("host:99999999999999999999", "out of range");
    parse_bad("::1:80", "brackets");
    parse_bad("[::1]", "PORT");
    parse_bad("[::1", "']'");
    parse_bad("[]:80", "empty");
    parse_bad("[::1]:", "missing port");
    parse_bad("a b:80", "bad character");
    parse_bad("dns://auth/h:1", "authorities");
    parse_bad("dns:", NULL);
    parse_bad("ipv4:localhost:80", "IPv4 address");
    parse_bad("ipv4:[::1]:80", "IPv4 address");
    parse_bad("ipv6:127.0.0.1:80", "IPv6 address");
    parse_bad("ipv6:[::1]", "PORT");
    parse_bad("unix-abstract:ampd", "not supported");
}
END_TEST

START_TEST(tls_forms)
{
    struct address a = parse_ok("tls:localhost:443");
    ck_assert_int_eq(a.kind, ADDRESS_TCP);
    ck_assert_int_eq(a.tls, 1);
    ck_assert_str_eq(a.host, "localhost");
    ck_assert_int_eq(a.port, 443);
    a = parse_ok("tls:[::1]:8443");
    ck_assert_int_eq(a.tls, 1);
    ck_assert_str_eq(a.host, "::1");
    a = parse_ok("tls::9000");
    ck_assert_str_eq(a.host, "127.0.0.1");
    a = parse_ok("tls:dns:///example.org:443");
    ck_assert_int_eq(a.tls, 1);
    ck_assert_str_eq(a.host, "example.org");
    ck_assert_int_eq(parse_ok("localhost:443").tls, 0);
    ck_assert_int_eq(parse_ok("unix:/x").tls, 0);
    parse_bad("tls:unix:/x", "TCP");
    parse_bad("tls:", NULL);
    parse_bad("tls:host", "not an address");
}
END_TEST

START_TEST(null_args)
{
    struct address a;
    char err[64];
    ck_assert_int_eq(address_parse(NULL, &a, err, sizeof err), -1);
    ck_assert_int_eq(address_parse("unix:/x", NULL, err, sizeof err), -1);
    /* A missing error buffer is allowed. */
    ck_assert_int_eq(address_parse("nonsense", &a, NULL, 0), -1);
    ck_assert_int_eq(address_parse("unix:/x", &a, NULL, 0), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("address");
    const TTest *const tests[] = {
        unix_forms,
        unix_bad,
        unix_path_limit,
        tcp_forms,
        tcp_bad,
        tls_forms,
        null_args,
        NULL,
    };
    check_run_case(s, "parse", tests);
    return check_run(s, CK_FORK_GETENV);
}
