#!/bin/bash
# Socket options under librspreload as the kernel answers them (issue 33):
# tests/ext/options_prog.c reads some 50 options on a connected socket,
# sets 17 and reads them back, with bad arguments too, then reads every
# option number of the socket's levels (SOL_SOCKET, TCP, IP or IPv6) and
# sets each it read back to its value, on both ends of a connection; its
# output plain (Linux's TCP) is the reference, and the
# same program with both ends preloaded, on shm and on tcp, over IPv4 and
# IPv6, must print the same lines (values that follow the transport print
# as "varies") while each process counts its connection on rsockets.
# KNOWN lists what differs still, each printed as a counted skip. About 5 s.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload_options.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
. "$here/check.sh"
preload_prog options_prog.c
port=$((20000 + RANDOM % 9000))

# What still differs (a regular expression per line of the diff): none.
KNOWN=()

# run TAG FAMILY [ENV...]: server and client output in $T/TAG.srv, .cl.
run() {
  local tag=$1 fam=$2
  shift 2
  port=$((port + 1))
  mkdir -p "$T/$tag.st"
  env "$@" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 20 "$T/prog" serve $port "$fam" >"$T/$tag.srv" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q ready "$T/$tag.srv" && break; sleep 0.1; done
  env "$@" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 20 "$T/prog" probe $port "$fam" >"$T/$tag.cl" 2>&1
  local rc=$?
  wait "${pids[-1]}" && return $rc
}

for fam in 4 6; do
  bad=0
  run plain$fam $fam || bad=1
  n=$(grep -c "^get \|^set " "$T/plain$fam.cl")
  [ "$n" -gt 40 ] || { echo "  only $n options printed"; bad=1; }
  swept=$(grep -c "^sweep get " "$T/plain$fam.cl")
  kept=$(grep -c "^sweep get .* rc=0 " "$T/plain$fam.cl")
  [ "$swept" -gt 200 ] && [ "$kept" -gt 60 ] || { echo "  swept $swept, $kept read"; bad=1; }
  check "plain IPv$fam: $n options read and set, $swept option numbers swept ($kept read and set back) on each end (the reference)" $bad
  for prov in shm tcp; do
    tag=$prov$fam
    bad=0
    run "$tag" $fam LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
    n=$(cat "$T/$tag.st"/rspreload.* 2>/dev/null | grep -c " rsockets=1 .*$prov=1 .* kernel_tcp=0$")
    [ "$n" = 2 ] || { echo "  stats: $(cat "$T/$tag.st"/rspreload.* 2>/dev/null)"; bad=1; }
    for side in cl srv; do
      diff "$T/plain$fam.$side" "$T/$tag.$side" | grep '^>' | sed 's/^> //' >"$T/$tag.$side.diff"
      cp "$T/$tag.$side.diff" "$T/$tag.$side.open"
      for k in "${KNOWN[@]+"${KNOWN[@]}"}"; do
        if grep -q "^$k" "$T/$tag.$side.open"; then
          echo "SKIP: $name: $prov IPv$fam $side: differs still: $(grep "^$k" "$T/$tag.$side.open" | head -1)"
          grep -v "^$k" "$T/$tag.$side.open" >"$T/x" && mv "$T/x" "$T/$tag.$side.open" || : >"$T/$tag.$side.open"
        fi
      done
      # Nothing missing either: as many lines as the reference.
      [ "$(wc -l <"$T/plain$fam.$side")" = "$(wc -l <"$T/$tag.$side")" ] ||
        echo "lines missing" >>"$T/$tag.$side.open"
      if [ -s "$T/$tag.$side.open" ]; then
        echo "  $side: plain | preloaded:"
        diff "$T/plain$fam.$side" "$T/$tag.$side" | grep '^[<>]' | sed 's/^/    /' | head -20
        bad=1
      fi
    done
    check "$prov IPv$fam, both ends preloaded on rsockets: every option as Linux's TCP answers it, but the known ones" $bad
  done
done

exit $((fails > 0))
