#!/bin/bash
# `make check-rxe`'s guest side: every real-verbs check in ONE boot (a boot
# costs 10-20 s under TCG).  Runs INSIDE the rxe guest:
#   tests/rxe/rxe-vm.sh -s BUILD -s SRC -- bash SRC/tests/rxe/check.sh BUILD
# Steps: smoke.sh (the guest has real verbs), interop.sh (stock rdmacm-utils
# against ours), preload.sh (librspreload on verbs, upstream's on the other
# end, fallback), apps.sh (iperf3 and sockperf, ours against upstream's
# librspreload), udpong.sh (udpong ours:ours on datagram rsockets), the
# fault matrix's verbs column (tests/ext/fault_matrix.sh), the
# verbs resource manager's unit tests and the rsocket conformance suite on
# verbs (IPv4 and IPv6, plus hostile rdma_cm peers),
# all on rxe0 (RoCE); then interop and conformance again on siw0 (iWARP).
# Each step's output comes as it runs, then "=== STEP: exit N (S s)"; exits
# 1 when a step failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:?usage: check.sh BUILD_DIR}" && pwd) || exit 2
failed=()

# step NAME SECS CMD... : run one step under a limit of SECS (run-with-limit.sh:
# a hang fails as "TIMEOUT after SECS s: NAME", inside the VM's own limit),
# time it, remember a failure.
step() {
  local name=$1 secs=$2 t0=$SECONDS rc
  shift 2
  echo "=== $name"
  TEST_NAME=$name TEST_LIMIT_DEFAULT=$secs TEST_LIMITS= TEST_LIMIT_SCALE=1 \
    bash "$HERE/../run-with-limit.sh" "$@"
  rc=$?
  echo "=== $name: exit $rc ($((SECONDS - t0)) s)"
  [ $rc = 0 ] || failed+=("$name")
}

# RXE_CHECK_SUITES_ONLY=1: the GoogleTest suites only (check-rxe-san runs
# the sanitizer build so: rdmacm-utils cannot preload a sanitized library);
# RXE_CONFORMANCE_FILTER narrows the conformance steps.
FILTER=${RXE_CONFORMANCE_FILTER:-*verbs*:VerbsHostile*}
# On verbs an address family reaches only the connection's set-up
# (rdma_cm's resolution, the GID): once connected, the same QP code moves
# the data. So IPv6 runs the fixtures about addresses and connections, and
# the data-path fixtures run on IPv4 alone; RXE_V6_ALL=1 runs them all.
V6_DATA_PATH=
if [ "${RXE_V6_ALL:-0}" != 1 ]; then
  for f in DataTest LifecycleTest LimitsTest SignalTest PollTest KeepaliveTest ForkTest IomapTest; do
    V6_DATA_PATH+="${V6_DATA_PATH:+:}*/$f.*/verbs_v6"
  done
fi
# conformance_filter [EXCLUDED] : FILTER less V6_DATA_PATH and EXCLUDED.
conformance_filter() {
  local neg=$V6_DATA_PATH${1:+${V6_DATA_PATH:+:}$1}
  echo "$FILTER${neg:+-$neg}"
}
if [ "${RXE_CHECK_SUITES_ONLY:-0}" != 1 ]; then
  step smoke 180 bash "$HERE/smoke.sh"
  step interop 900 bash "$HERE/interop.sh" "$BUILD"
  step preload 300 bash "$HERE/preload.sh" "$BUILD"
  step apps 300 bash "$HERE/apps.sh" "$BUILD"
  step udpong 240 bash "$HERE/udpong.sh" "$BUILD"
  # The fault matrix's verbs columns, both ends on rxe0, against the
  # kernel's answers the host's run recorded (else the kernel's here).
  step fault-matrix 600 env CC="${CC:-gcc}" FAULT_COLS=verbs,rsd-verbs FAULT_VERBS_IP="$RXE_IP" \
    FAULT_REFERENCE="$BUILD/fault_matrix.reference.json" top_builddir="$BUILD" \
    bash "$HERE/../ext/fault_matrix.sh"
fi

# The GoogleTest suites on real verbs: a missing device or address fails
# here instead of skipping (RS_CONFORMANCE_REQUIRE, SLIPSTREAM_TEST_REQUIRE_VERBS).
for t in core_unit_tests rsocket_conformance; do
  [ -x "$BUILD/$t" ] || { echo "=== $t: missing ($BUILD/$t: make check builds it)"; failed+=("$t"); }
done
# RXE_SAN_BUILD (a build configured with --enable-sanitizers): the resource
# manager's tests and rxe0's IPv4 conformance cases and hostile peers run
# from it, under ASan/UBSan, instead of from BUILD (one boot for both; the
# same cases are not run twice).
SAN=${RXE_SAN_BUILD:-}
if [ -n "$SAN" ]; then
  SAN=$(cd "$SAN" && pwd) || { echo "=== san: no folder $RXE_SAN_BUILD"; exit 1; }
  for t in core_unit_tests rsocket_conformance; do
    [ -x "$SAN/$t" ] || { echo "=== $t: missing in $SAN"; failed+=("$t-san"); }
  done
fi
if [ -x "$BUILD/core_unit_tests" ]; then
  [ -n "$SAN" ] ||
    step res 180 env SLIPSTREAM_TEST_REQUIRE_VERBS=1 "$BUILD/core_unit_tests" --gtest_filter='VerbsRes*'
  step res-fork-safe 180 env SLIPSTREAM_TEST_REQUIRE_VERBS=1 RDMAV_FORK_SAFE=1 \
    "$BUILD/core_unit_tests" --gtest_filter='VerbsRes*'
fi
[ -z "$SAN" ] || [ ! -x "$SAN/core_unit_tests" ] ||
  step res-san 300 env ASAN_OPTIONS=detect_leaks=1 SLIPSTREAM_TEST_REQUIRE_VERBS=1 \
    "$SAN/core_unit_tests" --gtest_filter='VerbsRes*'
if [ -x "$BUILD/rsocket_conformance" ]; then
  plain_filter=$(conformance_filter)
  [ -z "$SAN" ] || plain_filter=$(conformance_filter '*verbs_v4*:VerbsHostile*')
  step conformance 900 env RS_CONFORMANCE_REQUIRE=verbs RS_CONFORMANCE_VERBS_ADDR4="$RXE_IP" \
    RS_CONFORMANCE_VERBS_ADDR6="${RXE_IP6:-}" \
    "$BUILD/rsocket_conformance" --gtest_filter="$plain_filter"
fi
[ -z "$SAN" ] || [ ! -x "$SAN/rsocket_conformance" ] ||
  step conformance-san 900 env ASAN_OPTIONS=detect_leaks=1 RS_CONFORMANCE_REQUIRE=verbs \
    RS_CONFORMANCE_VERBS_ADDR4="$RXE_IP" RS_CONFORMANCE_VERBS_ADDR6="${RXE_IP6:-}" \
    "$SAN/rsocket_conformance" --gtest_filter='*verbs_v4*:VerbsHostile*'

# The iWARP variant (write + 4-byte send) on Soft-iWARP: the same interop
# matrix and conformance suite over siw0's addresses.  rxe-vm.sh leaves
# SIW_IP empty when siw0 could not be made: that fails here.
# RXE_CHECK_SIW=0 leaves siw0 out (check-rxe-san: the sanitizers over the
# verbs code once, on rxe0).
if [ "${RXE_CHECK_SIW:-1}" = 0 ]; then
  echo "=== siw: left out (RXE_CHECK_SIW=0)"
elif [ -z "${SIW_IP:-}" ]; then
  echo "=== siw: no siw0 in this guest (rxe-vm.sh said why, above)"
  failed+=(siw)
else
  [ "${RXE_CHECK_SUITES_ONLY:-0}" = 1 ] ||
    step siw-interop 600 env RXE_IP="$SIW_IP" RXE_IP6="${SIW_IP6:-}" RXE_DEV="$SIW_DEV" \
      RXE_NETDEV="$SIW_NETDEV" RXE_SIZES_QUICK=1 bash "$HERE/interop.sh" "$BUILD"
  if [ -x "$BUILD/rsocket_conformance" ]; then
    step siw-conformance 900 env RS_CONFORMANCE_REQUIRE=verbs RS_CONFORMANCE_VERBS_ADDR4="$SIW_IP" \
      RS_CONFORMANCE_VERBS_ADDR6="${SIW_IP6:-}" \
      "$BUILD/rsocket_conformance" --gtest_filter="$(conformance_filter)"
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "check-rxe: FAILED: ${failed[*]}"
  exit 1
fi
echo "check-rxe: all steps passed"
