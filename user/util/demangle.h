/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * C++ names: the toolchain's demangler (libstdc++'s __cxa_demangle, the
 * one c++filt and gdb agree with) and the rules by which a probe's symbol
 * glob selects a C++ function by its demangled name.
 *
 * A glob without a parameter list ("at::_ops::linear::call",
 * "at::native::*softmax*") is matched against the function's qualified
 * name: the demangled name without return type, parameter list and
 * qualifiers after it, so it selects every overload. A glob with one
 * ("ns::f(int,float)") is matched against the whole demangled name with
 * the space after each comma left out (probes are whitespace-separated
 * tokens in a targets file; '?' matches any other space).
 */
#ifndef PT_DEMANGLE_H
#define PT_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* The demangled name of an Itanium-ABI mangled symbol ("_Z..."),
 * malloc'ed; NULL when name is not one or cannot be demangled. */
char *pt_demangle(const char *name);

/* The qualified name of demangled name d (see above) into out; thunks
 * ("non-virtual thunk to ...") keep their whole name, so that `ns::f`
 * selects the function and not its thunks too. Returns out. */
char *pt_demangle__base(const char *d, char *out, size_t len);

/*
 * A name (demangled, or a plain C name) for a table column of about width
 * characters, into out (NUL-terminated, cut at len): whole when it fits;
 * else, for a C++ name, its qualified name (no return type) with the
 * parameter list written "(...)" and its template argument lists written
 * "<...>" from the innermost out until it fits
 * ("at::native::reduce_kernel<512, 1, at::native::ReduceOp<...> >(...)");
 * what is still longer is cut to width - 3 characters and "...", as the
 * PyTorch profiler's tables cut names. Returns out.
 */
char *pt_demangle__short(const char *name, size_t width, char *out, size_t len);

/* The longest identifier a symbol must contain, verbatim, to match glob
 * by its demangled name (a name component outside template arguments;
 * mangled names spell those out), into out; "" when there is none.
 * Lets the resolver demangle only the few symbols that can match. */
void pt_demangle__literal(const char *glob, char *out, size_t len);

/* Does glob select the function whose demangled name is d? */
bool pt_demangle__match(const char *glob, const char *d);

/* The '(' that opens glob's parameter list (not "operator()"'s, not
 * "(anonymous namespace)"), or NULL. */
const char *pt_demangle__params(const char *glob);

/* Does glob read as a C++ name (a '::' or a parameter list)? Then "closest"
 * suggestions compare demangled names. */
bool pt_demangle__is_cxx_glob(const char *glob);

#endif
