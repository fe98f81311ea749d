// SPDX-License-Identifier: BSD-2-Clause
/*
 * Source of the ELF seeds in corpus/elf/ (not built by make: the seeds are
 * committed so the corpus does not change with the toolchain). Locals, an
 * IFUNC, and in the library two versions of one name, so the seeds reach
 * every branch of add_syms(). Rebuild with
 *
 *   L="-Wl,-z,noseparate-code -Wl,-z,max-page-size=0x1000 -Wl,--build-id=none \
 *      -Wl,-z,norelro -fno-asynchronous-unwind-tables -Wl,--hash-style=gnu"
 *   gcc -Os -nostdlib -static $L elf_seed.c -o corpus/elf/static_exec
 *   gcc -Os -nostdlib -fPIE -pie $L elf_seed.c -o corpus/elf/pie
 *   gcc -Os -nostdlib -fPIC -shared -DLIB $L -Wl,--version-script=elf_seed.map \
 *       elf_seed.c -o corpus/elf/shared_versioned.so
 *   strip -s corpus/elf/shared_versioned.so -o corpus/elf/shared_stripped.so
 *   gcc -Os -nostdlib -fPIC -shared -DLIB $L -Wl,--version-script=elf_seed.map \
 *       -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../lib:/opt/x' \
 *       elf_seed.c -o corpus/elf/shared_runpath.so
 *
 * (noseparate-code and the small page size keep each file near 2 KB.)
 */
static __attribute__((noinline)) int fx_local(int a)
{
	asm volatile("");
	return a * 3;
}

__attribute__((noinline)) int fx_add(int a, int b)
{
	asm volatile("");
	return a + b;
}

__attribute__((noinline)) int main_loop(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s = fx_add(s, fx_local(i));
	return s;
}

static int impl(int a)
{
	return a;
}

static void *resolve_fx_ifunc(void)
{
	return (void *)impl;
}

int fx_ifunc(int) __attribute__((ifunc("resolve_fx_ifunc")));

#ifdef LIB
__asm__(".symver fx_add_v1, fx_ver@V1");
__asm__(".symver fx_add, fx_ver@@V2");

__attribute__((noinline)) int fx_add_v1(int a, int b)
{
	return a - b;
}
#else
void _start(void)
{
	main_loop(3);
	asm volatile("mov $60, %eax; xor %edi, %edi; syscall");
}
#endif
