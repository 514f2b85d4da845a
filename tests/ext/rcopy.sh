#!/bin/bash
# rdmacm-utils' rcopy on Slipstream: one rcopy server per provider (it
# never exits; killed at the end) and a client per file, both with
# librsocket.so preloaded.  rcopy has no checksum: the copy is compared
# with cmp.  Files of random data: 1 B, 4095 B, 1 MiB + 7, 8 MiB, 0 B, and
# 1 B again (the server must survive the aborted empty-file connection).
#
# The client mmaps the whole source file, and mmap of an empty file fails
# with EINVAL before anything is sent: rcopy exits 22 after connecting.
# That is rcopy's own limitation, so for 0 B either a correct empty copy or
# exit 22 with the server still serving passes.
#
# Run from the build directory: bash $srcdir/tests/ext/rcopy.sh
# EXT_PROVIDERS overrides the provider list (default "tcp shm").
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
ext_init rcopy
# One server serves every case of a provider.
SRV_TIMEOUT=$((EXT_TIMEOUT * 10))

PROVIDERS=${EXT_PROVIDERS:-tcp shm}
SIZES="1 4095 1048583 8388608 0 1"

mkdir -p "$TMPD/src" || ext_hard_error "mkdir failed"
for n in $SIZES; do
  [ -f "$TMPD/src/$n" ] || head -c "$n" /dev/urandom >"$TMPD/src/$n" ||
    ext_hard_error "cannot write $TMPD/src/$n"
done

for prov in $PROVIDERS; do
  echo "== provider $prov (librsocket.so preloaded on both ends)"
  run_env_preload "$prov"
  ext_new_case
  SDIR=$CASE_DIR
  ext_next_port
  ext_start_server rcopy -p "$PORT"
  first=1
  missing=
  restart=0
  i=0
  for n in $SIZES; do
    i=$((i + 1))
    label="$prov: rcopy $n B"
    [ "$i" -lt 6 ] || label="$label (after the empty-file case)"
    if [ -n "$missing" ]; then
      n_skip=$((n_skip + 1))
      continue
    fi
    if [ "$restart" = 1 ] || ! kill -0 "$SPID" 2>/dev/null; then
      # After a failed case: an aborted transfer leaves rcopy's server with
      # the file still open ("cannot open another file", EBUSY to the next
      # client), or the server died (reported there).  Start a fresh one.
      ext_stop "$SPID"
      echo "  (new rcopy server after the failed case)"
      restart=0
      ext_new_case
      SDIR=$CASE_DIR
      ext_next_port
      ext_start_server rcopy -p "$PORT"
    fi
    ext_new_case
    dst=$TMPD/dst-$prov-$i
    ext_run_client rcopy "$TMPD/src/$n" "127.0.0.1:$dst" -p "$PORT"
    cp "$SDIR/s.err" "$CASE_DIR/s.err" 2>/dev/null
    sleep 0.05
    WHY=
    if ext_timed_out "$C_RC"; then
      WHY="client hung (killed after ${EXT_TIMEOUT}s)"
    elif [ "$n" = 0 ] && [ "$C_RC" = 22 ]; then
      : # rcopy cannot mmap an empty file (see above)
    elif [ "$C_RC" -ne 0 ]; then
      WHY="client exit $C_RC"
    elif [ ! -f "$dst" ]; then
      WHY="no destination file"
    elif ! cmp -s "$TMPD/src/$n" "$dst"; then
      WHY="copy differs: $(cmp "$TMPD/src/$n" "$dst" 2>&1 | head -n1)"
    fi
    if ! kill -0 "$SPID" 2>/dev/null; then
      ext_wait "$SPID"
      WHY="${WHY:+$WHY; }server died (exit $?)"
    fi
    if [ "$first" = 1 ] && [ "$prov" = shm ] && [ -n "$WHY" ] && ext_unavailable; then
      missing=$WHY
      n_skip=$((n_skip + 1))
      continue
    fi
    first=0
    [ "$n" != 0 ] || [ "$C_RC" != 22 ] || [ -n "$WHY" ] ||
      label="$label (rcopy exits 22: it cannot mmap an empty file; server survived)"
    ext_report "$label"
    [ -z "$WHY" ] || restart=1
    rm -f "$dst"
  done
  [ -z "$missing" ] || echo "SKIP: $prov: all cases: provider unavailable: $missing"
  ext_stop "$SPID"
done

ext_finish
