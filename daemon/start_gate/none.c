/* SPDX-License-Identifier: MIT */
/* start_gate/none.c: the shipped ampd's start gate: none (start_gate.h). */
#include "start_gate.h"

void start_gate_wait(void)
{
}
