#!/usr/bin/env bash
# Install every Debian package the build, the tests, the bench and the demo
# need. Idempotent and quick when everything is there already.
set -eu
pkgs=(make gcc clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev libcjson-dev
      libcmocka-dev libcapstone-dev pkg-config binutils python3 bpftrace util-linux
      python3-line-profiler austin prometheus libprotobuf-c-dev golang-go clang-format
      python3-dev python3-torch)
# python3-dev: headers for the C extension the mixed-stack tests build
# (tests/victims/pyext/ptnative.c); python3-torch (CPU, ~350 MB with its
# libraries): a real PyTorch process for test_mixed_stacks' torch test
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages installed"
	exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
