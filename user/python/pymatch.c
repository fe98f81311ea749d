// SPDX-License-Identifier: BSD-2-Clause
#include <fnmatch.h>
#include <string.h>

#include "pymatch.h"

static bool ends_with_at_dir(const char *path, const char *mod, const char *ext)
{
	size_t lp = strlen(path), lm = strlen(mod), le = strlen(ext);
	const char *at;

	if (lp < lm + le)
		return false;
	at = path + lp - lm - le;
	if (memcmp(at, mod, lm) != 0 || memcmp(at + lm, ext, le) != 0)
		return false;
	return at == path || at[-1] == '/';
}

static bool module_file(const char *filename, const char *mod)
{
	return ends_with_at_dir(filename, mod, ".py") ||
	       ends_with_at_dir(filename, mod, "/__init__.py");
}

bool pt_pymatch__file(const struct pt_probe_spec *s, const char *filename)
{
	if (s->kind != PT_PROBE_PY)
		return false;
	return module_file(filename, s->object) ||
	       (s->alt_object && module_file(filename, s->alt_object));
}

/* Anonymous or local code is only for patterns that ask for it. */
static bool hidden(const char *name, size_t len, const char *pat)
{
	return memchr(name, '<', len) && !strchr(pat, '<');
}

bool pt_pymatch__name(const struct pt_probe_spec *s, const char *qualname)
{
	const char *dot = strrchr(qualname, '.');
	size_t n = strlen(qualname);
	char cls[1024];

	if (s->kind != PT_PROBE_PY || !*qualname)
		return false;
	if (!s->cls) {
		if (dot || hidden(qualname, n, s->symbol))
			return false;
		return fnmatch(s->symbol, qualname, 0) == 0;
	}
	if (!dot || dot == qualname || !dot[1] || (size_t)(dot - qualname) >= sizeof(cls))
		return false;
	memcpy(cls, qualname, (size_t)(dot - qualname));
	cls[dot - qualname] = 0;
	if (hidden(cls, strlen(cls), s->cls) || hidden(dot + 1, strlen(dot + 1), s->symbol))
		return false;
	return fnmatch(s->cls, cls, 0) == 0 && fnmatch(s->symbol, dot + 1, 0) == 0;
}

unsigned int pt_pymatch__code(const struct pt_probe_spec *s, const char *filename,
			      const char *qualname)
{
	unsigned int m = 0;

	if (s->kind != PT_PROBE_PY)
		return 0;
	if (module_file(filename, s->object) && pt_pymatch__name(s, qualname))
		m |= PT_PYMATCH_FIRST;
	if (s->alt_object && module_file(filename, s->alt_object) && *qualname &&
	    !strchr(qualname, '.') && !hidden(qualname, strlen(qualname), s->symbol) &&
	    !fnmatch(s->symbol, qualname, 0))
		m |= PT_PYMATCH_ALT;
	return m;
}
