#!/usr/bin/env bash
# Builds Slipstream out of tree and runs every test: unit and conformance
# suites (make check), then the same suites under ASan/UBSan.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
cd "$top"
[ -x configure ] || autoreconf -fi >/dev/null
jobs=$(nproc)

build=${BUILD_DIR:-$top/build}
mkdir -p "$build" && cd "$build"
[ -f Makefile ] || "$top/configure" -q
make -s -j"$jobs"
make -s -j"$jobs" check || { cat tests/*.log test-suite.log 2>/dev/null | tail -200; exit 1; }

san=${SAN_BUILD_DIR:-$top/build-san}
mkdir -p "$san" && cd "$san"
[ -f Makefile ] || "$top/configure" -q --enable-sanitizers
make -s -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 make -s -j"$jobs" check || { cat test-suite.log 2>/dev/null | tail -200; exit 1; }
echo "all tests passed (plain and ASan/UBSan builds)"
