#!/bin/bash
# The fault matrix (docs/status.md, issue 31): faults (a peer killed,
# stopped, closing with unread data, its namespace deleted, the route to it
# removed; this process out of descriptors or address space; a signal in
# each blocking call, a thread cancelled in one) against each way a
# program reaches a connection: Linux's TCP and UDP (the reference), the
# rsocket API on shm and tcp (streams and datagrams), librspreload.so
# (TCP; its UDP is the kernel's), libvma.so's TCP and UDP.
# tests/ext/fault_prog.c is every cell's program, built twice (socket
# calls; upstream's <rdma/rsocket.h> calls); fault_matrix.py runs the
# cells in namespaces it makes and removes, prints the matrix and fails
# on any FAIL cell. Needs root
# (exit 77 otherwise). FAULT_ROWS/FAULT_COLS (comma lists) run a part;
# FAULT_VERBS_IP runs the verbs column (an RDMA device's address).
# Its minutes: about 3 (some 175 cells of 0.3-3 s: each fault waits for
# its call to block, polls time out after 1-2 s; the route case waits for
# TCP's retransmission).
#
# Run from the build directory: bash $srcdir/tests/ext/fault_matrix.sh
set -u
name=fault_matrix.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
for f in librsocket.so librspreload.so libvma.so; do
  [ -e "$B/.libs/$f" ] || { echo "ERROR: $name: $B/.libs/$f not built"; exit 99; }
done
. "$here/check.sh"
require_root namespaces ip ethtool python3
[ -e /usr/include/rdma/rsocket.h ] ||
  { echo "SKIP: $name: no <rdma/rsocket.h> (librdmacm-dev; scripts/install-deps.sh)"; exit 77; }
unset LD_PRELOAD VMA_TRACELEVEL SLIPSTREAM_PROVIDER
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-fault.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
"$CC" -std=gnu11 -O2 -pthread -Wall -Wextra -Werror -I"$here" "$here/fault_prog.c" -o "$T/plain" \
  >"$T/cc.log" 2>&1 &&
  "$CC" -std=gnu11 -O2 -pthread -Wall -Wextra -Werror -DFAULT_RSOCKET -I"$here" "$here/fault_prog.c" \
    -o "$T/rs" -lrdmacm >>"$T/cc.log" 2>&1 ||
  { cat "$T/cc.log"; echo "ERROR: $name: fault_prog.c did not build"; exit 99; }
# A whole run records the kernel's answers for the guest's verbs column
# (tests/rxe/check.sh reads them: the kernel column runs once).
[ -n "${FAULT_ROWS:-}${FAULT_COLS:-}" ] ||
  export FAULT_REFERENCE_SAVE=${FAULT_REFERENCE_SAVE:-$B/fault_matrix.reference.json}
python3 "$here/fault_matrix.py" "$B" "$T/plain" "$T/rs" "$T" "${FAULT_ROWS:-}" "${FAULT_COLS:-}"
