#!/bin/bash
# Socket options on offloaded TCP connections under libvma.so as Linux's
# TCP answers them: tests/ext/options_prog.c (preload_options.sh says what
# it prints: some 50 named options read, 17 set, every option number of the
# socket's levels read and set back) across a veth pair between namespaces
# A and Z made here and removed on exit. Per family, the server in A then
# the client in A, each run plain (the reference, both ends Linux's) and
# with A's end under libvma.so (SLIPSTREAM_VMA_TCP=1; its connection
# logged offloaded); A's end must print what the plain run printed. KNOWN
# lists what differs still, each printed as a counted skip. Needs root
# (exit 77 otherwise). About 10 s.
set -u
name=vma_options.sh
A=ss-oa-$$ Z=ss-oz-$$
IP4=10.218.0.1 IP4B=10.218.0.2 IP6=fd00:218::1 IP6B=fd00:218::2
. "$(dirname "$0")/vma_pair.sh"
CC=$(command -v cc || command -v gcc) || skip "no C compiler"
"$CC" -std=gnu11 -O2 -Wall -Wextra -Werror "$here/options_prog.c" -o "$T/prog" >"$T/cc.log" 2>&1 ||
  { cat "$T/cc.log"; echo "ERROR: $name: options_prog.c did not build"; exit 99; }
vma_pair "$A" "$Z" oa oz "$IP4/24 $IP6/64" "$IP4B/24 $IP6B/64"
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null
export OPTIONS_SEGMENTS=1  # TCP_INFO's state and segment count compared too

# What still differs (a regular expression per line of the diff): none.
KNOWN=()

port=$((20000 + RANDOM % 9000))
# run TAG SERVER_NS CLIENT_NS FAMILY ADDR SERVER_ENV CLIENT_ENV: the
# outputs in $T/TAG.srv and $T/TAG.cl, the logs in .err beside them.
run() {
  local tag=$1 sns=$2 cns=$3 fam=$4 addr=$5 senv=$6 cenv=$7
  port=$((port + 1))
  # shellcheck disable=SC2086  # the environments are words
  ip netns exec "$sns" env $senv timeout 20 "$T/prog" serve $port "$fam" "$addr" \
    >"$T/$tag.srv" 2>"$T/$tag.srv.err" &
  pids+=($!)
  for _ in $(seq 50); do grep -q ready "$T/$tag.srv" && break; sleep 0.1; done
  # shellcheck disable=SC2086
  ip netns exec "$cns" env $cenv timeout 20 "$T/prog" probe $port "$fam" "$addr" \
    >"$T/$tag.cl" 2>"$T/$tag.cl.err"
  local rc=$?
  wait "${pids[-1]}" && return $rc
}
# offloaded TAG: A's end of run TAG was on the rings (its log says so)
# and A's kernel carried under 3 of its TCP segments ($segs, counted by
# the caller around the run; a plain run's moves at least 6).
offloaded() {
  local bad=0
  grep -Eq "DEBUG: listen fd [0-9]+ .*: on 1 listener\(s\) of the rings" "$T/$1.srv.err" ||
    grep -Eq "DEBUG: connect fd [0-9]+: offloaded on oa" "$T/$1.cl.err" ||
    { echo "  no offload logged"; bad=1; }
  [ "$segs" -lt 3 ] || { echo "  A's kernel moved $segs TCP segments"; bad=1; }
  return $bad
}
# same REF GOT LABEL: GOT prints what REF did but the known lines.
same() {
  local ref=$1 got=$2 label=$3 k bad=0
  diff "$ref" "$got" | grep '^>' | sed 's/^> //' >"$T/open"
  for k in "${KNOWN[@]+"${KNOWN[@]}"}"; do
    if grep -q "^$k" "$T/open"; then
      echo "SKIP: $name: $label: differs still: $(grep "^$k" "$T/open" | head -1)"
      grep -v "^$k" "$T/open" >"$T/x"
      mv "$T/x" "$T/open"
    fi
  done
  # Nothing missing either: as many lines as the reference.
  [ "$(wc -l <"$ref")" = "$(wc -l <"$got")" ] || echo "lines missing" >>"$T/open"
  if [ -s "$T/open" ]; then
    echo "  plain | libvma.so:"
    diff "$ref" "$got" | grep '^[<>]' | sed 's/^/    /' | head -20
    bad=1
  fi
  return $bad
}
V="LD_PRELOAD=$LIB SLIPSTREAM_VMA_TCP=1 VMA_TRACELEVEL=debug"
for fam in 4 6; do
  a=$IP4 z=$IP4B
  [ $fam = 4 ] || { a=$IP6; z=$IP6B; }
  bad=0
  before=$(kernel_tcp)
  run ref_s$fam "$A" "$Z" $fam $a X=1 X=1 || bad=1
  segs=$(($(kernel_tcp) - before))
  [ "$segs" -ge 6 ] || { echo "  A's kernel moved $segs TCP segments"; bad=1; }
  run ref_c$fam "$Z" "$A" $fam $z X=1 X=1 || bad=1
  n=$(grep -c "^sweep get .* rc=0 " "$T/ref_s$fam.srv")
  [ "$n" -gt 60 ] || { echo "  only $n option numbers read"; bad=1; }
  check "plain IPv$fam: $n option numbers read on each end, $segs segments through A's kernel (the reference)" $bad
  bad=0
  before=$(kernel_tcp)
  run vma_s$fam "$A" "$Z" $fam $a "$V" X=1 || bad=1
  segs=$(($(kernel_tcp) - before))
  offloaded vma_s$fam || bad=1
  same "$T/ref_s$fam.srv" "$T/vma_s$fam.srv" "server IPv$fam" || bad=1
  check "IPv$fam: an accepted offloaded connection answers every option as Linux's TCP, but the known ones" $bad
  bad=0
  before=$(kernel_tcp)
  run vma_c$fam "$Z" "$A" $fam $z X=1 "$V" || bad=1
  segs=$(($(kernel_tcp) - before))
  offloaded vma_c$fam || bad=1
  same "$T/ref_c$fam.cl" "$T/vma_c$fam.cl" "client IPv$fam" || bad=1
  check "IPv$fam: a connected offloaded connection answers every option as Linux's TCP, but the known ones" $bad
done

exit $((fails > 0))
