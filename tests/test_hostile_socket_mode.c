/* SPDX-License-Identifier: MIT */
/* test_hostile_socket_mode.c: issue 10, reproducer 7. The Unix socket's
 * permissions do not follow the daemon's umask: with umask 000 the file is
 * 0660 by default (owner and group may connect, others may not), and
 * --socket-mode 0600 makes it 0600. Its group is the daemon's own by
 * default. */
#include <check.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"

static struct daemon_proc ampd;

/* Starts ampd under umask 000 and returns its socket's mode bits. */
static mode_t socket_mode(const char *const *args, gid_t *gid)
{
    mode_t old = umask(0);
    hostile_start(&ampd, args);
    umask(old);
    struct stat st;
    ck_assert_int_eq(stat(ampd.sock_path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    *gid = st.st_gid;
    return st.st_mode & 07777;
}

START_TEST(default_mode_is_0660)
{
    gid_t gid;
    ck_assert_uint_eq(socket_mode(NULL, &gid), 0660);
    ck_assert_uint_eq(gid, getegid());
    hostile_assert_served(ampd.address);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(socket_mode_0600)
{
    static const char *const args[] = { "--socket-mode", "0600", NULL };
    gid_t gid;
    ck_assert_uint_eq(socket_mode(args, &gid), 0600);
    hostile_assert_served(ampd.address);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_socket_mode");
    const TTest *const tests[] = {
        default_mode_is_0660,
        socket_mode_0600,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
