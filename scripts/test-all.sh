#!/usr/bin/env bash
# Builds Slipstream out of tree and runs every test: the unit and
# conformance suites and the external-program tests (make check), the real
# verbs checks in a Soft-RoCE/Soft-iWARP guest (make check-rxe), then the
# GoogleTest suites again under ASan/UBSan, on the host and in the guest.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
build=$("$top/scripts/build.sh") || exit 1

counts() {  # "pass fail skip error" from an automake test-suite.log
  awk '/^# PASS:/{p=$3} /^# FAIL:/{f=$3} /^# SKIP:/{s=$3} /^# ERROR:/{e=$3}
       END{print p+0, f+0, s+0, e+0}' "$1"
}

# digest LOG: what failed in a long log, so CI's excerpt names it: failed
# steps and tests, assertion sites, sanitizer reports, interop case failures.
digest() {
  grep -n -A6 -E '^=== .*: exit [1-9]|\[  FAILED  \]|: Failure$|ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|^FAIL[: ]|^check-rxe: FAILED' "$1" |
    head -150
}

cd "$build"
make -j"$jobs" check >/dev/null 2>&1
status=$?
[ $status -eq 0 ] || { cat test-suite.log 2>/dev/null | tail -300; }
read -r p1 f1 s1 e1 < <(counts test-suite.log)
echo "plain build: $p1 passed, $f1 failed, $s1 skipped, $e1 errors"

# Real verbs: Soft-RoCE in a qemu guest booted from Debian's kernel package
# (tests/rxe/README.md): interop with stock rdmacm-utils both ways, device
# counters, the resource manager's tests and the conformance suite on verbs.
make check-rxe >rxe.log 2>&1
rxe_status=$?
tail -5 rxe.log
if [ $rxe_status -eq 0 ]; then p1=$((p1 + 1)); else f1=$((f1 + 1)); digest rxe.log; fi

san=${SAN_BUILD_DIR:-$top/build-san}
mkdir -p "$san" && cd "$san"
[ -f Makefile ] || "$top/configure" -q --enable-sanitizers || exit 1
make -s -j"$jobs" >/dev/null || exit 1
# Only the in-process suites: a sanitized library cannot be preloaded into
# uninstrumented programs such as rstream.
ASAN_OPTIONS=detect_leaks=1 make -j"$jobs" check \
  TESTS="core_unit_tests rsocket_conformance" >/dev/null 2>&1
san_status=$?
[ $san_status -eq 0 ] || { cat test-suite.log 2>/dev/null | tail -300; }
read -r p2 f2 s2 e2 < <(counts test-suite.log)
echo "ASan/UBSan build: $p2 passed, $f2 failed, $s2 skipped, $e2 errors"

# The same build's verbs suites in the guest (rxe0 and siw0, IPv4, hostile peers).
make check-rxe-san >rxe-san.log 2>&1
rxe_san_status=$?
tail -3 rxe-san.log
if [ $rxe_san_status -eq 0 ]; then p2=$((p2 + 1)); else f2=$((f2 + 1)); digest rxe-san.log; fi

echo "$((p1 + p2)) passed, $((f1 + f2 + e1 + e2)) failed, $((s1 + s2)) skipped"
[ $status -eq 0 ] && [ $san_status -eq 0 ] && [ $rxe_status -eq 0 ] && [ $rxe_san_status -eq 0 ]
