#!/bin/bash
# libslipstream's ABI (docs/architecture.md, "ABI"): the core exports only
# what its users call, every export under one private version node named
# after the release; librsocket requires that node, so a face meeting a core
# of another release is refused at load with the dynamic linker's "version
# `SLIPSTREAM_PRIVATE_...' not found" instead of calling into changed
# internals.
#
# Run from the build directory: bash $srcdir/tests/ext/abi.sh
set -u
name=abi
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
CORE=$B/.libs/libslipstream.so.0
FACE=$B/.libs/librsocket.so.0
for f in "$CORE" "$FACE" "$B/Makefile"; do
  [ -f "$f" ] || { echo "ERROR: $name: $f not found: build first"; exit 99; }
done
for p in readelf c++filt; do
  command -v $p >/dev/null || { echo "SKIP: $name: $p not found (binutils)"; exit 77; }
done
CC=$(command -v cc || command -v gcc) || { echo "SKIP: $name: no C compiler"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-abi.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"

version=$(sed -n 's/^PACKAGE_VERSION = //p' "$B/Makefile")
node=SLIPSTREAM_PRIVATE_$version
echo "$name: release $version, node $node"

# Defined dynamic symbols as NAME@@VERSION (NAME alone when unversioned).
readelf --dyn-syms -W "$CORE" | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $8 != "" {print $8}' \
  >"$T/defined"
# The node's own symbol is the one the linker always adds.
grep -vx "$node" "$T/defined" >"$T/exports"
n=$(wc -l <"$T/exports")
echo "$name: libslipstream.so exports $n symbols"
[ "$n" -gt 0 ]
check "libslipstream.so exports something" $?
grep -qx "$node" "$T/defined"
check "the version node $node is defined" $?
grep -v "@@$node\$" "$T/exports" >"$T/stray"
[ ! -s "$T/stray" ]
check "every export is under $node" $?
sed 's/^/  other export: /' "$T/stray"

# Every export has a user: a face, a tool, a bench program or the
# conformance suite imports it (libtool keeps the real programs in .libs/).
users=("$FACE")
[ -f "$B/.libs/librspreload.so" ] && users+=("$B/.libs/librspreload.so")
[ -f "$B/.libs/libvmacompat.so" ] && users+=("$B/.libs/libvmacompat.so")
[ -f "$B/.libs/libvma.so" ] && users+=("$B/.libs/libvma.so")
for p in tools/slipstream-config tools/slipstream-demo bench/rsocket_instr bench/rsocket_bench \
         rsocket_conformance; do
  d=$(dirname "$p")/.libs/$(basename "$p")
  if [ -f "$B/$d" ]; then users+=("$B/$d"); elif [ -f "$B/$p" ]; then users+=("$B/$p"); fi
done
for u in "${users[@]}"; do
  readelf --dyn-syms -W "$u" | awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" {print $8}'
done | sed 's/@.*//' | c++filt | sort -u >"$T/imported"
# Demangled, so a constructor's or destructor's variants count as one.
sed 's/@@.*//' "$T/exports" | c++filt | sort -u >"$T/exported"
comm -23 "$T/exported" "$T/imported" >"$T/unused"
[ ! -s "$T/unused" ]
check "every export is imported by one of: ${users[*]##*/}" $?
sed 's/^/  unused export: /' "$T/unused"

# Every symbol of ours a library imports (weak ones aside: a thread-local's
# init function, called only where defined) is one a library it loads
# exports: a call to one that none does ends the program in the loader's
# "symbol lookup error", on the first call (lazy binding), however late.
libs=("$CORE" "$FACE")
[ -f "$B/.libs/libvmacompat.so" ] && libs+=("$B/.libs/libvmacompat.so")
for l in "${libs[@]}"; do
  readelf --dyn-syms -W "$l" | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" {print $8}'
done | sed 's/@.*//' | sort -u >"$T/anywhere"
for u in "${users[@]}"; do
  readelf --dyn-syms -W "$u" | awk '$1 ~ /^[0-9]+:$/ && $7 == "UND" && $5 == "GLOBAL" {print $8}' |
    sed 's/@.*//' | grep -E '^_Z[A-Z]*N[A-Z]*2ss' | sort -u | comm -23 - "$T/anywhere" |
    c++filt | sed "s|^|  ${u##*/} imports, nobody exports: |"
done >"$T/unresolved"
[ ! -s "$T/unresolved" ]
check "every symbol of ours a library imports is exported" $?
cat "$T/unresolved"

# Packet-ring libraries are the xdp provider's (libslipstream_xdp.la):
# rsocket programs and everything librspreload runs must not load them.
for lib in "$CORE" "$FACE"; do
  readelf -d -W "$lib" | grep NEEDED | grep -E 'lib(xdp|bpf|elf)\.so' >"$T/ring_libs"
  [ ! -s "$T/ring_libs" ]
  check "${lib##*/} needs no packet-ring library" $?
  sed 's/^/  needed: /' "$T/ring_libs"
done

# The face requires the node from the core.
readelf -V -W "$FACE" | grep -A20 'File: libslipstream.so.0' | grep -q "Name: $node"
check "librsocket.so requires $node from libslipstream.so.0" $?

# A core of another release: same soname, another node. Loading the face
# (as a preload, its usual way in) must fail with the loader's message.
printf '%s { global: *; };\n' "$node.other" >"$T/other.map"
echo 'void slipstream_stand_in(void) {}' >"$T/other.c"
mkdir "$T/lib"
"$CC" -shared -fPIC -o "$T/lib/libslipstream.so.0" -Wl,-soname,libslipstream.so.0 \
  -Wl,--version-script="$T/other.map" "$T/other.c" || { echo "ERROR: $name: stand-in not built"; exit 99; }
run() {  # run LIBDIR: the preloaded face in a program that calls nothing
  timeout 30 env LD_PRELOAD="$FACE" LD_LIBRARY_PATH="$1" /bin/true >"$T/out" 2>&1
}
run "$B/.libs"
rc=$?
check "the face loads on its own core (exit $rc)" $rc
run "$T/lib"
rc=$?
[ "$rc" -ne 0 ]
check "the face on another release's core does not run (exit $rc)" $?
grep -F "version \`$node' not found (required by $FACE)" "$T/out"
check "the loader names the missing node and the face" $?

[ "$fails" -eq 0 ] || { echo "FAIL: $name: $fails check(s) failed"; exit 1; }
echo "PASS: $name"
