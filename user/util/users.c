// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "users.h"

static int id_of(const char *s, unsigned long *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	/* (uid_t)-1 is "no id" to chown() */
	return errno || *end || *v >= (uid_t)-1 ? -EINVAL : 0;
}

int pt_users__invoker(uid_t *uid, gid_t *gid)
{
	unsigned long u, g;

	*uid = geteuid();
	*gid = getegid();
	/* only root acts for someone else; a root sudo is root's own run */
	if (geteuid() || id_of(getenv("SUDO_UID"), &u) || id_of(getenv("SUDO_GID"), &g) || !u)
		return -ENOENT;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

bool pt_users__trusted(uid_t uid)
{
	uid_t iu;
	gid_t ig;

	if (uid == 0 || uid == geteuid())
		return true;
	return !pt_users__invoker(&iu, &ig) && uid == iu;
}

const char *pt_users__name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (!getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) && res && res->pw_name)
		snprintf(buf, len, "uid %u (%s)", (unsigned)uid, res->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
	return buf;
}

/* capability(7) numbers to names, for what a process holds that we lack */
static const char *const cap_names[] = {
	"CHOWN",
	"DAC_OVERRIDE",
	"DAC_READ_SEARCH",
	"FOWNER",
	"FSETID",
	"KILL",
	"SETGID",
	"SETUID",
	"SETPCAP",
	"LINUX_IMMUTABLE",
	"NET_BIND_SERVICE",
	"NET_BROADCAST",
	"NET_ADMIN",
	"NET_RAW",
	"IPC_LOCK",
	"IPC_OWNER",
	"SYS_MODULE",
	"SYS_RAWIO",
	"SYS_CHROOT",
	"SYS_PTRACE",
	"SYS_PACCT",
	"SYS_ADMIN",
	"SYS_BOOT",
	"SYS_NICE",
	"SYS_RESOURCE",
	"SYS_TIME",
	"SYS_TTY_CONFIG",
	"MKNOD",
	"LEASE",
	"AUDIT_WRITE",
	"AUDIT_CONTROL",
	"SETFCAP",
	"MAC_OVERRIDE",
	"MAC_ADMIN",
	"SYSLOG",
	"WAKE_ALARM",
	"BLOCK_SUSPEND",
	"AUDIT_READ",
	"PERFMON",
	"BPF",
	"CHECKPOINT_RESTORE",
};

/* The hex mask after key ("CapEff:") in a /proc status file; 0 if none. */
static uint64_t status_caps(const char *path, const char *key)
{
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			v = strtoull(line + strlen(key), NULL, 16);
			break;
		}
	fclose(f);
	return v;
}

const char *pt_users__denied_hint(int pid, char *buf, size_t len)
{
	char path[64];
	uint64_t missing;
	size_t n = 0;
	FILE *f;
	int yama = -1;

	if (geteuid()) {
		snprintf(buf, len, "run as root, e.g. `sudo proftrace ...`");
		return buf;
	}
	/* to inspect a process, our effective capabilities must cover all it
	 * may hold (the kernel's ptrace access check) */
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	missing = status_caps(path, "CapPrm:") & ~status_caps("/proc/self/status", "CapEff:");
	if (missing) {
		n = (size_t)snprintf(buf, len,
				     "we run as root, but process %d holds capabilities "
				     "this proftrace lacks (",
				     pid);
		for (unsigned int c = 0, k = 0; c < 64 && n < len; c++) {
			if (!(missing >> c & 1))
				continue;
			if (c < sizeof(cap_names) / sizeof(cap_names[0]))
				n += (size_t)snprintf(buf + n, len - n, "%sCAP_%s", k++ ? ", " : "",
						      cap_names[c]);
			else
				n += (size_t)snprintf(buf + n, len - n, "%scapability %u",
						      k++ ? ", " : "", c);
		}
		if (n < len)
			snprintf(buf + n, len - n,
				 "): proftrace runs in a container or with a reduced capability "
				 "bounding set; run it where it has them (on the host)");
		return buf;
	}
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fscanf(f, "%d", &yama) != 1)
			yama = -1;
		fclose(f);
	}
	if (yama == 3)
		snprintf(buf, len,
			 "we run as root, but kernel.yama.ptrace_scope is 3: no process may "
			 "inspect another until reboot");
	else
		snprintf(buf, len,
			 "we run as root: a security module (SELinux, AppArmor) or "
			 "another user namespace refuses it");
	return buf;
}
