#!/usr/bin/env bash
# `make demo`: start the bundled demo engine, attach proftrace to the live
# process for a few seconds, print report.md and the output paths.
set -eu
victims=${PT_VICTIMS:-.output/victims}
dur=${PT_DEMO_SECONDS:-3}
fifo=$(mktemp -u /tmp/proftrace-demo.XXXXXX)
mkfifo "$fifo"
"$victims/victim_engine" --steps 1000000 <"$fifo" >/dev/null &
engine=$!
exec 3>"$fifo" # keep the engine's stdin open: it runs until we stop it
rm -f "$fifo"
cleanup() { kill "$engine" 2>/dev/null || true; wait "$engine" 2>/dev/null || true; }
trap cleanup EXIT
echo go >&3
sleep 0.3
echo "demo: engine running as pid $engine; attaching for ${dur}s (no restart, no code change)"
out=proftrace_out/demo-$(date +%Y%m%d-%H%M%S)
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO ./proftrace -p "$engine" --targets targets/demo.conf -d "$dur" -o "$out"
echo
cat "$out/report.md"
echo
echo "demo: outputs in $out/: $(ls "$out" | tr '\n' ' ')"
