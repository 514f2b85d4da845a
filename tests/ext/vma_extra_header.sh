#!/bin/bash
# <mellanox/vma_extra.h> as `make install` puts it (vma_extra(7)): only the
# header is installed (install-mellanoxincludeHEADERS into a scratch
# DESTDIR) and the programs below see that directory and nothing of the
# source tree.
#  - vma_extra_layout.c, as C99/C11 (gcc, clang) and C++11-20 (g++,
#    clang++) at -Wall -Wextra -pedantic -Werror: every size, offset,
#    packing and constant against the reference (static assertions), then
#    run (the same numbers printed and compared).
#  - vma_extra_sockperf.cc: the header included after sockperf's system
#    headers, its socket-call redirect macros and its RING_LOGIC_* renames,
#    and after only <netinet/in.h>; run: vma_get_api() goes through the
#    program's getsockopt and gets NULL/EBADF without a library.
#  - Mutants: the installed header changed in one place each (a field's
#    type, a slot removed, a constant, packing, an enum value, a slot's
#    signature, bit-field placement, an extra include, the getsockopt call,
#    a RING_LOGIC_* macro); each must make its check fail, so none of the
#    checks above passes whatever the header says.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_extra_header.sh
set -u
name=vma_extra_header
here=$(cd "$(dirname "$0")" && pwd) || exit 99
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
[ -f "$B/Makefile" ] || { echo "ERROR: $name: no Makefile in $B: run from the build directory"; exit 99; }
# Nothing but -I$INC may add include directories.
unset CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH

ccs=() cxxs=()
for c in gcc clang; do command -v $c >/dev/null && ccs+=($c); done
for c in g++ clang++; do command -v $c >/dev/null && cxxs+=($c); done
[ ${#ccs[@]} -gt 0 ] && [ ${#cxxs[@]} -gt 0 ] ||
  { echo "SKIP: $name: needs a C and a C++ compiler (gcc/clang, g++/clang++)"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/ss-vmahdr.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
if ! ${MAKE:-make} -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >"$T/install.log" 2>&1; then
  cat "$T/install.log"
  echo "ERROR: $name: make install-mellanoxincludeHEADERS failed"
  exit 99
fi
HDR=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
[ -n "$HDR" ] && [ "$(echo "$HDR" | wc -l)" = 1 ] ||
  { echo "ERROR: $name: the install put no single mellanox/vma_extra.h under $T/root"; exit 99; }
INC=${HDR%/mellanox/vma_extra.h}
echo "$name: installed header $HDR"

WFLAGS=(-Wall -Wextra -pedantic -Werror)
. "$(dirname "$0")/check.sh"

# build_run INC OUT COMPILER ARG...: compile, then run; 0 if both succeed.
# Output in $T/OUT.log.
build_run() {
  local inc=$1 out=$2 cc=$3
  shift 3
  { "$cc" "${WFLAGS[@]}" -I"$inc" "$@" -o "$T/$out" && "$T/$out"; } >"$T/$out.log" 2>&1
}

# The compiler reads the installed header, not the tree's.
"${ccs[0]}" -M -I"$INC" "$here/vma_extra_layout.c" >"$T/deps" 2>&1
grep -q "$INC/mellanox/vma_extra.h" "$T/deps"
check "the test programs include $INC/mellanox/vma_extra.h" $?

for cc in "${ccs[@]}"; do
  for std in c99 c11; do
    build_run "$INC" "layout-$cc-$std" "$cc" -std=$std "$here/vma_extra_layout.c"
    rc=$?
    tail -1 "$T/layout-$cc-$std.log"
    [ $rc = 0 ] || cat "$T/layout-$cc-$std.log"
    check "layout, $cc -std=$std" $rc
  done
done
for cxx in "${cxxs[@]}"; do
  for std in c++11 c++14 c++17 c++20; do
    build_run "$INC" "layout-$cxx-$std" "$cxx" -x c++ -std=$std "$here/vma_extra_layout.c"
    rc=$?
    tail -1 "$T/layout-$cxx-$std.log"
    [ $rc = 0 ] || cat "$T/layout-$cxx-$std.log"
    check "layout, $cxx -std=$std" $rc
  done
  for std in c++11 c++17; do
    for prelude in sockperf minimal; do
      defs=()
      [ $prelude = minimal ] && defs=(-DMINIMAL_PRELUDE)
      out=sockperf-$cxx-$std-$prelude
      build_run "$INC" "$out" "$cxx" -std=$std "${defs[@]}" "$here/vma_extra_sockperf.cc"
      rc=$?
      [ $rc = 0 ] || cat "$T/$out.log"
      check "after $prelude headers, redirect macros and renames, $cxx -std=$std" $rc
    done
  done
done
grep -h 'vma_get_api' "$T"/sockperf-*-c++11-sockperf.log | head -1

# mutant N LABEL TARGET SED-ARG...: the installed header edited by sed;
# TARGET (layout: C and C++; sockperf: both preludes) must fail.
mutant() {
  local n=$1 label=$2 target=$3 m=$T/mutant$1 rc_c rc_x rc_s rc_m
  shift 3
  mkdir -p "$m/mellanox"
  sed "$@" "$HDR" >"$m/mellanox/vma_extra.h"
  if cmp -s "$HDR" "$m/mellanox/vma_extra.h"; then
    echo "ERROR: $name: mutant $n ($label) changed nothing: the header's text moved, update the sed"
    exit 99
  fi
  if [ "$target" = layout ]; then
    # C99 and C11 in turn: their static assertions differ (vma_extra_layout.c).
    build_run "$m" "mutant$n-c" "${ccs[0]}" -std=c$((n % 2 ? 99 : 11)) "$here/vma_extra_layout.c"
    rc_c=$?
    build_run "$m" "mutant$n-cxx" "${cxxs[0]}" -x c++ -std=c++11 "$here/vma_extra_layout.c"
    rc_x=$?
    grep -m1 -E 'error|FAIL' "$T/mutant$n-c.log" | sed 's/^/  C:   /'
    grep -m1 -E 'error|FAIL' "$T/mutant$n-cxx.log" | sed 's/^/  C++: /'
    [ $rc_c != 0 ] && [ $rc_x != 0 ]
  else
    build_run "$m" "mutant$n-s" "${cxxs[0]}" -std=c++11 "$here/vma_extra_sockperf.cc"
    rc_s=$?
    build_run "$m" "mutant$n-m" "${cxxs[0]}" -std=c++11 -DMINIMAL_PRELUDE "$here/vma_extra_sockperf.cc"
    rc_m=$?
    grep -m1 -E 'error|FAIL' "$T/mutant$n-s.log" | sed 's/^/  sockperf prelude: /'
    grep -m1 -E 'error|FAIL' "$T/mutant$n-m.log" | sed 's/^/  minimal prelude:  /'
    [ $rc_s != 0 ] && [ $rc_m != 0 ]
  fi
  check "mutant $n fails its check: $label" $?
}
mutant 1 "vma_buff_t.len 4 bytes wide" layout -e 's/uint16_t len;/uint32_t len;/'
mutant 2 "vma_api_t without get_socket_rings_num" layout -e '/(\*get_socket_rings_num)/d'
mutant 3 "SO_VMA_GET_API 2801" layout -e 's/define SO_VMA_GET_API 2800/define SO_VMA_GET_API 2801/'
mutant 4 "vma_info_t not packed" layout -e 's/__attribute__((packed)) vma_info_t;/vma_info_t;/'
mutant 5 "VMA_PACKET_HOLD = 3" layout -e 's/VMA_PACKET_HOLD = 2/VMA_PACKET_HOLD = 3/'
mutant 6 "add_conf_rule takes char *" layout -e 's/(\*add_conf_rule)(const char \*/(*add_conf_rule)(char */'
mutant 7 "ingress one bit further (found at run time)" layout \
  -e 's/unsigned int ingress : 1;/unsigned int : 1; unsigned int ingress : 1;/' -e 's/reserved : 30/reserved : 29/'
mutant 8 "the header includes <sys/uio.h>" sockperf -e 's|^#include <netinet/in.h>|&\n#include <sys/uio.h>|'
mutant 9 "vma_get_api() bypasses a getsockopt macro" sockperf -e 's/if (getsockopt(-1,/if ((getsockopt)(-1,/'
mutant 10 "RING_LOGIC_PER_SOCKET also a macro" sockperf -e 's/^} ring_logic_t;/&\n#define RING_LOGIC_PER_SOCKET 10/'

if [ $fails -gt 0 ]; then
  echo "$name: $fails check(s) failed (logs were in $T)"
  exit 1
fi
echo "$name: all checks passed"
exit 0
