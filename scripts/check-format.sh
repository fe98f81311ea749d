#!/usr/bin/env bash
# Every C file and header we wrote is as clang-format leaves it (.clang-format,
# kernel style). Generated protobuf-c files are not ours. Tables that read
# better aligned by hand sit between /* clang-format off */ and on.
# Formatting changes between clang-format releases: the check runs with the
# one Debian 12 ships (14), the one `make deps` installs, and says so when
# another one is found instead of failing on its differences.
set -eu
cd "$(dirname "$0")/.."
want=14
if ! command -v clang-format >/dev/null; then
	echo "check-format: no clang-format (make deps installs it)" >&2
	exit 1
fi
have=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$have" != "$want" ]; then
	echo "check-format: SKIP: clang-format $have here, the tree is formatted with $want"
	exit 0
fi
bad=0
while IFS= read -r f; do
	if ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
		echo "check-format: $f is not formatted (clang-format -i $f)" >&2
		bad=1
	fi
done < <(git ls-files '*.c' '*.h' | grep -v '\.pb-c\.[ch]$')
[ "$bad" -eq 0 ] && echo "check-format: every C file formatted (clang-format $have)"
exit "$bad"
