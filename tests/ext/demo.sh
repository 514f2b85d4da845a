#!/bin/bash
# The README's main job: slipstream-demo (--quick) runs its exchanges over
# kernel TCP, rsocket/shm and rsocket/tcp, checks every stream's checksum
# and exits non-zero on any failure, corruption or hang; this test also
# requires every row of the table, with figures, and the hardware lines
# the shm rows are read against.
#
# Run from the build directory: bash $srcdir/tests/ext/demo.sh
set -u
name=demo
b=${top_builddir:-$(pwd)}
DEMO=$(cd "$b" && pwd)/tools/slipstream-demo
[ -x "$DEMO" ] || { echo "ERROR: $name: $DEMO not built"; exit 99; }
out=$(mktemp "${TMPDIR:-/tmp}/ss-demo.XXXXXX") || exit 99
trap 'rm -f "$out"' EXIT
. "$(dirname "$0")/check.sh"
# Line-buffered: a demo killed by the timeout still leaves what it printed.
timeout 400 stdbuf -oL "$DEMO" --quick --timeout 60 >"$out" 2>&1
rc=$?
check "demo exits 0 (got $rc)" $((rc != 0))
num='[0-9]+\.[0-9]+'
for row in "kernel TCP" "kernel TCP (busy-poll)" "rsocket shm" "shm (busy-poll)" \
           "rsocket tcp" "tcp (busy-poll)"; do
  pat="^$(printf '%s' "$row" | sed 's/[()]/\\&/g') +$num +$num +$num "
  grep -Eq "$pat" "$out"
  check "row '$row' with figures" $?
done
# The streams (blocking rows): a bandwidth for 64 KiB and 1 MiB each.
for row in "kernel TCP" "rsocket shm" "rsocket tcp"; do
  grep -E "^$row +$num" "$out" | grep -Eq "\| +$num .*\| +$num "
  check "row '$row' has both stream figures" $?
done
grep -q "^hardware, same run: a cache line bounced" "$out"
check "the cache-line floor is measured" $?
grep -Eq "^no transport\): $num / $num GB/s" "$out"
check "the two-core ring is measured" $?
# The README's demo then runs the kernel-TCP exchange again under
# librspreload (scripts/demo.sh): both processes must have run their one
# connection on rsockets, none on kernel TCP, and the row must have figures.
stats=$(mktemp -d "${TMPDIR:-/tmp}/ss-demo-stats.XXXXXX") || exit 99
trap 'rm -f "$out" "$out".TCP "$out".UDP; rm -rf "$stats"' EXIT
LD_PRELOAD=$(cd "$b" && pwd)/.libs/librspreload.so SLIPSTREAM_PRELOAD_STATS=$stats \
  timeout 200 stdbuf -oL "$DEMO" --quick --timeout 60 --transports kernel >>"$out" 2>&1
rc=$?
check "preloaded demo exits 0 (got $rc)" $((rc != 0))
grep -Eq "^kernel TCP +$num +$num +$num .*\| +$num .*\| +$num " "$out"
check "preloaded kernel-TCP row with figures" $?
n=$(cat "$stats"/rspreload.* 2>/dev/null | grep -c 'rsockets=1 shm=1 .*kernel_tcp=0')
check "both preloaded processes ran their connection on rsockets (shm): $n of 2" $((n != 2))
# Then datagrams (scripts/demo.sh runs bench/udpong.sh, its kernel and
# shm rows): both with figures. The shm row's udpong runs on our library:
# stock librdmacm finds no RDMA device here, and its row would say "fail".
udpong=$(cd "$(dirname "$0")/../../bench" && pwd)/udpong.sh
(cd "$b" && UDPONG_RUNS=3 UDPONG_COUNT=2000 UDPONG_ROWS="kernel shm" timeout 100 bash "$udpong") \
  >>"$out" 2>&1
check "udpong part exits 0 (got $?)" $?
for row in kernel shm; do
  grep -Eq "^$row +$num +$num *$" "$out"
  check "udpong row '$row' with figures" $?
done
# Then the VMA face's part (scripts/demo.sh runs bench/vma_sockperf.sh, UDP then TCP):
# every row with figures, and each preloaded side on its rings.
if [ "$(id -u)" = 0 ] && command -v sockperf >/dev/null; then
  bench=$(cd "$(dirname "$0")/../../bench" && pwd)/vma_sockperf.sh
  for proto in UDP TCP; do
    tcp=0
    [ $proto = TCP ] && tcp=1
    (cd "$b" && SOCKPERF_TCP=$tcp SOCKPERF_TIME=1 timeout 120 bash "$bench") >"$out.$proto" 2>&1
    check "vma_sockperf $proto exits 0 (got $?)" $?
    cat "$out.$proto" >>"$out"
    grep -Eq "^kernel sockets both ends +$num +$num +$num" "$out.$proto"
    check "vma $proto row 'kernel sockets both ends' with figures" $?
    for row in "client under libvma.so" "both ends under libvma.so"; do
      grep -Eq "^$row +$num +$num +$num +$num +$num""x +$num""x +offload-ok" "$out.$proto"
      check "vma $proto row '$row' with figures, offloaded" $?
    done
  done
else
  echo "SKIP (not counted): the VMA part needs root and sockperf"
fi
if [ $fails -ne 0 ]; then
  cat "$stats"/rspreload.* 2>/dev/null
  echo "--- demo output"
  cat "$out"
  exit 1
fi
exit 0
