/* SPDX-License-Identifier: MIT */
/* test_dev_select.c: the --devices selection (daemon/dev_select.c) on
 * made-up device lists: auto, all, types, indices and mixes pick the
 * devices they name; bad words, empty items, out-of-range indices and
 * selections that match nothing are refused with a message naming
 * --devices. */
#include <check.h>
#include <string.h>

#include "check_run.h"
#include "dev_select.h"

#define MAX_CANDS 8

/* Parses text and picks from the types of a made-up host; the picked
 * indices as a string of '0'/'1', or the error. */
static long pick(const char *text, const enum dev_type *types, size_t n, char *got, char *err,
                 size_t errlen)
{
    static const char *names[MAX_CANDS] = { "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7" };
    struct dev_select_cand cands[MAX_CANDS];
    bool chosen[MAX_CANDS];
    for (size_t i = 0; i < n; i++)
        cands[i] = (struct dev_select_cand){ types[i], names[i] };
    struct dev_select sel;
    err[0] = '\0';
    if (dev_select_parse(text, &sel, err, errlen) < 0)
        return -2;
    long rc = dev_select_pick(&sel, text, cands, n, chosen, err, errlen);
    for (size_t i = 0; i < n; i++)
        got[i] = chosen[i] ? '1' : '0';
    got[n] = '\0';
    return rc;
}

/* A GPU host with PoCL: two GPUs, an accelerator, a CPU (list order). */
static const enum dev_type gpu_host[] = { DEV_GPU, DEV_GPU, DEV_ACCEL, DEV_CPU };
/* This machine with POCL_DEVICES="pthread pthread". */
static const enum dev_type cpu_host[] = { DEV_CPU, DEV_CPU };

START_TEST(picks_what_it_names)
{
    static const struct {
        const char *text;
        const enum dev_type *types;
        size_t n;
        const char *want;
    } cases[] = {
        { "auto", gpu_host, 4, "1110" },
        { "auto", cpu_host, 2, "11" },
        { "all", gpu_host, 4, "1111" },
        { "gpu", gpu_host, 4, "1100" },
        { "cpu", gpu_host, 4, "0001" },
        { "accelerator", gpu_host, 4, "0010" },
        { "gpu,cpu", gpu_host, 4, "1101" },
        { "1", gpu_host, 4, "0100" },
        { "1", cpu_host, 2, "01" },
        { "0", cpu_host, 2, "10" },
        { "3,0", gpu_host, 4, "1001" },
        { "0,gpu,0", gpu_host, 4, "1100" },
        { "cpu,1", gpu_host, 4, "0101" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[MAX_CANDS + 1], err[512];
        long rc = pick(cases[i].text, cases[i].types, cases[i].n, got, err, sizeof err);
        ck_assert_msg(rc > 0, "%s: %s", cases[i].text, err);
        ck_assert_msg(strcmp(got, cases[i].want) == 0, "%s: picked %s, want %s", cases[i].text,
                      got, cases[i].want);
        long want_n = 0;
        for (const char *w = cases[i].want; *w; w++)
            want_n += *w == '1';
        ck_assert_int_eq(rc, want_n);
    }
}
END_TEST

START_TEST(bad_words_refused)
{
    static const char *bad[] = { "", "gpus", "GPU", ",", "gpu,", ",cpu", "gpu,,cpu", "auto,1",
                                 "all,gpu", "-1", "1x", "+1", "0x1", " 1", "99999999999",
                                 "accelerator-card-of-a-very-long-name-indeed" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct dev_select sel;
        char err[256] = "";
        ck_assert_msg(dev_select_parse(bad[i], &sel, err, sizeof err) == -1, "'%s' parsed",
                      bad[i]);
        ck_assert_msg(strstr(err, "--devices") != NULL, "'%s': %s", bad[i], err);
    }
}
END_TEST

START_TEST(too_many_indices_refused)
{
    char text[4 * (DEV_SELECT_MAX_INDICES + 1)] = "";
    for (int i = 0; i <= DEV_SELECT_MAX_INDICES; i++)
        strcat(text, i ? ",0" : "0");
    struct dev_select sel;
    char err[256] = "";
    ck_assert_int_eq(dev_select_parse(text, &sel, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--devices") && strstr(err, "at most"), "%s", err);
}
END_TEST

START_TEST(out_of_range_index_refused)
{
    char got[MAX_CANDS + 1], err[512];
    ck_assert_int_eq(pick("2", cpu_host, 2, got, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--devices 2") && strstr(err, "no device 2") &&
                  strstr(err, "0: d0 (cpu), 1: d1 (cpu)"), "%s", err);
    ck_assert_int_eq(pick("gpu,4", gpu_host, 4, got, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--devices gpu,4") && strstr(err, "no device 4"), "%s", err);
}
END_TEST

START_TEST(no_match_refused_naming_what_exists)
{
    char got[MAX_CANDS + 1], err[512];
    ck_assert_int_eq(pick("gpu", cpu_host, 2, got, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--devices gpu matches no device") &&
                  strstr(err, "0: d0 (cpu), 1: d1 (cpu)"), "%s", err);
    ck_assert_int_eq(pick("accelerator", cpu_host, 2, got, err, sizeof err), -1);
    ck_assert_int_eq(pick("auto", cpu_host, 0, got, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--devices auto") && strstr(err, "none"), "%s", err);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = { picks_what_it_names, bad_words_refused,
                                   too_many_indices_refused, out_of_range_index_refused,
                                   no_match_refused_naming_what_exists, NULL };
    Suite *s = suite_create("dev_select");
    check_run_case(s, "dev_select", tests);
    return check_run(s, CK_FORK_GETENV);
}
