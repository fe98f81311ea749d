// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process's Python agent (shim/ptagent.h): its probe sites get BPF's
 * agent programs, it is woken with the py: probes, the code objects it
 * finds are resolved like any other (pyrec.c) and those that are named
 * are handed back to be hooked; while the run goes, its heartbeat and
 * its new finds (lazy imports); at the end, detach.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "pyrec.h"
#include "pyhint.h"
#include "pyagent.h"

#include "attach/attach.h"
#include "attach/elfsyms.h"
#include "attach/inject.h"
#include "attach/maps.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "python/agent.h"
#include "python/pep768.h"
#include "python/pycode.h"
#include "python/pyprobe.h"
#include "shim/ptagent.h"
#include "util/helpers.h"
#include "util/log.h"
#include "util/segment.h"
#include "util/util.h"

#define AGENT_LIB "libproftrace_agent"

/* The agent's file in p, and the file offsets of its two probe sites
 * (from its own symbols: an address the segment claims is not trusted). */
static int agent_sites(struct proc *p, char **host, char **tpath, uint64_t *enter, uint64_t *exit,
		       char *err, size_t errlen)
{
	struct pt_maps maps = { 0 };
	struct pt_elf *elf = NULL;
	int e = -ENOENT;

	*host = *tpath = NULL;
	*enter = *exit = 0;
	if (pt_maps__read_pid(&maps, p->tracee.pid)) {
		snprintf(err, errlen, "cannot read its maps");
		return -ESRCH;
	}
	for (size_t i = 0; i < maps.n && !*host; i++) {
		const struct pt_mapping *mp = &maps.v[i];
		const char *base = mp->path ? strrchr(mp->path, '/') : NULL;

		if (!base || strncmp(base + 1, AGENT_LIB, strlen(AGENT_LIB)) ||
		    !pt_mapping__is_exec_file(mp))
			continue;
		*host = pt_resolver__host_path(p->tracee.pid, mp);
		*tpath = strdup(mp->path);
	}
	pt_maps__free(&maps);
	if (!*host || !*tpath) {
		snprintf(err, errlen, "the agent's segment is there but not its library");
		goto fail;
	}
	e = pt_elf__open(&elf, *host);
	if (e) {
		snprintf(err, errlen, "cannot read %s: %s", *host, strerror(-e));
		goto fail;
	}
	for (size_t i = 0; i < elf->nsyms; i++) {
		if (!strcmp(elf->syms[i].name, PTAG_SYM_ENTER))
			*enter = elf->syms[i].file_off;
		else if (!strcmp(elf->syms[i].name, PTAG_SYM_EXIT))
			*exit = elf->syms[i].file_off;
	}
	pt_elf__free(elf);
	if (!*enter || !*exit) {
		snprintf(err, errlen, "%s has no %s/%s", *tpath, PTAG_SYM_ENTER, PTAG_SYM_EXIT);
		e = -ENOEXEC;
		goto fail;
	}
	return 0;
fail:
	free(*host);
	free(*tpath);
	*host = *tpath = NULL;
	return e;
}

/* The code objects the agent found: each is resolved as if BPF had
 * announced it (the same matcher, the same answers in BPF's map); those
 * that are a function of the config are hooked. */
static void take_candidates(struct proc *p, const uint64_t *codes, uint32_t n)
{
	struct pt_pytypes t = { .code_type = p->python.rt.code_type,
				.unicode_type = p->python.rt.unicode_type };
	uint64_t *arm = pt_zalloc(n, sizeof(*arm));
	uint32_t narm = 0;

	if (!arm)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct pt_rec_pycode rec = { .type = PT_REC_PYCODE,
					     .pid = (uint32_t)p->tracee.pid,
					     .code = codes[i] };
		struct pt_pycode c;
		uint32_t fid;

		/* the segment is the target's: each address is read and type
		 * checked here before anything is done with it */
		if (pt_pycode__read_head(&p->python.mem, &p->python.rt.L, &t, codes[i], &c))
			continue;
		rec.filename = c.filename_obj;
		rec.name = c.name_obj;
		rec.firstlineno = c.firstlineno;
		pt_run__on_pycode(p, &rec);
		fid = pt_pyprobe__fid(p->python.probe, codes[i]);
		if (fid < p->nfs)
			arm[narm++] = codes[i];
	}
	if (pt_agent__arm(p->agent.handle, arm, narm) == 0) {
		p->agent.narm = narm;
		free(p->agent.arm);
		p->agent.arm = arm; /* for the report: how each one was hooked */
		arm = NULL;
	}
	free(arm);
	pt_run__py_hint_agent(p, codes, n); /* what matches nothing now, and why */
}

/* What the agent says now: a conflict or a failure is said once. */
static void check_state(struct proc *p)
{
	struct pt_agent_info in;

	pt_agent__info(p->agent.handle, &in);
	if (in.state == PTAG_STATE_ACTIVE && p->agent.state == PT_AGENT_WAITING)
		p->agent.state = PT_AGENT_TIMING;
	/* first: the agent writes a conflict with a replaced hook, which is
	 * said as the loss only */
	if (in.hook_lost && p->agent.state != PT_AGENT_LOST) {
		p->agent.state = PT_AGENT_LOST;
		pt_msg("proftrace: warning: pid %d: another frame evaluator replaced the agent's: "
		       "py: calls are not seen from now on\n",
		       p->tracee.pid);
	}
	if (in.conflict && p->agent.state != PT_AGENT_BLOCKED && p->agent.state != PT_AGENT_LOST) {
		p->agent.state = PT_AGENT_BLOCKED;
		/* its dormant reason adds to the text only once it went dormant */
		bool dormant = in.state == PTAG_STATE_DORMANT && in.reason != PTAG_DORMANT_NEVER &&
			       in.reason != PTAG_DORMANT_CONFLICT;

		pt_msg("proftrace: warning: pid %d: the Python agent cannot hook: %s%s%s%s; py: "
		       "functions get sampled times and the py: step and buckets are not "
		       "counted\n",
		       p->tracee.pid, in.conflict_text, dormant ? " (" : "",
		       dormant ? ptag_reason_name(in.reason) : "", dormant ? ")" : "");
	}
}

static void pep768_cleanup(struct proc *p);
static int agent_start(struct proc *p, char *err, size_t errlen);

/* A read of its segment faulted (the guard turned it into zeros; a sealed
 * segment cannot shrink, so nothing known does this): said once, never
 * touched again. What it timed before stays; its named calls after that
 * are not seen. */
static bool agent_lost(struct proc *p)
{
	if (!pt_agent__lost(p->agent.handle))
		return false;
	if (!p->agent.truncated[0]) {
		p->agent.state = PT_AGENT_LOST;
		snprintf(p->agent.truncated, sizeof(p->agent.truncated),
			 "a read of its segment %s faulted at +%.3fs (its memory went from under "
			 "us): proftrace stopped reading it, py: calls after that are not timed",
			 pt_agent__path(p->agent.handle), since_start_s(p->run));
		pt_msg("proftrace: warning: pid %d: the Python agent: %s; the rest of the profile "
		       "is kept\n",
		       p->tracee.pid, p->agent.truncated);
	}
	return true;
}

void pt_run__agent_tick(struct proc *p, uint64_t now)
{
	uint64_t *codes;
	uint32_t n;

	if (!p->agent.handle && p->agent.pep768_dir[0]) {
		char err[512];

		/* asked through PEP 768, not up yet: it is now? */
		int e = agent_start(p, err, sizeof(err));

		if (!e)
			pt_msg("proftrace: pid %d: the Python agent loaded (PEP 768) at +%.3fs: "
			       "its "
			       "named calls are timed from now on\n",
			       p->tracee.pid, since_start_s(p->run));
		else if (e != -ENOENT && e != -EINPROGRESS) {
			pt_msg("proftrace: warning: pid %d: %s\n", p->tracee.pid, err);
			free(p->agent.why);
			p->agent.why = strdup(err);
			pep768_cleanup(p); /* no more tries */
		}
		return;
	}
	if (!p->agent.handle || agent_lost(p))
		return;
	pt_agent__heartbeat(p->agent.handle, now);
	if (pt_agent__candidates(p->agent.handle, &codes, &n) == 1) {
		take_candidates(p, codes, n);
		free(codes);
	}
	check_state(p);
}

/* Keep the agents of the processes started so far alive while another one
 * is being started: that takes seconds on a loaded machine (its probes,
 * its agent's first arming), and an agent that misses its heartbeat for
 * a second goes dormant and takes its hooks out, so the calls of the
 * first process (an engine core whose workers --children attaches next)
 * would go unseen until the loop's heartbeats woke it again. */
void pt_run__agents_alive(struct run *r)
{
	uint64_t now = pt_now_ns(CLOCK_MONOTONIC);

	for (size_t i = 0; i < r->procs.n; i++)
		if (r->procs.v[i]->agent.handle && pt_proc__live(r->procs.v[i]))
			pt_agent__heartbeat(r->procs.v[i]->agent.handle, now);
}

/* Attach: wake it and wait until what it found at attach is hooked (the
 * program's calls are timed from the "attached" line on), at most a few
 * seconds: it needs the GIL, which a long C call may hold. */
static void first_arm(struct proc *p)
{
	uint64_t deadline = pt_now_ns(CLOCK_MONOTONIC) + 3000000000ull;
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	struct pt_agent_info in;
	bool took = false;

	for (;;) {
		uint64_t now = pt_now_ns(CLOCK_MONOTONIC);

		/* what it had published before the tick takes it: read after,
		 * candidates published in between passed for taken, the empty
		 * arm for done, and a short program ran whole unhooked after
		 * "attached" (test_agent_getitem_debian_311, CI: hooked 0 of 2
		 * candidates, 0 steps of 100) */
		pt_agent__info(p->agent.handle, &in);
		pt_run__agent_tick(p, now);
		pt_run__agents_alive(p->run);
		if (agent_lost(p))
			return;
		took |= p->agent.narm || in.cand_seq > 0;
		if (in.state == PTAG_STATE_ACTIVE && took && pt_agent__armed(p->agent.handle))
			return;
		if (in.state != PTAG_STATE_ACTIVE && in.conflict)
			return; /* said by check_state() */
		if (now >= deadline) {
			pt_msg("proftrace: warning: pid %d: the Python agent has not answered in 3 "
			       "s "
			       "(%s): its calls are timed once it does\n",
			       p->tracee.pid, ptag_reason_name(in.reason));
			return;
		}
		nanosleep(&ts, NULL);
	}
}

/* The ids the target opens files with (Uid:/Gid: in status, the fs one). */
static int target_fsids(int pid, unsigned int *uid, unsigned int *gid)
{
	char path[64], line[256];
	unsigned int r, e, sv;
	int got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (got != 3 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &sv, uid) == 4)
			got |= 1;
		else if (sscanf(line, "Gid: %u %u %u %u", &r, &e, &sv, gid) == 4)
			got |= 2;
	}
	fclose(f);
	return got == 3 ? 0 : -EPROTO;
}

/* The script PEP 768 runs: load the agent. In a folder of our own that
 * the target's user can read (it opens the file as itself). */
static int pep768_script(struct proc *p, const char *lib, char *err, size_t errlen)
{
	char path[sizeof(p->agent.pep768_dir) + 16];
	FILE *f;
	int fd;

	unsigned int uid, gid;

	if (target_fsids(p->tracee.pid, &uid, &gid)) {
		snprintf(err, errlen, "cannot read its user ids");
		return -ESRCH;
	}
	snprintf(p->agent.pep768_dir, sizeof(p->agent.pep768_dir), "/tmp/proftrace-pep768-XXXXXX");
	/* its own: it reads the script and writes why a load failed there */
	if (!mkdtemp(p->agent.pep768_dir) || chown(p->agent.pep768_dir, uid, gid) ||
	    chmod(p->agent.pep768_dir, 0700)) {
		snprintf(err, errlen, "cannot make a folder for the PEP 768 script: %s",
			 strerror(errno));
		p->agent.pep768_dir[0] = 0;
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/agent.py", p->agent.pep768_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	/* a failure is written next to it for proftrace, never raised into
	 * the program */
	fprintf(f,
		"# proftrace: load its Python agent (PEP 768 remote debugging);\n"
		"# removed by proftrace once the agent is up\n"
		"try:\n"
		"    import ctypes\n"
		"    ctypes.CDLL('%s')\n"
		"except BaseException as e:\n"
		"    with open('%s/failed', 'w') as f:\n"
		"        f.write('%%s: %%s' %% (type(e).__name__, e))\n",
		lib, p->agent.pep768_dir);
	if (fclose(f)) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static void pep768_cleanup(struct proc *p)
{
	char path[sizeof(p->agent.pep768_dir) + 16];

	if (!p->agent.pep768_dir[0])
		return;
	snprintf(path, sizeof(path), "%s/agent.py", p->agent.pep768_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/failed", p->agent.pep768_dir);
	unlink(path);
	rmdir(p->agent.pep768_dir);
	p->agent.pep768_dir[0] = 0;
}

/* Why the script could not load the agent, as it wrote it (the target's
 * words: bounded, not followed through a link, made printable): 1 with
 * err set, 0 when it has not failed (yet). */
static int pep768_failed(struct proc *p, char *err, size_t errlen)
{
	char path[sizeof(p->agent.pep768_dir) + 16], why[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/failed", p->agent.pep768_dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, why, sizeof(why) - 1);
	close(fd);
	why[n > 0 ? n : 0] = 0;
	for (char *c = why; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			*c = '?';
	snprintf(err, errlen, "the agent could not be loaded through PEP 768: %s", why);
	return 1;
}

/* Python 3.14+ without an agent: ask the interpreter to load it (PEP 768,
 * the documented interface for this), and wait a little for it to run. */
static int pep768_load(struct proc *p, char *err, size_t errlen)
{
	char lib[PATH_MAX], script[sizeof(p->agent.pep768_dir) + 16];
	struct stat ours, theirs;
	char root[64];
	int e;

	if (pt_helper__path(PT_AGENT_LIB, lib, sizeof(lib))) {
		snprintf(err, errlen, "no %s to load (build it with make)", PT_AGENT_LIB);
		return -ENOENT;
	}
	if (strpbrk(lib, "'\\\n")) {
		snprintf(err, errlen, "%.200s: a quote in its path", lib);
		return -EINVAL;
	}
	/* it opens the script and the library by path: the same files only
	 * where it sees our root (a container has its own) */
	snprintf(root, sizeof(root), "/proc/%d/root/", p->tracee.pid);
	if (stat("/", &ours) || stat(root, &theirs) || ours.st_dev != theirs.st_dev ||
	    ours.st_ino != theirs.st_ino) {
		snprintf(err, errlen,
			 "it runs in another mount namespace (a container): start it "
			 "with the agent (eval \"$(proftrace env)\" inside) or use --inject");
		return -EXDEV;
	}
	e = pep768_script(p, lib, err, errlen);
	if (!e) {
		snprintf(script, sizeof(script), "%s/agent.py", p->agent.pep768_dir);
		e = pt_pep768__exec(p->tracee.pid, p->python.rt.runtime, script, err, errlen);
	}
	if (e) {
		pep768_cleanup(p);
		return e;
	}
	p->agent.pep768_asked = pt_now_ns(CLOCK_MONOTONIC);
	pt_vlog("proftrace: pid %d: asked Python %s to load the agent (PEP 768)\n", p->tracee.pid,
		p->python.rt.version);
	return 0;
}

/* --inject: load the agent into p with ptrace (attach/inject.h), then
 * open its segment (its constructor made it inside the dlopen). */
static int open_agent(void *ctx, char *why, size_t len)
{
	struct proc *p = ctx;

	return pt_agent__open(&p->agent.handle, p->tracee.pid, why, len);
}

static int inject_load(struct proc *p, char *err, size_t errlen)
{
	struct pt_inject_opts o = { .wait_ms = p->run->env.inject_wait_ms,
				    .allow_epoll = p->run->env.inject_epoll };
	char lib[PATH_MAX], why[1024];
	int e;

	p->agent.inject_tried = true;
	if (pt_helper__path(PT_AGENT_LIB, lib, sizeof(lib))) {
		snprintf(err, errlen, "--inject: no %s to load (build it with make)", PT_AGENT_LIB);
		return -ENOENT;
	}
	e = pt_inject__dlopen(p->tracee.pid, lib, &o, &p->agent.inject, why, sizeof(why));
	if (e) {
		snprintf(err, errlen, "--inject: %s", why);
		return e;
	}
	p->agent.injected = !p->agent.inject.already;
	if (p->agent.injected)
		pt_vlog("proftrace: pid %d: the Python agent loaded (--inject): thread %d, in %s, "
			"held %.2f ms (dlopen %.2f ms) after %.2f ms looking\n",
			p->tracee.pid, p->agent.inject.tid, p->agent.inject.syscall,
			p->agent.inject.pause_ms, p->agent.inject.call_ms, p->agent.inject.wait_ms);
	e = pt_segment__wait(open_agent, p, 500, why, sizeof(why));
	if (e)
		snprintf(err, errlen, "--inject: the agent is loaded in %d but %s", p->tracee.pid,
			 e == -ENOENT ? "made no segment (out of memory?)" : why);
	return e;
}

/* How the agent came into p, when this run did not load it: at start
 * when its environment preloads it, else by an earlier proftrace. */
static const char *loaded_before(int pid)
{
	char path[64], buf[1 << 16];
	const char *how = "earlier";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return how;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = 0;
		if (!strncmp(buf + i, "LD_PRELOAD=", 11) && strstr(buf + i, AGENT_LIB))
			how = "environment";
	}
	return how;
}

/* p's agent, if it has one: 0 and p->agent.handle set, or -errno (why in err;
 * -ENOENT: none; -EINPROGRESS: asked for through PEP 768, not up yet). */
static int agent_start(struct proc *p, char *err, size_t errlen)
{
	struct run *r = p->run;
	struct pt_agent_spec *specs;
	struct pt_agent_info in;
	size_t *spec_of;
	char *host = NULL, *tpath = NULL;
	uint64_t enter, exit;
	size_t n = 0;
	int e;

	e = pt_agent__open(&p->agent.handle, p->tracee.pid, err, errlen);
	if (e == -EPERM) {
		/* a memfd of the agent's name that the agent did not make (the
		 * process's own doing: nobody else can add to its files); --inject
		 * cannot be told apart from it, so exact timing is not to be had */
		p->agent.foreign = true;
		if (r->env.inject) {
			char why[1024];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "--inject: %s", why);
			p->agent.inject_tried = p->agent.inject_failed = true;
		}
		return e;
	}
	if (e == -ENOENT && r->env.inject && !p->agent.inject_tried) {
		e = inject_load(p, err, errlen);
		if (e) {
			p->agent.inject_failed = true;
			return e;
		}
		p->agent.loaded_by = p->agent.injected ? "inject" : loaded_before(p->tracee.pid);
	} else if (e == -ENOENT && p->python.rt.L.minor >= 14 && !p->agent.pep768_asked) {
		char why[512];

		e = pep768_load(p, why, sizeof(why));
		if (e) {
			snprintf(err, errlen, "could not load the agent through PEP 768: %s", why);
			return e;
		}
		e = -ENOENT; /* asked: not there until its main thread runs the script */
		/* the main thread runs it at its next safe point: a server's
		 * loop does within milliseconds */
		for (int i = 0; i < 300 && e && !pep768_failed(p, why, sizeof(why)); i++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
			e = pt_agent__open(&p->agent.handle, p->tracee.pid, err, errlen);
		}
		if (e && !pep768_failed(p, why, sizeof(why))) {
			snprintf(err, errlen,
				 "asked it to load the agent (PEP 768), but its main "
				 "thread has not run Python code for 3 s: it will when it does");
			return -EINPROGRESS;
		}
	}
	if (e && p->agent.pep768_dir[0] && pep768_failed(p, err, errlen)) {
		pep768_cleanup(p);
		return -ENOEXEC;
	}
	if (e)
		return e;
	if (p->agent.pep768_asked && !p->agent.loaded_by) {
		pep768_cleanup(p);
		p->agent.loaded_by = "pep768";
	}
	if (!p->agent.loaded_by)
		p->agent.loaded_by = loaded_before(p->tracee.pid);
	pt_agent__info(p->agent.handle, &in);
	if (in.conflict == PTAG_CONFLICT_UNSUPPORTED) {
		snprintf(err, errlen, "the Python agent cannot run there: %s", in.conflict_text);
		e = -ENOTSUP;
		goto fail;
	}
	e = agent_sites(p, &host, &tpath, &enter, &exit, err, errlen);
	if (!e)
		e = pt_attach__agent(r->att, p->idx, p->tracee.pid, host, tpath, enter, exit,
				     in.clocks, err, errlen);
	free(host);
	free(tpath);
	if (e)
		goto fail;
	e = pt_run__py_pairs(r, &specs, &spec_of, &n);
	if (e)
		goto fail;
	pt_agent__set_options(p->agent.handle, r->cfg.py_trampolines ? 0 : PTAG_OPT_NO_TRAMPOLINES);
	e = pt_agent__attach(p->agent.handle, specs, n, &p->python.rt.L,
			     pt_now_ns(CLOCK_MONOTONIC));
	free(specs);
	free(spec_of);
	if (e) {
		snprintf(err, errlen, "%s",
			 e == -EBUSY ? "another proftrace is attached to its "
				       "Python agent"
				     : "the py: probes do not fit the agent's segment");
		goto fail;
	}
	first_arm(p);
	return 0;
fail:
	pt_agent__close(p->agent.handle);
	p->agent.handle = NULL;
	return e;
}

void pt_run__agent_stop(struct proc *p)
{
	pep768_cleanup(p);
	if (!p->agent.handle)
		return;
	agent_lost(p); /* said, if it was lost since the last tick */
	pt_agent__info(p->agent.handle, &p->agent.last); /* for the report: before detach */
	/* its hooks come out now; a slow one finishes on its heartbeat */
	pt_agent__detach(p->agent.handle, 500);
}

bool pt_run__agent_ok(const struct proc *p)
{
	return p->agent.handle && p->agent.state == PT_AGENT_TIMING;
}

int pt_run__agent_start(struct proc *p, char *err, size_t errlen)
{
	int e = agent_start(p, err, errlen);

	if (e && e != -ENOMEM) {
		free(p->agent.why);
		p->agent.why = strdup(err);
	}
	return e;
}

void pt_run__agent_free(struct proc *p)
{
	pt_agent__close(p->agent.handle);
	free(p->agent.why);
	free(p->agent.arm);
}
