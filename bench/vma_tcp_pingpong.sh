#!/bin/bash
# 64 B TCP ping-pong latency with libvma.so's receive paths against the
# kernel's busy-polled socket, in the same run, across a veth pair between
# two namespaces this script makes and removes (no traffic leaves them):
# bench/tcp_pingpong.c's server in A echoes one connection of its client
# in B (Linux's TCP, TCP_NODELAY, spinning in recv(MSG_DONTWAIT) with
# SO_BUSY_POLL), which times COUNT round trips (default 20000, after 1000
# not counted), with the server
#   kernel   recv on A's kernel socket, SO_BUSY_POLL 50 us (no preload)
#   recv     recv under LD_PRELOAD=libvma.so (the rings', copied)
#   zcopy    recvfrom_zcopy + free_packets under the preload
#   xtreme   socketxtreme_poll on the ring descriptor (VMA_SOCKETXTREME=1,
#            the connection auto-accepted)
#   both     xtreme, and the client under the preload too (a blocking recv
#            the library spins in): no kernel TCP on either end, as
#            sockperf under libvma on both hosts
# every server spinning (MSG_DONTWAIT or polling), the five in turn ROUNDS
# times (default 3), the server on CPU 0 and the client on CPU 1; with
# IDLE=N the client first opens N more connections left idle (socketXtreme
# reports them all on one ring). MODES picks some of the five. Prints
# each run's p50 and p99 (microseconds), then each mode's median p50 and
# p99 and their ratio to the kernel's. A preloaded run whose A kernel moved
# 5 TCP segments or more (B's too, for both) is marked NOT-OFFLOADED.
#
#   cd build && sudo bash ../bench/vma_tcp_pingpong.sh      (root: namespaces, XDP)
set -u
name=vma_tcp_pingpong.sh
ROUNDS=${ROUNDS:-3} COUNT=${COUNT:-20000} IDLE=${IDLE:-0}
MODES=${MODES:-kernel recv zcopy xtreme both}
A=ss-bpa-$$ Z=ss-bpb-$$ IPA=10.225.0.1 IPB=10.225.0.2
# Root and tools checked, $T, $LIB, clean-up, vma_pair and kernel_tcp
# (exit 77: skipped).
top_builddir=$(pwd) . "$(dirname "$0")/../tests/ext/vma_pair.sh"
here=$(cd "$(dirname "$0")" && pwd)
make -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >/dev/null 2>&1 ||
  { echo "$name: installing the header failed" >&2; exit 2; }
HDR=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
"$CC" -std=gnu11 -O2 -I"${HDR%/mellanox/vma_extra.h}" "$here/tcp_pingpong.c" -o "$T/pp" ||
  { echo "$name: the program did not build" >&2; exit 2; }
vma_pair "$A" "$Z" pa pb "$IPA/24" "$IPB/24"
# A's sends finished too: over veth a partial checksum reaches B's rings
# as it left (libvmacompat(7)), and B's client runs on them in "both".
ip netns exec "$A" ethtool -K pa tx off >/dev/null || skip "ethtool -K pa tx off failed"
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null
port=12000
declare -A p50s p99s
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    port=$((port + 1))
    env=() cenv=() srv=$mode crecv=spin
    case $mode in
      kernel) srv=recv ;;
      xtreme) env=(LD_PRELOAD="$LIB" VMA_SOCKETXTREME=1) ;;
      both) env=(LD_PRELOAD="$LIB" VMA_SOCKETXTREME=1) cenv=(LD_PRELOAD="$LIB") srv=xtreme crecv=block ;;
      *) env=(LD_PRELOAD="$LIB") ;;
    esac
    before=$(kernel_tcp) before_b=$(A=$Z kernel_tcp)
    ip netns exec "$A" env "${env[@]}" taskset -c 0 timeout 120 "$T/pp" pong "$srv" "$IPA" $port >"$T/srv" 2>"$T/srv.err" &
    spid=$!
    for _ in $(seq 100); do grep -q '^ready' "$T/srv" && break; sleep 0.1; done
    out=$(ip netns exec "$Z" env "${cenv[@]}" taskset -c 1 timeout 120 "$T/pp" ping "$IPA" $port "$COUNT" $crecv "$IDLE" 2>&1)
    wait $spid
    segs=$(($(kernel_tcp) - before)) segs_b=$(($(A=$Z kernel_tcp) - before_b))
    p50=$(sed -n 's/^rtt_us p50 \([0-9.]*\) .*/\1/p' <<<"$out")
    p99=$(sed -n 's/.* p99 \([0-9.]*\)$/\1/p' <<<"$out")
    mark=
    [ "$mode" != kernel ] && [ "$segs" -ge 5 ] && mark=" NOT-OFFLOADED ($segs segments in A's kernel)"
    [ "$mode" = both ] && [ "$segs_b" -ge 5 ] && mark+=" NOT-OFFLOADED ($segs_b segments in B's kernel)"
    [ -n "$p50" ] || mark=" FAILED: $(tail -2 <<<"$out")"
    echo "round $round $mode: p50 ${p50:-?} us p99 ${p99:-?} us$mark"
    [ -n "$p50" ] && [ -z "$mark" ] && { p50s[$mode]+="$p50 "; p99s[$mode]+="$p99 "; }
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
k50=$(median <<<"${p50s[kernel]:-}") k99=$(median <<<"${p99s[kernel]:-}")
for mode in $MODES; do
  m50=$(median <<<"${p50s[$mode]:-}") m99=$(median <<<"${p99s[$mode]:-}")
  awk -v m="$mode" -v a="${m50:-0}" -v b="${m99:-0}" -v ka="${k50:-0}" -v kb="${k99:-0}" 'BEGIN {
    if (a == 0) { printf "%-7s no run\n", m; exit }
    printf "%-7s p50 %6.1f us (%.2fx the kernel'"'"'s)  p99 %6.1f us (%.2fx)\n", m, a, ka ? a / ka : 0, b, kb ? b / kb : 0 }'
done
