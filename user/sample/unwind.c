// SPDX-License-Identifier: BSD-2-Clause
/*
 * Native stacks from a copy: libdw's dwfl unwinder over the copied stack
 * bytes, each pc named once and cached. See unwind.h.
 *
 * Cost (tests/unit/sample/test_unwind.c's test_cost, release build, a
 * 2-core VM): 0.35 us per 20-frame stack with every pc cached, through
 * the fast walk (cached rules, below); 12.5 us through libdw's own walk,
 * which per frame finds the module, the FDE and runs its CFI program
 * again. A process's first stacks pay for opening its ELF files, their
 * symbol tables and CFI: ~35 ms in all for a Python process here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>

#include "sample/unwind.h"
#include "util/demangle.h"
#include "util/util.h"

#define EVAL_SYM "_PyEval_EvalFrameDefault"
#define OWN_PREFIX "libproftrace_"
/* a dlopen'ed library is looked for in maps at most this often */
#define REREPORT_NS 100000000ull
/* x86-64 DWARF registers 0-16: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
#define NDWARF 17
#define DWARF_BP 6
#define DWARF_SP 7
#define DWARF_RA 16
#define CACHE_SLOTS 4096 /* a power of 2 */

/* What we know of a module, in its dwfl userdata slot. */
struct pt_umod {
	struct pt_umod *next; /* all of them, freed with the unwinder */
	struct pt_unwind *u;
	const char *base; /* interned basename */
	bool checked;	  /* EVAL_SYM looked for */
	bool interp;	  /* defines EVAL_SYM */
	bool own;
	uint64_t eval_lo, eval_hi; /* EVAL_SYM's [start, end), absolute */
	/* its sized code symbols by address (see check_interp); NULL: not
	 * made (out of memory), libdw's own search then */
	struct usym *syms;
	size_t nsyms;
	/* rules found so far, by the address range each holds for (a CFI
	 * row), sorted: a hot loop's leaf pcs are new at nearly every sample,
	 * their row is not */
	struct urange *ranges;
	size_t nranges, rangecap;
};

/* A CFI row's [lo, hi) (absolute) and its rule: RULE_* (below); for
 * RULE_SIMPLE, CFA = cfa_reg (DWARF_SP or DWARF_BP) + cfa_off, the return
 * address at CFA + ra_off, rbp at CFA + bp_off if bp_saved (else
 * unchanged). */
struct urange {
	uint64_t lo, hi;
	uint8_t rule, cfa_reg;
	bool bp_saved;
	int32_t cfa_off, ra_off, bp_off;
};
#define MAX_RANGES 65536 /* per module; past it, rows are asked of libdw again */

/* A code symbol: [lo, hi) absolute, its index in the module's table
 * (libdw names it from there), and how much its binding is preferred
 * where several start at one address. */
struct usym {
	uint64_t lo, hi;
	int idx;
	int rank;
};

struct pc_slot {
	uint64_t pc;
	uint64_t gen; /* 0: empty; else the maps generation it was named in */
	const char *sym, *module;
	struct pt_umod *m; /* module, NULL: unknown */
	uint64_t modoff;
	enum pt_unwind_kind kind;
	uint8_t cfi; /* 0: not looked at yet, 1: pc has CFI, 2: none */
	/* its unwind rule for the fast walk (fast_walk); rule.rule 0: not
	 * looked at yet */
	struct urange rule;
};

enum {
	RULE_UNKNOWN,
	RULE_SIMPLE, /* CFA = rsp or rbp + off; ra, rbp at CFA + off */
	RULE_END,    /* the return address is undefined: the outermost frame */
	RULE_OTHER,  /* anything else (no CFI, an expression, a signal frame): libdw walks */
};

/* One sample's walk: what the dwfl callbacks see. */
struct walk {
	uint32_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t len;
	struct pt_unwind_frame *out;
	size_t max, n;
	enum pt_unwind_end end; /* set with an abort */
	bool aborted, rereport, beyond;
	uint64_t last_pc, last_sp;
	struct pc_slot *last; /* last_pc's cache slot */
};

struct pt_unwind {
	Dwfl *dwfl;
	Dwfl_Callbacks cbs;
	int pid;
	char *root;
	Elf *self; /* our own executable, for the architecture */
	int self_fd;
	struct pt_umod *mods;
	struct walk *w; /* during pt_unwind__stack */
	uint64_t gen, last_report_ns;
	size_t nmods, adopted, fresh; /* modules after the last report; counts during one */
	struct pc_slot *cache;
	bool libdw_only;
	char **strs; /* interned strings: open addressing */
	size_t nstrs, strcap;
	struct pt_unwind_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Strings handed out stay valid until pt_unwind__free, across re-reports
 * that drop the modules libdw's own strings belong to: each distinct one
 * is copied once. NULL when out of memory. */
static const char *intern(struct pt_unwind *u, const char *s)
{
	size_t i;

	if (u->nstrs * 2 >= u->strcap) {
		size_t cap = u->strcap ? u->strcap * 2 : 1024;
		char **n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < u->strcap; j++) {
			if (!u->strs[j])
				continue;
			for (i = pt_fnv1a(u->strs[j]) & (cap - 1); n[i]; i = (i + 1) & (cap - 1))
				;
			n[i] = u->strs[j];
		}
		free(u->strs);
		u->strs = n;
		u->strcap = cap;
	}
	for (i = pt_fnv1a(s) & (u->strcap - 1); u->strs[i]; i = (i + 1) & (u->strcap - 1))
		if (!strcmp(u->strs[i], s))
			return u->strs[i];
	u->strs[i] = strdup(s);
	if (u->strs[i])
		u->nstrs++;
	return u->strs[i];
}

const char *pt_unwind__demangle(const char *name, char *buf, size_t len)
{
	char *d;

	if (!name || strncmp(name, "_Z", 2) || !len)
		return name;
	d = pt_demangle(name);
	if (!d)
		return name;
	snprintf(buf, len, "%s", d);
	free(d);
	return buf;
}

/* Modules are opened under root when there is one: the maps' paths are
 * the target's, in its mount namespace. Names that are not paths
 * ("[vdso]") are libdw's own business. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	struct pt_umod *m = *userdata;
	char path[4096];
	int fd;

	if (!m || !m->u->root || name[0] != '/')
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	if (snprintf(path, sizeof(path), "%s%s", m->u->root, name) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	*file_name = strdup(path);
	return fd;
}

/* Every module gets its pt_umod before libdw opens its ELF (lazily, on
 * first use), so that find_elf finds the root through it. */
static int adopt_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			void *arg)
{
	struct pt_unwind *u = arg;
	struct pt_umod *m;
	const char *slash = strrchr(name, '/');

	u->adopted++;
	if (*userdata)
		return DWARF_CB_OK;
	u->fresh++;
	m = calloc(1, sizeof(*m));
	if (!m)
		return DWARF_CB_ABORT;
	m->u = u;
	if (name[0] == '[' && strchr(name, ':')) {
		/* libdw's "[vdso: 1234]": the pid is not the module's name */
		char plain[64];

		snprintf(plain, sizeof(plain), "%.*s]", (int)(strchr(name, ':') - name), name);
		m->base = intern(u, plain);
	} else {
		m->base = intern(u, slash ? slash + 1 : name);
	}
	m->own = m->base && !strncmp(m->base, OWN_PREFIX, strlen(OWN_PREFIX));
	m->next = u->mods;
	u->mods = m;
	*userdata = m;
	return DWARF_CB_OK;
}

static int report(struct pt_unwind *u)
{
	int err;

	dwfl_report_begin(u->dwfl);
	err = dwfl_linux_proc_report(u->dwfl, u->pid);
	if (dwfl_report_end(u->dwfl, NULL, NULL) || err)
		return err > 0 ? -err : -ESRCH;
	u->adopted = u->fresh = 0;
	if (dwfl_getmodules(u->dwfl, adopt_module, u, 0) != 0)
		return -ENOMEM;
	/* A pc may now be in another library: the cache is emptied, unless
	 * the modules are those of the last report (a pc in JIT code, e.g.
	 * CPython's perf trampolines, asks again every REREPORT_NS: it must
	 * not throw away every name and rule each time). */
	if (u->fresh || u->adopted != u->nmods)
		u->gen++;
	u->nmods = u->adopted;
	u->last_report_ns = now_ns();
	u->st.reports++;
	return 0;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	return 0; /* only ever asked for one thread, by get_thread */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct pt_unwind *u = arg;

	*thread_argp = u;
	return u->w && (uint32_t)tid == u->w->tid;
}

/* The copy only: the target's memory has moved on since the sample. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct walk *w = ((struct pt_unwind *)arg)->w;
	uint64_t sp = w->regs[PT_UREG_SP];

	if (addr < sp || addr - sp > w->len || w->len - (addr - sp) < sizeof(*result)) {
		w->beyond = true;
		return false;
	}
	memcpy(result, w->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	static const enum pt_ureg of_dwarf[NDWARF] = {
		PT_UREG_AX,  PT_UREG_DX,  PT_UREG_CX,  PT_UREG_BX,  PT_UREG_SI,	 PT_UREG_DI,
		PT_UREG_BP,  PT_UREG_SP,  PT_UREG_R8,  PT_UREG_R9,  PT_UREG_R10, PT_UREG_R11,
		PT_UREG_R12, PT_UREG_R13, PT_UREG_R14, PT_UREG_R15, PT_UREG_IP,
	};
	struct walk *w = ((struct pt_unwind *)arg)->w;
	Dwarf_Word dw[NDWARF];

	for (int i = 0; i < NDWARF; i++)
		dw[i] = w->regs[of_dwarf[i]];
	dwfl_thread_state_register_pc(thread, w->regs[PT_UREG_IP]);
	return dwfl_thread_state_registers(thread, 0, NDWARF, dw);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int usym_cmp(const void *a, const void *b)
{
	const struct usym *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return y->rank - x->rank; /* the preferred first */
}

static int bind_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 2;
	case STB_WEAK:
		return 1;
	default:
		return 0;
	}
}

/*
 * Once per module: does it define EVAL_SYM, and where (distro builds
 * export it, .dynsym; pyenv's keep .symtab: either is enough)? And its
 * sized code symbols sorted by address, for names by binary search:
 * libdw's dwfl_module_addrinfo looks at every symbol of the module each
 * time (libtorch_cpu 1.13 exports 67,436), and a hot loop's leaf pc is
 * new at nearly every sample (measured: 823 us per stack on a torch
 * forward, 97 us with this table).
 */
static void check_interp(struct pt_umod *m, Dwfl_Module *mod)
{
	int n = dwfl_module_getsymtab(mod);
	size_t k = 0;
	GElf_Sym sym;
	GElf_Addr addr;

	m->checked = true;
	m->syms = n > 1 ? malloc((size_t)n * sizeof(*m->syms)) : NULL;
	for (int i = 1; i < n; i++) {
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !name[0] || !sym.st_size || sym.st_shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		if (type == STT_FUNC && !strcmp(name, EVAL_SYM)) {
			m->interp = true;
			m->eval_lo = addr;
			m->eval_hi = addr + sym.st_size;
		}
		if (m->syms)
			m->syms[k++] = (struct usym){ .lo = addr,
						      .hi = addr + sym.st_size,
						      .idx = i,
						      .rank = bind_rank(&sym) };
	}
	if (!m->syms)
		return;
	qsort(m->syms, k, sizeof(*m->syms), usym_cmp);
	m->nsyms = 0;
	for (size_t i = 0; i < k; i++) /* one per address: the preferred */
		if (!m->nsyms || m->syms[m->nsyms - 1].lo != m->syms[i].lo)
			m->syms[m->nsyms++] = m->syms[i];
}

/* How far back from the last symbol starting at or before a pc to look
 * for one that covers it: a symbol nested in a longer one (a local
 * label given a size) would hide it otherwise. */
#define NEST_BACK 8

/* The name of the sized symbol of m covering pc; NULL: none. */
static const char *sym_at(Dwfl_Module *mod, const struct pt_umod *m, uint64_t pc)
{
	size_t lo = 0, hi = m->nsyms;
	GElf_Sym sym;
	GElf_Addr addr;

	while (lo < hi) { /* the first symbol starting after pc */
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k-- > 0 && lo - k <= NEST_BACK;)
		if (pc < m->syms[k].hi)
			return dwfl_module_getsym_info(mod, m->syms[k].idx, &sym, &addr, NULL, NULL,
						       NULL);
	return NULL;
}

/* Name pc into s (a cache slot); false when pc is in no module. */
static bool name_pc(struct pt_unwind *u, uint64_t pc, struct pc_slot *s)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	struct pt_umod *m;
	void **ud;
	GElf_Off off;
	GElf_Sym sym;
	Dwarf_Addr bias = 0;
	const char *name;
	char buf[1024];

	memset(s, 0, sizeof(*s));
	s->pc = pc;
	if (!mod)
		return false;
	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	m = *ud;
	s->gen = u->gen;
	s->module = m ? m->base : NULL;
	s->m = m;
	if (m && !m->checked)
		check_interp(m, mod);
	if (dwfl_module_getelf(mod, &bias))
		s->modoff = pc - bias;
	if (m && m->syms) {
		name = sym_at(mod, m, pc);
	} else {
		name = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
		/* Only .dynsym in distro libraries: the nearest symbol before
		 * an unexported function is some other function, not this one. */
		if (name && (!sym.st_size || off >= sym.st_size))
			name = NULL;
	}
	if (name) {
		/* libdw names versioned symbols "__libc_start_main@@GLIBC_2.34" */
		char plain[512];
		const char *at = strchr(name, '@');

		if (at) {
			snprintf(plain, sizeof(plain), "%.*s", (int)(at - name), name);
			name = plain;
		}
		s->sym = intern(u, pt_unwind__demangle(name, buf, sizeof(buf)));
	}
	if (m && m->interp)
		s->kind = pc >= m->eval_lo && pc < m->eval_hi ? PT_UNWIND_EVAL : PT_UNWIND_INTERP;
	else if (m && m->own)
		s->kind = PT_UNWIND_OWN;
	return true;
}

static int stop(struct walk *w, enum pt_unwind_end end)
{
	w->aborted = true;
	w->end = end;
	return DWARF_CB_ABORT;
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct pt_unwind *u = arg;
	struct walk *w = u->w;
	struct pc_slot *s;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool act;

	if (!dwfl_frame_pc(frame, &pc, &act))
		return stop(w, PT_UNWIND_END_ERROR);
	if (pc == 0)
		return stop(w, PT_UNWIND_END_BOTTOM);
	/* a caller's pc is its return address: the call is the byte before */
	if (!act)
		pc--;
	/* libdw does not check that callers' frames move up the stack: a
	 * loop in garbage would run to max */
	if (dwfl_frame_reg(frame, DWARF_SP, &sp) == 0) {
		if (w->n && sp <= w->last_sp && !act)
			return stop(w, PT_UNWIND_END_ERROR);
		w->last_sp = sp;
	}
	if (w->n == w->max)
		return stop(w, PT_UNWIND_END_MAX);
	w->last_pc = pc;
	s = &u->cache[(pc ^ (pc >> 12)) & (CACHE_SLOTS - 1)];
	w->last = s;
	if (s->gen == u->gen && s->pc == pc) {
		u->st.hits++;
	} else if (!name_pc(u, pc, s)) {
		if (now_ns() - u->last_report_ns >= REREPORT_NS) {
			w->rereport = true; /* dlopen'ed since: maps again, walk again */
			return stop(w, PT_UNWIND_END_NOINFO);
		}
		w->out[w->n++] = (struct pt_unwind_frame){ .pc = pc };
		return stop(w, PT_UNWIND_END_NOINFO);
	}
	w->out[w->n++] = (struct pt_unwind_frame){
		.pc = pc, .sym = s->sym, .module = s->module, .modoff = s->modoff, .kind = s->kind
	};
	return DWARF_CB_OK;
}

/*
 * The fast walk. libdw finds the module, the FDE and runs its CFI program
 * again for every frame of every sample (~3 us a frame here). Compiled
 * code's rules are nearly all of one simple kind (CFA = rsp or rbp plus an
 * offset; the return address and rbp saved at fixed offsets from it), so
 * each pc's rule is asked of libdw once, kept in its cache slot, and a
 * stack whose every frame has such a rule is walked here from the copy,
 * as libdw would walk it. Any other frame (no CFI, a CFA expression, a
 * signal frame, a frame that does not move up the stack) gives the whole
 * stack to libdw, whose ends and frames stand; a pc in no module ends the
 * walk here as it ends libdw's.
 */

/* ops is [DW_OP_call_frame_cfa] or [DW_OP_call_frame_cfa,
 * DW_OP_plus_uconst N]: a location at CFA + N (N signed, as libdw stores
 * it). */
static bool at_cfa(const Dwarf_Op *ops, size_t nops, int32_t *off)
{
	int64_t n;

	if (!nops || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops != 2 || ops[1].atom != DW_OP_plus_uconst)
		return false;
	n = (int64_t)ops[1].number;
	if (n < INT32_MIN || n > INT32_MAX)
		return false;
	*off = (int32_t)n;
	return true;
}

static int rule_of_frame(Dwarf_Frame *fr, struct urange *r)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	bool signal;
	int64_t off;

	if (dwarf_frame_info(fr, NULL, NULL, &signal) != DWARF_RA || signal)
		return RULE_OTHER;
	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    (ops[0].number != DWARF_SP && ops[0].number != DWARF_BP))
		return RULE_OTHER;
	off = (int64_t)ops[0].number2;
	if (off < INT32_MIN || off > INT32_MAX)
		return RULE_OTHER;
	r->cfa_reg = (uint8_t)ops[0].number;
	r->cfa_off = (int32_t)off;
	if (dwarf_frame_register(fr, DWARF_RA, mem, &ops, &nops))
		return RULE_OTHER;
	if (!nops)
		return ops ? RULE_END : RULE_OTHER; /* undefined: outermost */
	if (!at_cfa(ops, nops, &r->ra_off))
		return RULE_OTHER;
	if (dwarf_frame_register(fr, DWARF_BP, mem, &ops, &nops))
		return RULE_OTHER;
	if (!nops) {
		r->bp_saved = false;
		return ops ? RULE_OTHER : RULE_SIMPLE; /* rbp undefined: libdw's */
	}
	r->bp_saved = true;
	return at_cfa(ops, nops, &r->bp_off) ? RULE_SIMPLE : RULE_OTHER;
}

/* The row of m holding pc, or NULL. */
static const struct urange *range_at(const struct pt_umod *m, uint64_t pc)
{
	size_t lo = 0, hi = m->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ranges[mid].hi <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nranges && m->ranges[lo].lo <= pc ? &m->ranges[lo] : NULL;
}

/* r kept in m (rows do not overlap: one is found only where none held
 * pc); full or out of memory: not kept. */
static void range_keep(struct pt_umod *m, const struct urange *r)
{
	size_t at = 0;

	if (m->nranges == m->rangecap) {
		size_t cap = m->rangecap ? m->rangecap * 2 : 64;
		struct urange *v;

		if (cap > MAX_RANGES)
			return;
		v = realloc(m->ranges, cap * sizeof(*v));
		if (!v)
			return;
		m->ranges = v;
		m->rangecap = cap;
	}
	while (at < m->nranges && m->ranges[at].lo < r->lo)
		at++;
	memmove(&m->ranges[at + 1], &m->ranges[at], (m->nranges - at) * sizeof(*r));
	m->ranges[at] = *r;
	m->nranges++;
}

/* The CFI frame state at pc, from its module's .eh_frame, else its
 * .debug_frame (*bias: CFI addresses + bias = absolute); NULL: none. The
 * caller frees it. */
static Dwarf_Frame *cfi_frame(struct pt_unwind *u, uint64_t pc, Dwarf_Addr *bias)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	Dwarf_Frame *fr;
	Dwarf_CFI *cfi;

	if (!mod)
		return NULL;
	cfi = dwfl_module_eh_cfi(mod, bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - *bias, &fr) == 0)
		return fr;
	cfi = dwfl_module_dwarf_cfi(mod, bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - *bias, &fr) == 0)
		return fr;
	return NULL;
}

/* pc's rule into r, from m's rows (m: its module, NULL: unknown) or the
 * CFI, kept in m's rows then. */
static void find_rule(struct pt_unwind *u, uint64_t pc, struct pt_umod *m, struct urange *r)
{
	const struct urange *have = m ? range_at(m, pc) : NULL;
	Dwarf_Addr bias, lo, hi;
	Dwarf_Frame *fr;

	if (have) {
		*r = *have;
		return;
	}
	memset(r, 0, sizeof(*r));
	r->rule = RULE_OTHER;
	fr = cfi_frame(u, pc, &bias);
	if (!fr)
		return;
	r->rule = (uint8_t)rule_of_frame(fr, r);
	if (m && dwarf_frame_info(fr, &lo, &hi, NULL) >= 0 && lo + bias <= pc && pc < hi + bias) {
		r->lo = lo + bias;
		r->hi = hi + bias;
		range_keep(m, r);
	}
	free(fr);
}

/* 8 bytes of the copy at addr; false: outside it. */
static bool copy_word(const struct walk *w, uint64_t addr, uint64_t *v)
{
	uint64_t sp = w->regs[PT_UREG_SP];

	if (addr < sp || addr - sp > w->len || w->len - (addr - sp) < sizeof(*v))
		return false;
	memcpy(v, w->stack + (addr - sp), sizeof(*v));
	return true;
}

/* Walk w with cached rules; false: a frame needs libdw (w is then
 * walked again from the start by it). */
static bool fast_walk(struct pt_unwind *u, struct walk *w)
{
	uint64_t ip = w->regs[PT_UREG_IP], sp = w->regs[PT_UREG_SP], bp = w->regs[PT_UREG_BP];
	bool act = true;

	w->n = 0;
	for (;;) {
		uint64_t pc = act ? ip : ip - 1, cfa;
		struct pc_slot *s;
		struct urange *r;

		if (ip == 0) {
			w->end = PT_UNWIND_END_BOTTOM;
			return true;
		}
		if (w->n == w->max) {
			w->end = PT_UNWIND_END_MAX;
			return true;
		}
		s = &u->cache[(pc ^ (pc >> 12)) & (CACHE_SLOTS - 1)];
		if (s->gen == u->gen && s->pc == pc) {
			u->st.hits++;
		} else if (!name_pc(u, pc, s) && (now_ns() - u->last_report_ns < REREPORT_NS ||
						  report(u) || !name_pc(u, pc, s))) {
			/* in no module (JIT code, or a library mapped since the
			 * maps were read): where libdw's walk ends too (on_frame) */
			w->out[w->n++] = (struct pt_unwind_frame){ .pc = pc };
			w->end = PT_UNWIND_END_NOINFO;
			return true;
		}
		r = &s->rule;
		if (r->rule == RULE_UNKNOWN)
			find_rule(u, pc, s->m, r);
		if (r->rule == RULE_OTHER)
			return false;
		w->out[w->n++] = (struct pt_unwind_frame){ .pc = pc,
							   .sym = s->sym,
							   .module = s->module,
							   .modoff = s->modoff,
							   .kind = s->kind };
		if (r->rule == RULE_END) {
			w->end = PT_UNWIND_END_BOTTOM;
			return true;
		}
		cfa = (r->cfa_reg == DWARF_SP ? sp : bp) + (uint64_t)(int64_t)r->cfa_off;
		if (!copy_word(w, cfa + (uint64_t)(int64_t)r->ra_off, &ip) ||
		    (r->bp_saved && !copy_word(w, cfa + (uint64_t)(int64_t)r->bp_off, &bp))) {
			w->end = PT_UNWIND_END_COPY;
			return true;
		}
		/* callers' frames move up the stack, or it is garbage */
		if (cfa <= sp)
			return false;
		sp = cfa;
		act = false;
	}
}

/* Has the module of pc no CFI for it? Then that is why the walk ended. */
static bool find_no_cfi(struct pt_unwind *u, uint64_t pc)
{
	Dwarf_Addr bias;
	Dwarf_Frame *fr = cfi_frame(u, pc, &bias);
	bool none = !fr;

	free(fr);
	return none;
}

/* Stacks end at the same few pcs: looked up once per cached pc. */
static bool no_cfi(struct pt_unwind *u, struct walk *w)
{
	struct pc_slot *s = w->last;

	if (!w->n)
		return false;
	if (s->gen != u->gen || s->pc != w->last_pc)
		return find_no_cfi(u, w->last_pc);
	if (!s->cfi)
		s->cfi = find_no_cfi(u, w->last_pc) ? 2 : 1;
	return s->cfi == 2;
}

static enum pt_unwind_end walk(struct pt_unwind *u, struct walk *w)
{
	int rc;

	w->n = 0;
	w->aborted = w->rereport = w->beyond = false;
	u->w = w;
	rc = dwfl_getthread_frames(u->dwfl, w->tid, on_frame, u);
	u->w = NULL;
	if (w->aborted)
		return w->end;
	if (rc == 0 && !w->beyond)
		return PT_UNWIND_END_BOTTOM;
	/* Without CFI libdw tries rbp as a frame pointer, which reads
	 * wherever rbp points: no info, not a short copy. */
	if (no_cfi(u, w))
		return PT_UNWIND_END_NOINFO;
	/* libdw takes a return address it cannot read for the outermost
	 * frame (rc 0): that read was outside the copy */
	if (w->beyond)
		return PT_UNWIND_END_COPY;
	return PT_UNWIND_END_ERROR;
}

size_t pt_unwind__stack(struct pt_unwind *u, uint32_t tid, const uint64_t *regs,
			const uint8_t *stack, size_t len, struct pt_unwind_frame *out, size_t max,
			enum pt_unwind_end *end)
{
	struct walk w = { .tid = tid,
			  .regs = regs,
			  .stack = stack,
			  .len = stack ? len : 0,
			  .out = out,
			  .max = max };
	enum pt_unwind_end e;

	u->st.stacks++;
	if (!u->libdw_only && fast_walk(u, &w)) {
		u->st.fast++;
		e = w.end;
	} else {
		e = walk(u, &w);
		if (w.rereport && report(u) == 0)
			e = walk(u, &w);
	}
	for (size_t i = 0; i < w.n; i++)
		u->st.nosym += !out[i].sym;
	u->st.frames += w.n;
	u->st.ends[e]++;
	*end = e;
	return w.n;
}

void pt_unwind__stats(const struct pt_unwind *u, struct pt_unwind_stats *st)
{
	*st = u->st;
}

int pt_unwind__new(struct pt_unwind **out, const struct pt_unwind_opts *o, char *err, size_t errlen)
{
	struct pt_unwind *u = calloc(1, sizeof(*u));
	int ret;

	*out = NULL;
	if (u)
		u->self_fd = -1;
	if (!u || !(u->cache = calloc(CACHE_SLOTS, sizeof(*u->cache)))) {
		snprintf(err, errlen, "unwind: out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	u->pid = o->pid;
	u->libdw_only = o->libdw_only;
	if (o->root && !(u->root = strdup(o->root))) {
		snprintf(err, errlen, "unwind: out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	u->cbs.find_elf = find_elf;
	u->cbs.find_debuginfo = dwfl_standard_find_debuginfo;
	u->dwfl = dwfl_begin(&u->cbs);
	if (!u->dwfl) {
		snprintf(err, errlen, "unwind: dwfl_begin: %s", dwfl_errmsg(-1));
		ret = -ENOMEM;
		goto fail;
	}
	ret = report(u);
	if (ret) {
		snprintf(err, errlen, "unwind: pid %d: cannot read /proc/%d/maps: %s", o->pid,
			 o->pid, strerror(-ret));
		goto fail;
	}
	/* The architecture (x86-64 only, as the ABI's registers) from our own
	 * ELF: libdw would take it from the target's first module, which may
	 * not open (a wrong root, deleted files). Kept open: libdw's backend
	 * may refer to it. */
	elf_version(EV_CURRENT);
	u->self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (u->self_fd >= 0)
		u->self = elf_begin(u->self_fd, ELF_C_READ_MMAP, NULL);
	if (!dwfl_attach_state(u->dwfl, u->self, o->pid, &thread_cbs, u)) {
		snprintf(err, errlen, "unwind: pid %d: dwfl_attach_state: %s", o->pid,
			 dwfl_errmsg(-1));
		ret = -EINVAL;
		goto fail;
	}
	*out = u;
	return 0;
fail:
	pt_unwind__free(u);
	return ret;
}

void pt_unwind__free(struct pt_unwind *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	if (u->self)
		elf_end(u->self);
	if (u->self_fd >= 0)
		close(u->self_fd);
	while (u->mods) {
		struct pt_umod *m = u->mods;

		u->mods = m->next;
		free(m->syms);
		free(m->ranges);
		free(m);
	}
	for (size_t i = 0; i < u->strcap; i++)
		free(u->strs[i]);
	free(u->strs);
	free(u->cache);
	free(u->root);
	free(u);
}
