#!/bin/sh
# Two builds against each other on shm busy-poll latency, where one run
# says nothing: this host moves its two vCPUs between seconds, so a single
# run's one-way swings by a third. The builds' demos run alternately, PAIRS
# times (default 30); printed: each pair, both medians, the median of the
# pairwise differences (B - A) and how often B was faster.
#   sh bench/ab.sh BUILD_A BUILD_B [PAIRS]
set -u
[ $# -ge 2 ] || { echo "usage: ab.sh BUILD_A BUILD_B [PAIRS]" >&2; exit 2; }
a=$1 b=$2 n=${3:-30}
for d in "$a" "$b"; do
  [ -x "$d/tools/slipstream-demo" ] || { echo "ab.sh: $d/tools/slipstream-demo not built" >&2; exit 2; }
done
one_way() {  # build dir -> shm busy-poll one-way in us
  (cd "$1" && ./tools/slipstream-demo --iters 20000 --stream-mib 8 --transports shm 2>&1) |
    awk '/^shm \(busy-poll\) +[0-9]/ { print $5 }'
}
i=0
while [ $i -lt "$n" ]; do
  x=$(one_way "$a") y=$(one_way "$b")
  [ -n "$x" ] && [ -n "$y" ] && echo "$x $y"
  i=$((i + 1))
done | awk '
  function median(v, k,   i, j, t) {  # sorts v[1..k] in place
    for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
    return k % 2 ? v[(k+1)/2] : (v[k/2] + v[k/2+1]) / 2
  }
  { k++; A[k] = $1; B[k] = $2; D[k] = $2 - $1; if ($2 < $1) faster++; print "pair " k ": A " $1 " us, B " $2 " us" }
  END {
    if (!k) { print "ab.sh: no pair measured"; exit 1 }
    printf "median one-way: A %.3f us, B %.3f us; median of B - A: %+.3f us; B faster in %d of %d pairs\n",
           median(A, k), median(B, k), median(D, k), faster, k
  }'
