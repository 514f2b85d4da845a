#!/bin/bash
# The 64 B UDP receive rate of libvma.so's recvfrom_zcopy (+ free_packets)
# against recvfrom through the same offload and against the kernel's
# recvfrom, in the same run: a kernel sender in namespace B blasts 64 B
# datagrams over veth (B's tx checksum offload off) for RATE_TIME seconds
# at a receiver in A that busy-loops (MSG_DONTWAIT) with one of
#   kernel   recv on a plain socket (no preload)
#   copy     recv under LD_PRELOAD=libvma.so (offloaded: rings, copied)
#   zcopy    recvfrom_zcopy + free_packets under the preload
# (tests/ext/vma_zcopy_prog.c, built against the installed header), the
# three alternating RATE_RUNS times. Prints each run's received and sent
# rates, and the best of each receiver as a ratio to the kernel's. Each
# preloaded run must log its rings ("UDP offloaded on"), and zcopy's must
# have copied nothing, else the row is marked. The sender (one kernel
# socket, send() in a loop) is the limit when a receiver takes nearly all
# it sent: its rate is printed beside each run.
#
#   cd build && sudo bash ../bench/vma_zcopy.sh      (root: namespaces, XDP)
set -u
name=vma_zcopy.sh
TIME=${RATE_TIME:-3}
RUNS=${RATE_RUNS:-3}
A=ss-bza-$$ Z=ss-bzb-$$ IPA=10.218.0.1 IPB=10.218.0.2 PORT=11311
# Root and tools checked, $T, $LIB, clean-up and vma_pair (exit 77: skipped).
top_builddir=$(pwd) . "$(dirname "$0")/../tests/ext/vma_pair.sh"
here=$(cd "$(dirname "$0")" && pwd)
make -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >/dev/null 2>&1 ||
  { echo "$name: installing the header failed" >&2; exit 2; }
HDR=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
"$CC" -std=gnu11 -O2 -I"${HDR%/mellanox/vma_extra.h}" "$here/../tests/ext/vma_zcopy_prog.c" \
  -o "$T/prog" -lpthread || { echo "$name: the program did not build" >&2; exit 2; }
vma_pair "$A" "$Z" za zb "$IPA/24" "$IPB/24"
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null

# one MODE -> "received/s sent/s note"
one() {
  local mode=$1 pre=() how=copy
  [ "$mode" = kernel ] || pre=(env LD_PRELOAD="$LIB" VMA_TRACELEVEL=info)
  [ "$mode" = zcopy ] && how=zcopy
  PORT=$((PORT + 1))
  ip netns exec "$A" "${pre[@]}" timeout $((TIME + 20)) "$T/prog" rate $IPA $PORT "$TIME" $how \
    >"$T/rx" 2>"$T/rx.err" &
  local rpid=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/rx" && break; sleep 0.05; done
  ip netns exec "$Z" timeout $((TIME + 20)) "$T/prog" blast $IPA $PORT $((TIME + 1)) >"$T/tx" 2>&1
  wait $rpid
  local got sent note=""
  got=$(sed -n 's/.*: \([0-9]*\)\/s.*/\1/p' "$T/rx")
  sent=$(sed -n 's/.*: \([0-9]*\)\/s.*/\1/p' "$T/tx")
  if [ "$mode" != kernel ] && ! grep -q "UDP offloaded on" "$T/rx.err"; then note="NOT OFFLOADED"; fi
  if [ "$mode" = zcopy ] && ! grep -q "(0 copied)" "$T/rx"; then note="$note COPIED"; fi
  echo "${got:-0} ${sent:-0} $note"
}

declare -A best
echo "run  receiver  received/s  sent/s  note"
for r in $(seq "$RUNS"); do
  for mode in kernel copy zcopy; do
    read -r got sent note < <(one $mode)
    printf '%3s  %-8s  %10s  %6s  %s\n' "$r" "$mode" "$got" "$sent" "$note"
    [ "${best[$mode]:-0}" -ge "$got" ] || best[$mode]=$got
  done
done
k=${best[kernel]:-0}
echo
echo "best of $RUNS (receive rate, ratio to the kernel's):"
for mode in kernel copy zcopy; do
  awk -v m=$mode -v g="${best[$mode]:-0}" -v k="$k" \
    'BEGIN { printf "  %-8s %10d/s  %.2fx\n", m, g, k ? g / k : 0 }'
done
