#!/bin/bash
# A datagram rsocket waiting on its shared-memory ring makes no syscall
# while data flows there: tests/ext/dgram_spin_prog.c echoes COUNT 64 B
# datagrams between two threads (blocking rrecv, rpoll with a timeout then
# rrecv MSG_DONTWAIT, rsend and rsendto on known destinations) under
# strace, which counts every syscall between the program's two markers.
# The spin is long (polling_time 60 s: nobody sleeps, so no sender needs a
# wake-up) and looks at the kernel socket once per 2^20 passes
# (dgram_kernel_ratio); the rounds must then make fewer than COUNT / 8
# syscalls (a few kill(pid, 0) checks that the owners are alive remain).
# The control: the same run with dgram_kernel_ratio 1 (every pass looks at
# the kernel socket) must count at least one syscall per round, which
# shows the count sees what the spin makes.
#
# Run from the build directory: bash $srcdir/tests/ext/dgram_spin.sh
set -u
name=dgram_spin
here=$(cd "$(dirname "$0")" && pwd) || exit 99
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
[ -e "$B/.libs/librsocket.so" ] || { echo "ERROR: $name: $B/.libs/librsocket.so not built"; exit 99; }
command -v strace >/dev/null 2>&1 || { echo "SKIP: $name: strace not found"; exit 77; }
CC=$(command -v cc || command -v gcc || command -v clang) ||
  { echo "SKIP: $name: no C compiler"; exit 77; }
unset LD_PRELOAD
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-dgspin.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
. "$here/check.sh"

PROG=$T/prog
"$CC" -std=gnu11 -Wall -Wextra -Werror -I"$here/../../include" "$here/dgram_spin_prog.c" \
  -o "$PROG" -L"$B/.libs" -Wl,-rpath,"$B/.libs" -lrsocket -lpthread >"$T/cc.log" 2>&1 ||
  { cat "$T/cc.log"; echo "ERROR: $name: the test program did not build"; exit 99; }
# strace itself may be refused (a container without ptrace).
strace -f -qq -o /dev/null true 2>/dev/null || { echo "SKIP: $name: strace cannot trace here"; exit 77; }

COUNT=20000

# run RATIO : traces one run; prints the syscalls between the markers, by
# name, into $T/calls.RATIO and their count on stdout (empty on failure).
run() {
  local ratio=$1
  if ! env SLIPSTREAM_PROVIDER=shm SLIPSTREAM_RS_POLLING_TIME=60s \
    SLIPSTREAM_RS_DGRAM_KERNEL_RATIO="$ratio" timeout -k 5 120 \
    strace -f -qq -o "$T/trace.$ratio" "$PROG" "$COUNT" >"$T/out.$ratio" 2>&1; then
    sed 's/^/    /' "$T/out.$ratio" | tail -20 >&2
    return
  fi
  # Between the first and the second getppid; a call split by a thread
  # switch ("<unfinished ...>" then "<... resumed>") counts once.
  awk '/getppid\(/ { m++; next }
       m == 1 && !/resumed>/ && !/^[0-9]+ \+\+\+/ && !/^[0-9]+ ---/ {
         sub(/^[0-9]+ +/, ""); sub(/\(.*/, ""); print }' "$T/trace.$ratio" |
    sort | uniq -c | sort -rn >"$T/calls.$ratio"
  awk '{ n += $1 } END { print n + 0 }' "$T/calls.$ratio"
}

n=$(run 1048576)
echo "  $COUNT echoes spinning on the ring: ${n:-run failed} syscalls"
[ -n "$n" ] && sed 's/^/    /' "$T/calls.1048576"
[ -n "$n" ] && [ "$n" -lt $((COUNT / 8)) ]
check "a spinning receive makes no syscall while datagrams flow over the ring" $?

c=$(run 1)
echo "  control, dgram_kernel_ratio 1: ${c:-run failed} syscalls"
[ -n "$c" ] && sed 's/^/    /' "$T/calls.1" | head -5
[ -n "$c" ] && [ "$c" -ge "$COUNT" ]
check "with a look at the kernel socket on every pass, the count sees them" $?

[ "$fails" = 0 ] || exit 1
exit 0
