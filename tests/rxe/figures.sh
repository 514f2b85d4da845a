#!/bin/bash
# rstream's own figures on real verbs; runs INSIDE the rxe guest:
#   tests/rxe/rxe-vm.sh -s BUILD -s SRC -- bash SRC/tests/rxe/figures.sh BUILD
# 64 B latency (usec/xfer: half a round trip) and 64 KiB / 1 MiB bandwidth
# (Gb/sec), as the client's rstream prints them, for server:client =
# stock:stock, ours:ours, stock:ours and ours:stock ("stock": the guest's
# librdmacm; "ours": BUILD/.libs/librsocket.so preloaded, provider
# $RXE_PROVIDER, default verbs).  Prints a markdown table; a run that fails
# shows as "fail" and makes the exit status 1.
#
# Under TCG these are emulator figures: compare rows, not absolute values.
# Knobs: RXE_FIG_MODE (rstream -T letter, default n: rstream's own default,
# busy polling; under TCG it gave stock:stock ~2x lower latency than -T b,
# -T a the highest), RXE_PAIRS.
set -u
# shellcheck source=tests/rxe/common.sh
. "$(dirname "$0")/common.sh" || exit 2
rxe_init "${1:-}"

PAIRS=${RXE_PAIRS:-stock:stock ours:ours stock:ours ours:stock}
MODE=${RXE_FIG_MODE:-n}
LAT=(-S 64 -C 1 -I 500)
BW64K=(-S 65536 -C 100)
BW1M=(-S 1048576 -C 10)
failed=0

# figure SRV CLI FIELD ARGS... : one rstream run; FIG is the client's
# result field (7 Gb/sec, 8 usec/xfer) or "fail".  (No $(...): the case
# counter and port must advance in this shell.)
figure() {
  local s=$1 c=$2 field=$3 line
  shift 3
  pair "$s" "$c" rstream "$RXE_IP" -T "$MODE" "$@"
  verdict
  line=$(perf_line "$CASE_DIR/c.out")
  if [ -n "$WHY" ] || [ -z "$line" ]; then
    FIG=fail
    failed=1
    echo "$s:$c rstream $*: ${WHY:-no result line}" >>"$WORK/failures"
    return
  fi
  FIG=$(echo "$line" | awk -v f="$field" '{print $f}')
}

echo "rstream -T $MODE over $RXE_DEV ($RXE_IP); ours = SLIPSTREAM_PROVIDER=$OURS_PROV; $(nproc) CPUs"
echo "latency: ${LAT[*]}; bandwidth: ${BW64K[*]} and ${BW1M[*]}"
echo
echo "| server:client | 64 B latency (usec/xfer) | 64 KiB bw (Gb/s) | 1 MiB bw (Gb/s) |"
echo "|---|---:|---:|---:|"
for p in $PAIRS; do
  s=${p%:*} c=${p#*:}
  figure "$s" "$c" 8 "${LAT[@]}"
  lat=$FIG
  figure "$s" "$c" 7 "${BW64K[@]}"
  bw1=$FIG
  figure "$s" "$c" 7 "${BW1M[@]}"
  echo "| $p | $lat | $bw1 | $FIG |"
done
if [ -s "$WORK/failures" ]; then
  echo
  sed 's/^/failed: /' "$WORK/failures"
fi
exit $failed
