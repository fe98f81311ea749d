// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_py_layout__from_debug_offsets() (python/
 * pylayout.c): the _Py_DebugOffsets words are read out of the target's
 * _PyRuntime, so any bytes may arrive. Build and run with `make fuzz`.
 *
 * Input: [0] flags (bit 0: stamp the "xdebugpy" cookie, a 3.13 version
 * and a GIL build, so most inputs reach the offset checks), then the
 * words. Beyond sanitizer findings, it traps when an accepted layout
 * gives BPF an offset outside the struct it was checked against.
 */
#include <stdint.h>
#include <string.h>

#include "python/pylayout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[PT_PY_DEBUG_OFFSETS_LEN + 64];
	struct pt_py_layout L;
	struct pt_py_offsets o;
	uint32_t hex = 0;
	size_t len;
	char err[256];

	if (!size)
		return 0;
	memset(buf, 0, sizeof(buf));
	len = size - 1 < sizeof(buf) ? size - 1 : sizeof(buf);
	memcpy(buf, data + 1, len);
	if (data[0] & 1) {
		uint64_t v = 0x030d00f0;

		memcpy(buf, "xdebugpy", 8);
		memcpy(buf + 8, &v, 8);
		len = sizeof(buf);
	}
	if (pt_py_layout__from_debug_offsets(&L, buf, len, &hex, err, sizeof(err)))
		return 0;
	if ((hex >> 16) != 0x030d)
		__builtin_trap();
	pt_py_layout__offsets(&L, &o);
	if (o.minor != 13 || o.frame_code > 4096 || o.frame_ip > 4096 || o.code_filename > 4096 ||
	    o.code_firstlineno > 4096)
		__builtin_trap();
	return 0;
}
