// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_elf__open() and what the attacher does with the
 * result: every ELF file a target maps is read, and the target chose them.
 * pt_elf__open() takes a path, so the input goes into a memfd opened
 * through /proc/self/fd/N. Build and run with `make fuzz`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attach/elfsyms.h"

static int memfd = -1;

static int write_all(int fd, const uint8_t *data, size_t size)
{
	ssize_t n;

	while (size) {
		n = write(fd, data, size);
		if (n <= 0)
			return -1;
		data += n;
		size -= n;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *near[4];
	struct pt_elf *e;
	char path[64];
	uint8_t buf[16];
	char rp[256];
	size_t i;
	int rc;

	/* One memfd for the whole run, rewritten for each input. */
	if (memfd < 0) {
		memfd = memfd_create("fuzz_elf", MFD_CLOEXEC);
		if (memfd < 0)
			__builtin_trap();
	}
	if (ftruncate(memfd, 0) || lseek(memfd, 0, SEEK_SET) || write_all(memfd, data, size))
		__builtin_trap();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);

	/* the search path the prearm reads out of every file the target maps */
	rc = pt_elf__runpath(path, rp, sizeof(rp));
	if (rc ? rp[0] != 0 : strlen(rp) >= sizeof(rp))
		__builtin_trap();
	if (pt_elf__open(&e, path))
		return 0;
	for (i = 0; i < e->nsyms; i++) {
		if (!e->syms[i].name)
			__builtin_trap();
		if (i && e->syms[i - 1].file_off > e->syms[i].file_off)
			__builtin_trap(); /* documented sort order */
		(void)pt_elf__read(e, e->syms[i].file_off, buf, sizeof(buf));
	}
	(void)pt_elf__closest(e, "main_loop", near, 4);
	pt_elf__free(e);
	return 0;
}
