#!/bin/bash
# A host without RDMA: rstream under librsocket.so works over the software
# providers with exactly one informational "no RDMA device" line per
# process (never a flood), and an explicit SLIPSTREAM_PROVIDER=verbs fails
# the connection with ENODEV and one warning instead of falling back.
# Skipped on hosts that have an RDMA device (the Soft-RoCE guest proves
# the verbs side).
#
# Run from the build directory: bash $srcdir/tests/ext/no_rdma.sh
set -u
ext_name=no_rdma
b=${top_builddir:-$(pwd)}
LIB=$(cd "$b" && pwd)/.libs/librsocket.so
[ -f "$LIB" ] || { echo "ERROR: $ext_name: $LIB not found"; exit 99; }
command -v rstream >/dev/null || { echo "SKIP: $ext_name: rstream not found"; exit 77; }
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  echo "SKIP: $ext_name: this host has RDMA devices"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-nordma.XXXXXX") || exit 99
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"
# A port below the kernel's ephemeral range (other tests' connections
# take those: one made rbind fail with EADDRINUSE) that nothing uses now.
low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
for _ in $(seq 20); do
  port=$((10000 + RANDOM % (low - 10000)))
  [ -z "$(ss -Htan "sport = :$port" 2>/dev/null)" ] && break
done
P=(env LD_PRELOAD="$LIB" SLIPSTREAM_LOG_LEVEL=info)

timeout 60 "${P[@]}" rstream -b 127.0.0.1 -p "$port" -S 4096 -C 200 -T v >"$T/s.out" 2>"$T/s.err" &
spid=$!
sleep 0.5
timeout 60 "${P[@]}" rstream -s 127.0.0.1 -p "$port" -S 4096 -C 200 -T v >"$T/c.out" 2>"$T/c.err"
crc=$?
wait $spid
src=$?
check "auto without RDMA: rstream client exit 0 (got $crc), server exit 0 (got $src)" \
  "$([ $crc = 0 ] && [ $src = 0 ]; echo $?)"
for side in s c; do
  n=$(grep -c "no RDMA device" "$T/$side.err")
  check "auto without RDMA: one 'no RDMA device' line from the $side process (got $n)" \
    "$([ "$n" = 1 ]; echo $?)"
  n=$(grep -ci "verbs" "$T/$side.err")
  check "auto without RDMA: no other verbs lines from the $side process (got $n in all)" \
    "$([ "$n" = 1 ]; echo $?)"
done

# verbs asked for explicitly: a clear error, no silent fallback.
timeout 30 env LD_PRELOAD="$LIB" SLIPSTREAM_PROVIDER=verbs rstream -s 127.0.0.1 -p "$port" \
  -S 64 -C 1 >"$T/v.out" 2>"$T/v.err"
vrc=$?
check "SLIPSTREAM_PROVIDER=verbs without RDMA: rstream fails (exit $vrc)" "$([ $vrc != 0 ] && [ $vrc != 124 ]; echo $?)"
n=$(grep -c "no RDMA device" "$T/v.err")
check "SLIPSTREAM_PROVIDER=verbs without RDMA: one warning naming the cause (got $n)" \
  "$([ "$n" = 1 ]; echo $?)"
grep -q "No such device" "$T/v.out" "$T/v.err"
check "SLIPSTREAM_PROVIDER=verbs without RDMA: the error is ENODEV" $?
[ $fails = 0 ] || { tail -n 5 "$T"/*.err "$T"/*.out; exit 1; }
exit 0
