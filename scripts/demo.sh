#!/usr/bin/env bash
# The main job: builds Slipstream and runs a client/server exchange over
# kernel TCP, rsocket/shm and rsocket/tcp, printing latency, bandwidth and
# the ratio to kernel TCP. Then the same program's kernel-TCP exchange
# again, unmodified, with librspreload on both ends: its connections move
# onto rsockets (each process's count, SLIPSTREAM_PRELOAD_STATS, shows it)
# and the two runs' kernel-TCP rows are compared. Then datagrams:
# rdmacm-utils' udpong, unmodified, on kernel UDP sockets and on datagram
# rsockets over shared memory (LD_PRELOAD=librsocket.so). Last, the VMA face:
# Debian's sockperf UDP ping-pong across a veth pair between two network
# namespaces, on kernel sockets and then under libvma.so (offloaded onto
# AF_XDP rings; needs root), the same with TCP (libvma.so's connections on
# its own TCP over the rings), and a 64 B receive rate under a burst: kernel
# recv against the same program offloaded and recvfrom_zcopy
# (bench/vma_zcopy.sh, one round each).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$("$top/scripts/build.sh")
work=$(mktemp -d "${TMPDIR:-/tmp}/ss-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$build/tools/slipstream-demo" "$@" | tee "$work/plain"

echo
echo "librspreload: the kernel TCP exchange again, the same unmodified program with"
echo "LD_PRELOAD=librspreload.so on both ends"
mkdir "$work/stats"
LD_PRELOAD="$build/.libs/librspreload.so" SLIPSTREAM_PRELOAD_STATS="$work/stats" \
  "$build/tools/slipstream-demo" "$@" --transports kernel >"$work/preloaded"
# "kernel TCP  med p99 one-way ratio | bw64k ratio | bw1m ratio"
row() { awk '$1 == "kernel" && $2 == "TCP" && $3 ~ /^[0-9.]+$/ {print $3, $8, $11; exit}' "$1"; }
read -r rtt0 k0 m0 < <(row "$work/plain")
read -r rtt1 k1 m1 < <(row "$work/preloaded")
awk -v r0="$rtt0" -v r1="$rtt1" -v k0="$k0" -v k1="$k1" -v m0="$m0" -v m1="$m1" 'BEGIN {
  printf "%-28s %9s %11s %11s\n", "", "RTT med", "64 KiB", "1 MiB"
  printf "%-28s %9s %11s %11s\n", "", "(us)", "(GB/s)", "(GB/s)"
  printf "%-28s %9.2f %11.3f %11.3f\n", "kernel TCP", r0, k0, m0
  printf "%-28s %9.2f %11.3f %11.3f\n", "same program, librspreload", r1, k1, m1
  printf "%-28s %8.1fx %10.1fx %10.1fx\n", "ratio", r0 / r1, k1 / k0, m1 / m0
}'
echo "connections per process (rsockets by provider, and kernel TCP):"
cat "$work"/stats/rspreload.*

echo
echo "librsocket datagrams: rdmacm-utils' udpong, unmodified, on kernel UDP sockets and on"
echo "datagram rsockets over shared memory (LD_PRELOAD=librsocket.so on both ends)"
(cd "$build" && UDPONG_RUNS=${UDPONG_RUNS:-3} UDPONG_ROWS="kernel shm" bash "$top/bench/udpong.sh")

echo
echo "libvma.so: sockperf's UDP ping-pong, unmodified, offloaded onto AF_XDP rings"
if [ "$(id -u)" = 0 ] && command -v sockperf >/dev/null; then
  (cd "$build" && SOCKPERF_TIME=${SOCKPERF_TIME:-2} bash "$top/bench/vma_sockperf.sh")
else
  echo "(skipped: needs root and sockperf, for the namespaces and XDP)"
fi

echo
echo "libvma.so: sockperf's TCP ping-pong, unmodified, its connections on the library's"
echo "own TCP over the rings"
if [ "$(id -u)" = 0 ] && command -v sockperf >/dev/null; then
  (cd "$build" && SOCKPERF_TCP=1 SOCKPERF_TIME=${SOCKPERF_TIME:-2} bash "$top/bench/vma_sockperf.sh")
else
  echo "(skipped: needs root and sockperf, for the namespaces and XDP)"
fi

echo
echo "libvma.so: a market-data burst, 64 B datagrams at ~2 M/s across veth; a receiver's"
echo "rate with recv on a kernel socket, the same program offloaded, and the Extra API's"
echo "recvfrom_zcopy"
if [ "$(id -u)" = 0 ]; then
  (cd "$build" && RATE_RUNS=${RATE_RUNS:-1} RATE_TIME=${RATE_TIME:-2} bash "$top/bench/vma_zcopy.sh") |
    sed -n '/^best of/,$p'
else
  echo "(skipped: needs root, for the namespaces and XDP)"
fi
