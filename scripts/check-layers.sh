#!/usr/bin/env bash
# Dependencies between user/'s folders point one way, in data-flow order
# (user/README.md): a file may include headers of its own folder and of
# folders of a lower rank, never of a higher one or of a peer of the same
# rank. Inside user/run/, where each file declares its functions in a
# header of its own, the calls point one way too: a file may call (or
# take the address of) functions of the files ranked below it, never of
# one ranked above (run_rank, below), and includes none of the headers of
# those above. Run by `make test`; prints each offending #include and
# call, and fails.
set -u
cd "$(dirname "$0")/.."
declare -A rank=(
	[util]=0
	[config]=1
	[attach]=2 [gpu]=2
	[python]=3
	[sample]=4
	[aggregate]=5
	[report]=6
	[run]=7
	[cli]=8
	[main.c]=9
)
bad=0
while IFS= read -r -d '' f; do
	rel=${f#user/}
	own=${rel%%/*}
	[ -n "${rank[$own]+x}" ] || { echo "check-layers: $f: folder '$own' has no rank (add it here and to user/README.md)"; bad=1; continue; }
	while IFS=: read -r line inc; do
		dir=${inc%%/*}
		[ "$dir" = "$inc" ] && continue # same folder, or a generated header
		case $dir in bpf|shim) continue ;; esac # the ABI headers, at the bottom
		if [ -z "${rank[$dir]+x}" ]; then
			echo "$f:$line: includes \"$inc\": unknown folder"
			bad=1
		elif [ "$dir" != "$own" ] && [ "${rank[$dir]}" -ge "${rank[$own]}" ]; then
			echo "$f:$line: $own/ (rank ${rank[$own]}) includes \"$inc\" (rank ${rank[$dir]}): dependencies go down only"
			bad=1
		fi
	done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
done < <(find user -name '*.[ch]' -print0)
[ $bad -eq 0 ] && echo "check-layers: user/ includes go down only"
# struct run is user/run/'s own: the others see a session (run/session.h)
while IFS=: read -r f line _; do
	echo "$f:$line: includes \"run/run.h\": struct run is private to user/run/ (use run/session.h)"
	bad=1
done < <(grep -rn '^#include "run/run.h"' user --include='*.[ch]' | grep -v '^user/run/')

# user/run/'s files, lowest first. Each may call the functions of those
# above it in this list, never of those below (no circle: a lower file
# hands back a value, an fd or a callback instead of calling up).
run_rank=(
	calib.c     # measures what a probe hit costs: calls nothing of run/
	procstate.c # a process's states and the moves between them: calls nothing
	proctable.c # the process table (add, find by pid, slots): calls nothing
	pyproc.c    # a process's Python part (p->python): calls nothing
	probecost.c # a function's probe cost, the overhead section: calls nothing
	metrics.c   # --metrics, fed by records.c: calls nothing (its socket goes to loop.c)
	prearm.c    # libraries not loaded yet: resolves them, procs.c attaches them
	gpustream.c # a process's GPU stream: records go to the callback records.c hands it
	view.c      # views and the window view: each function's cost from probecost.c
	funcs.c     # the function table: declares functions in view.c's views
	pyrec.c     # py: records: new functions into funcs.c's table
	pyhint.c    # why py: probes match nothing: calls nothing (pyagent.c, samples.c feed it)
	pyagent.c   # the Python agent: its finds to pyrec.c, its walks to pyhint.c
	records.c   # routes records to view.c's views, pyrec.c and metrics.c
	samples.c   # stack samples: the process from records.c, new functions to funcs.c
	procs.c     # a process's life: all of the above, record callbacks included
	report.c    # the documents: read processes (procs.c), agents, hints, costs
	window.c    # --interval: a window's document from report.c, a fresh view from view.c
	loop.c      # the event loop: ticks processes, agents, windows, metrics
	steps.c     # the steps of a session (open, attach, report, free): calls down to all
	session.c   # a session's phases, main()'s calls: steps.c's steps and loop.c's loop
)
declare -A run_pos=()
for i in "${!run_rank[@]}"; do run_pos[${run_rank[$i]}]=$i; done
for f in user/run/*.c; do
	[ -n "${run_pos[${f##*/}]+x}" ] && continue
	echo "check-layers: $f has no rank in run/ (add it to run_rank here, and to user/run/README.md)"
	bad=1
done
for f in "${run_rank[@]}"; do
	[ -e "user/run/$f" ] && continue
	echo "check-layers: run_rank names user/run/$f, which is not there"
	bad=1
done
run_files=()
for f in "${run_rank[@]}"; do [ -e "user/run/$f" ] && run_files+=("user/run/$f"); done
# A file does not even see a higher file's functions: a run/ file (and
# its header, x.h of x.c, at x.c's rank) includes only the headers of
# files ranked at or below its own, and the shared ones (run_base: the
# types, run.h, and what it includes of run/), which are below them all
# and include only each other.
run_base=(run.h env.h calib.h procstate.h proctable.h)
declare -A in_base=()
for h in "${run_base[@]}"; do in_base[$h]=1; done
for f in user/run/*.[ch]; do
	name=${f##*/}
	if [ -n "${in_base[$name]+x}" ]; then
		own=-1
	elif [ -n "${run_pos[${name%.*}.c]+x}" ]; then
		own=${run_pos[${name%.*}.c]}
	else
		echo "check-layers: $f has no rank in run/ (a header of a file in run_rank, or one of run_base)"
		bad=1
		continue
	fi
	while IFS=: read -r line inc; do
		[ "${inc%%/*}" = "$inc" ] || continue # another folder's: the folders' ranks check it
		[ -n "${in_base[$inc]+x}" ] && continue
		if [ -z "${run_pos[${inc%.h}.c]+x}" ]; then
			echo "$f:$line: includes \"$inc\", which has no rank in run/ (run_rank, run_base)"
			bad=1
		elif [ "${run_pos[${inc%.h}.c]}" -gt "$own" ]; then
			if [ "$own" -lt 0 ]; then where="a shared header, below them all"; else where="rank $((own + 1))"; fi
			echo "$f:$line: includes \"$inc\" (${inc%.h}.c, rank $((run_pos[${inc%.h}.c] + 1))), above $name ($where): a file sees the functions of those below it only"
			bad=1
		fi
	done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
done
# Two passes over the files, comments and literals blanked out: the
# functions each defines (not static: at column 0 with a "(" and no ";"),
# then every use of one of them in a file ranked below its own.
if ! awk -v order="${run_rank[*]}" '
function strip(line,    out, i, c, q) {
	out = ""
	for (i = 1; i <= length(line); i++) {
		c = substr(line, i, 1)
		if (incomment) {
			if (substr(line, i, 2) == "*/") {
				incomment = 0
				i++
			}
			continue
		}
		if (substr(line, i, 2) == "/*") {
			incomment = 1
			i++
			continue
		}
		if (substr(line, i, 2) == "//")
			break
		if (c == "\"" || c == "\047") {
			q = c
			for (i++; i <= length(line) && substr(line, i, 1) != q; i++)
				if (substr(line, i, 1) == "\\")
					i++
			out = out " "
			continue
		}
		out = out c
	}
	return out
}
# the function a column-0 line starts the definition of, "" if none
function defined(s,    m) {
	if (s !~ /^[A-Za-z_]/ || s ~ /;[ \t]*$/ || !match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/))
		return ""
	m = substr(s, RSTART, RLENGTH)
	sub(/[ \t]*\($/, "", m)
	return m ~ /^__/ ? "" : m # __asm__(...) at file scope
}
BEGIN {
	n = split(order, o, " ")
	for (i = 1; i <= n; i++)
		rank[o[i]] = i
}
FNR == 1 {
	file = FILENAME
	sub(/.*\//, "", file)
	pass = ++passes[FILENAME]
	incomment = 0
	fn = ""
}
{
	s = strip($0)
	d = defined(s)
	if (pass == 1) {
		if (d != "" && s !~ /^static[ \t]/)
			home[d] = file
		next
	}
	if (d != "")
		fn = d
	ends = s ~ /^}/ # the function ends here: file scope after
	while (match(s, /[A-Za-z_][A-Za-z0-9_]*/)) {
		id = substr(s, RSTART, RLENGTH)
		s = substr(s, RSTART + RLENGTH)
		if (!(id in home) || home[id] == file || rank[home[id]] <= rank[file])
			continue
		printf "%s:%d: in %s: %s() is %s\047s (rank %d), above %s (rank %d): calls go down run_rank only\n", \
			FILENAME, FNR, fn == "" ? "file scope" : fn "()", id, home[id], rank[home[id]], file, rank[file]
		found = 1
	}
	if (ends)
		fn = ""
}
END {
	exit found
}' "${run_files[@]}" "${run_files[@]}"; then
	bad=1
fi
[ $bad -eq 0 ] && echo "check-layers: user/run/ calls and includes go down run_rank only"
exit $bad
