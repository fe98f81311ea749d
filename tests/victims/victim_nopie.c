// SPDX-License-Identifier: BSD-2-Clause
/* The engine victim built as a non-PIE (ET_EXEC) executable. */
#include "victim_engine.c"
