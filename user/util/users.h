/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whose proftrace this is: root runs it, often through sudo for a user
 * (SUDO_UID, SUDO_GID), who then owns what proftrace creates for them and
 * whose links proftrace may follow; anyone else's file or link in a path
 * proftrace writes to could have been planted. And user names for
 * messages that say whose a file is.
 */
#ifndef PT_USERS_H
#define PT_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * The user who ran us through sudo: 0 with *uid and *gid from SUDO_UID
 * and SUDO_GID (both numbers, we run as root, and neither is root);
 * -ENOENT otherwise (*uid, *gid: our effective ids).
 */
int pt_users__invoker(uid_t *uid, gid_t *gid);
/* Root, ourselves, or the user who ran us through sudo. */
bool pt_users__trusted(uid_t uid);
/* "uid 65534 (nobody)" (the name when there is one) into buf. */
const char *pt_users__name(uid_t uid, char *buf, size_t len);
/*
 * Why we may not inspect process pid (EACCES/EPERM on /proc/PID/exe or
 * maps), as a hint: "run as root" when we are not; as root, the
 * capabilities it holds and we lack (a container's bounding set: the
 * kernel lets no one inspect a process with more), or Yama, or a
 * security module. Into buf; buf.
 */
const char *pt_users__denied_hint(int pid, char *buf, size_t len);

#endif
