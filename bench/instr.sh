#!/bin/sh
# Instructions per round trip (64 B ping-pong, 4 r-calls) for each software
# provider, counted by callgrind on
# bench/rsocket_instr: the difference between two run lengths, so set-up
# and tear-down cancel out. Deterministic, unlike timings on a shared
# machine. Run from the build directory: sh ../bench/instr.sh
# (Not for streams: there memcpy dominates, and glibc copies differently by
# size, so the count per MiB says little about speed.)
set -u
BIN=./bench/rsocket_instr
command -v valgrind >/dev/null 2>&1 || { echo "instr.sh: valgrind not found" >&2; exit 2; }
[ -x "$BIN" ] || { echo "instr.sh: $BIN not built (make bench/rsocket_instr)" >&2; exit 2; }
count() {  # provider mode n -> instructions
  SLIPSTREAM_PROVIDER=$1 ./libtool --mode=execute valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null "$BIN" "$2" "$3" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for p in shm tcp; do
  a=$(count "$p" pingpong 2000) b=$(count "$p" pingpong 12000)
  echo "$p: $(( (b - a) / 10000 )) instructions per 64 B round trip (4 calls)"
  a=$(count "$p" empty 2000) b=$(count "$p" empty 12000)
  echo "$p: $(( (b - a) / 10000 )) instructions per empty non-blocking rrecv (one busy-poll step)"
done
