#!/usr/bin/env bash
# Installs dependencies and builds Slipstream out of tree in $BUILD_DIR
# (default ./build), configured with $CONFIGURE_FLAGS (e.g. --enable-werror)
# the first time. Prints the build directory.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" >&2
. "$top/scripts/compiler-cache.sh"
cd "$top"
[ -x configure ] || autoreconf -fi >/dev/null 2>&1
build=${BUILD_DIR:-$top/build}
mkdir -p "$build" && cd "$build"
[ -f Makefile ] || "$top/configure" -q ${CONFIGURE_FLAGS:-} >&2
make -s -j"$(nproc)" >&2
echo "$build"
