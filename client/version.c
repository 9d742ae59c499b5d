/* SPDX-License-Identifier: MIT */
/* version.c: the library's version at run time (amp_version.h has it at
 * compile time), so a program can tell which libampclient it loaded. */
#include "amp.h"

unsigned amp_version(void)
{
    return AMP_VERSION_HEX;
}

const char *amp_version_string(void)
{
    return AMP_VERSION_STRING;
}
