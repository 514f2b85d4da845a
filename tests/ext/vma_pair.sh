# shellcheck shell=bash
# What the VMA face's namespace scripts (vma_netns.sh, vma_mcast.sh) share
# (sourced, after setting $name; not a test by itself): the preload and
# vma_stats from the build directory, root and tools checked (exit 77
# otherwise), $T a scratch directory, $pids killed and the namespaces
# removed on exit, check/has (check.sh), and:
#   vma_pair A Z IFA IFB "A's CIDRs" "Z's CIDRs": namespaces A and Z joined
#     by veth IFA-IFB (Z's tx checksum offload off), addresses added (IPv6
#     without DAD), links up; skips the test when that fails.
#   kernel_udp In|Out 4|6: namespace $A's kernel count of UDP datagrams.
#   kernel_tcp: namespace $A's kernel count of TCP segments, in and out.
#   block PID: the vmastat blocks of PID, as vma_stats -v 3 shows them.
#   header_prog SRC [LIBS]: the Extra API header installed under $T (its
#     include folder in $HDR_INC), SRC (a C file beside this one) built
#     against it only as $PROG.
#   xsk_rings PID: the entries of the AF_XDP rings PID mapped, as the
#     kernel sized them: "rx R tx T fill F completion C" (its first socket).
#   ring_frames LOG: the frames per queue a preloaded program's log line
#     ("UDP offloaded on ...") reports.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 99  # this file's: benches source it too
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
LIB=$B/.libs/libvma.so
TOOL=$B/tools/vma_stats
for f in "$LIB" "$TOOL"; do
  [ -e "$f" ] || { echo "ERROR: $name: $f not built"; exit 99; }
done
. "$here/check.sh"
require_root "namespaces and XDP" ip ethtool timeout
unset LD_PRELOAD VMA_TRACELEVEL VMA_SPEC VMA_OFFLOADED_SOCKETS VMA_APPLICATION_ID VMA_SOCKETXTREME
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-vma.XXXXXX") || exit 99
# The preload from a copy every user can read: cases run as nobody.
. "$here/libs_copy.sh" || exit 99
libs_copy "$T/lib" || { echo "ERROR: $name: copying the libraries failed"; exit 99; }
LIB=$T/lib/libvma.so
export LD_LIBRARY_PATH=$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  exec 3>&- 2>/dev/null
  [ -n "${A:-}" ] && ip netns del "$A" 2>/dev/null
  [ -n "${Z:-}" ] && ip netns del "$Z" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
skip() { echo "SKIP: $name: $*"; exit 77; }

pair_addr() {  # pair_addr NETNS IF CIDR (IPv6 without DAD)
  local nodad=
  case $3 in *:*) nodad=nodad ;; esac
  ip -n "$1" addr add "$3" dev "$2" $nodad || skip "adding $3 failed"
}
vma_pair() {
  local a_if=$3 z_if=$4 cidr
  A=$1 Z=$2
  ip netns add "$A" && ip netns add "$Z" || skip "ip netns add failed"
  ip -n "$A" link add name "$a_if" type veth peer name "$z_if" netns "$Z" || skip "no veth pair"
  for cidr in $5; do pair_addr "$A" "$a_if" "$cidr"; done
  for cidr in $6; do pair_addr "$Z" "$z_if" "$cidr"; done
  ip -n "$A" link set "$a_if" up && ip -n "$Z" link set "$z_if" up &&
    ip -n "$A" link set lo up && ip -n "$Z" link set lo up || skip "configuring the pair failed"
  ip netns exec "$Z" ethtool -K "$z_if" tx off >/dev/null 2>&1 || skip "ethtool -K $z_if tx off failed"
  for _ in $(seq 50); do
    ip -n "$Z" link show "$z_if" | grep -q LOWER_UP && break
    sleep 0.1
  done
}

kernel_udp() {
  if [ "$2" = 6 ]; then
    ip netns exec "$A" awk -v k="Udp6$1Datagrams" '$1 == k {print $2}' /proc/net/snmp6
  else
    ip netns exec "$A" awk -v f="$1Datagrams" '$1 == "Udp:" && $2 !~ /^[0-9]+$/ {
        for (i = 2; i <= NF; i++) if ($i == f) c = i }
      $1 == "Udp:" && $2 ~ /^[0-9]+$/ {print $c}' /proc/net/snmp
  fi
}

kernel_tcp() {
  ip netns exec "$A" awk '$1 == "Tcp:" && $2 !~ /^[0-9]+$/ {
      for (i = 2; i <= NF; i++) { if ($i == "InSegs") a = i; if ($i == "OutSegs") b = i } }
    $1 == "Tcp:" && $2 ~ /^[0-9]+$/ {print $a + $b}' /proc/net/snmp
}

block() { timeout 20 "$TOOL" -k "$T/stats" -p "$1" -v 3 -c 1 2>&1; }

header_prog() {
  if ! ${MAKE:-make} -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >"$T/install.log" 2>&1; then
    cat "$T/install.log"
    echo "ERROR: $name: make install-mellanoxincludeHEADERS failed"
    exit 99
  fi
  local hdr
  hdr=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
  [ -n "$hdr" ] || { echo "ERROR: $name: no header installed"; exit 99; }
  HDR_INC=${hdr%/mellanox/vma_extra.h}
  PROG=$T/prog
  "$CC" -std=gnu11 -O2 -Wall -Wextra -Werror -I"$HDR_INC" "$here/$1" -o "$PROG" ${2:-} \
    >"$T/cc.log" 2>&1 || { cat "$T/cc.log"; echo "ERROR: $name: the test program did not build"; exit 99; }
}

# A ring's mmap sits at its fixed page offset (if_xdp.h: rx 0, tx
# 0x80000000, fill 0x100000000, completion 0x180000000) and is the kernel's
# allocation: a header under a page plus entries x 16 B (rx, tx) or 8 B
# (fill, completion), page-rounded. So the entries are the largest power
# of two below size / descriptor: exact for rings of a page of descriptors
# or more (512 rx/tx entries, 512 fill/completion), which callers use.
xsk_rings() {
  local range off path ring size d e
  local -A n=()
  while read -r range _ off _ _ path; do
    case $path in socket:*) ;; *) continue ;; esac
    case $off in
      00000000) ring=rx d=16 ;; 80000000) ring=tx d=16 ;;
      100000000) ring=fill d=8 ;; 180000000) ring=completion d=8 ;; *) continue ;;
    esac
    [ -z "${n[$ring]:-}" ] || continue
    size=$((16#${range#*-} - 16#${range%-*}))
    e=1
    while [ $((e * 2 * d)) -lt "$size" ]; do e=$((e * 2)); done
    n[$ring]=$e
  done <"/proc/$1/maps"
  echo "rx ${n[rx]:-none} tx ${n[tx]:-none} fill ${n[fill]:-none} completion ${n[completion]:-none}"
}

ring_frames() { sed -n 's/.*UDP offloaded on .* \([0-9][0-9]*\) frames of .*/\1/p' "$1" | head -1; }
