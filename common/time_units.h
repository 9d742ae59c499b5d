/* SPDX-License-Identifier: MIT */
/* time_units.h: milliseconds in a second, for every file that converts
 * (options, metrics, status, top), stated once. */
#ifndef AMP_TIME_UNITS_H
#define AMP_TIME_UNITS_H

#define TIME_MS_PER_S 1000u

#endif
