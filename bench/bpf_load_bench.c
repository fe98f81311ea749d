// SPDX-License-Identifier: BSD-2-Clause
/*
 * bpf_load_bench: what loading proftrace's BPF programs costs, program by
 * program, as the kernel's verifier reports it (log level 4: verification
 * time and instructions processed). Both objects are loaded whole, as
 * proftrace loads them for a targets file with native: probes, py: probes
 * read by the agent and values (the dearest case); `--no-vals` as for one
 * without values (the readers are dead code then).
 *
 * Output: one `program verify_us insns` line per program, for bench/run.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <linux/types.h>

#include "bpf/proftrace.h"
#include "proftrace.skel.h"
#include "pysample.skel.h"

#define LOG_SIZE (1 << 16)

static void set_logs(struct bpf_object *obj)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
	{
		bpf_program__set_log_level(p, 4);
		bpf_program__set_log_buf(p, calloc(1, LOG_SIZE), LOG_SIZE);
	}
}

static void print_stats(struct bpf_object *obj)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, obj)
	{
		size_t n;
		const char *log = bpf_program__log_buf(p, &n);
		const char *t = log ? strstr(log, "verification time ") : NULL;
		const char *i = log ? strstr(log, "processed ") : NULL;

		if (!bpf_program__autoload(p))
			continue;
		printf("%s %ld %ld\n", bpf_program__name(p),
		       t ? strtol(t + strlen("verification time "), NULL, 10) : -1L,
		       i ? strtol(i + strlen("processed "), NULL, 10) : -1L);
	}
}

int main(int argc, char **argv)
{
	int vals = !(argc > 1 && !strcmp(argv[1], "--no-vals"));
	struct proftrace_bpf *pt = proftrace_bpf__open();
	struct pysample_bpf *ps = pysample_bpf__open();

	if (!pt || !ps) {
		fprintf(stderr, "bpf_load_bench: cannot open the BPF objects\n");
		return 1;
	}
	pt->rodata->has_vals = vals;
	/* the session program needs 6.13+; the fork one is --children only */
	bpf_program__set_autoload(pt->progs.pt_py_session, false);
	bpf_program__set_autoload(pt->progs.pt_fork, false);
	bpf_map__set_max_entries(pt->maps.val_scratch, libbpf_num_possible_cpus());
	set_logs(pt->obj);
	set_logs(ps->obj);
	if (proftrace_bpf__load(pt) || pysample_bpf__load(ps)) {
		fprintf(stderr, "bpf_load_bench: load failed (root? kernel with BTF?)\n");
		return 1;
	}
	print_stats(pt->obj);
	print_stats(ps->obj);
	proftrace_bpf__destroy(pt);
	pysample_bpf__destroy(ps);
	return 0;
}
