#!/usr/bin/env bash
# Dependencies between user/'s folders point one way, in data-flow order
# (user/README.md): a file may include headers of its own folder and of
# folders of a lower rank, never of a higher one or of a peer of the same
# rank. Run by `make test`; prints each offending #include and fails.
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
exit $bad
