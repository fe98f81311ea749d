#!/usr/bin/env bash
# `make demo`: start the bundled demo engine (tests/victims/demo_engine.py, a
# Python continuous-batching LLM server loop), attach proftrace to the live
# process with targets/demo.conf for a few seconds, print report.md and the
# paths of every output.
#
# PT_DEMO_SECONDS  how long to attach (default 5)
# PT_DEMO_PYTHON   the interpreter (default /usr/bin/python3, Debian's)
# PT_DEMO_OUT      output directory (default proftrace_out/demo-<date>)
# PT_PROFTRACE     the proftrace binary (default ./proftrace)
set -eu
cd "$(dirname "$0")/.."
dur=${PT_DEMO_SECONDS:-5}
py=${PT_DEMO_PYTHON:-/usr/bin/python3}
out=${PT_DEMO_OUT:-proftrace_out/demo-$(date +%Y%m%d-%H%M%S)}
pt=${PT_PROFTRACE:-./proftrace}
log=$(mktemp /tmp/proftrace-demo.XXXXXX)
engine=
cleanup() {
	if [ -n "$engine" ]; then
		kill "$engine" 2>/dev/null || true
		wait "$engine" 2>/dev/null || true
	fi
	rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Started as any server would be for exact Python timing: after `eval
# "$(proftrace env)"` (the agent, dormant until proftrace attaches, and the
# CUPTI shim for CUDA processes). Nothing else changes.
(
	eval "$("$pt" env)"
	exec "$py" tests/victims/demo_engine.py </dev/null >"$log"
) &
engine=$!
# "ready PID" once the engine has run its first steps
for _ in $(seq 100); do
	grep -q '^ready ' "$log" && break
	kill -0 "$engine" 2>/dev/null || { echo "demo: the engine exited early:" >&2; cat "$log" >&2; exit 1; }
	sleep 0.1
done
grep -q '^ready ' "$log" || { echo "demo: the engine did not start within 10 s" >&2; exit 1; }
echo "demo: engine running as pid $engine ($("$py" -c 'import sys; print("Python %d.%d.%d" % sys.version_info[:3])'), started after eval \"\$(proftrace env)\"); attaching for ${dur}s (no restart, no code change)"

SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO "$pt" -p "$engine" --targets targets/demo.conf -d "$dur" -o "$out"
echo
cat "$out/report.md"
echo
echo "demo: outputs:"
for f in "$out"/*; do
	echo "  $(realpath "$f")"
done
# the README's promise: steps, buckets, exact Python timing (else say why, exit 1)
python3 scripts/check-demo.py "$out/summary.json"
