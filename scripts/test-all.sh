#!/usr/bin/env bash
# Builds Slipstream out of tree and runs every test: the unit and
# conformance suites and the external-program tests (make check, gcc with
# -Werror), the real verbs checks in a Soft-RoCE/Soft-iWARP guest (make
# check-rxe), the whole tree with clang -Werror and its unit tests, the
# GoogleTest suites under ASan/UBSan on the host and in the guest, under
# ThreadSanitizer on shm and tcp, and each libFuzzer target briefly. Every
# test binary runs under a time limit (tests/run-with-limit.sh). Last line:
# "N passed, N failed, N skipped".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
build=$(CONFIGURE_FLAGS=--enable-werror "$top/scripts/build.sh") || exit 1
echo "dependencies and plain build: $SECONDS s"
passed=0 failed=0 skipped=0

counts() {  # "pass fail skip error" from an automake test-suite.log
  awk '/^# PASS:/{p=$3} /^# FAIL:/{f=$3} /^# SKIP:/{s=$3} /^# ERROR:/{e=$3}
       END{print p+0, f+0, s+0, e+0}' "$1"
}

# digest LOG: what failed in a long log, so CI's excerpt names it: failed
# steps and tests, assertion sites, sanitizer reports, time limits hit,
# interop case failures.
digest() {
  grep -n -A6 -E '^=== .*: exit [1-9]|\[  FAILED  \]|: Failure$|ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:|TIMEOUT after|^FAIL[: ]|^check-rxe: FAILED' "$1" |
    head -150
}

# [TARGET=check-TESTS] check NAME [MAKE ARG...]: `make check` in the
# current build directory (or TARGET: check-TESTS runs the tests alone,
# their programs built already); prints and adds its counts. A failure no
# test accounts for (the build) counts as one failed test.
check() {
  local name=$1 status p f s e start=$SECONDS
  shift
  rm -f test-suite.log
  make -j"$jobs" "${TARGET:-check}" "$@" >/dev/null 2>&1
  status=$?
  [ $status -eq 0 ] || { tail -300 test-suite.log 2>/dev/null; }
  read -r p f s e < <(counts test-suite.log 2>/dev/null || echo 0 0 0 0)
  echo "$name: $p passed, $f failed, $s skipped, $e errors ($((SECONDS - start)) s)"
  [ $status -eq 0 ] || [ $((f + e)) -gt 0 ] || f=1
  passed=$((passed + p)) failed=$((failed + f + e)) skipped=$((skipped + s))
}

# guest NAME TARGET [MAKE ARG...]: one make target booting the rxe guest,
# one test.
guest() {
  local name=$1 target=$2 start=$SECONDS
  shift 2
  make "$target" "$@" >"$name.log" 2>&1
  local status=$?
  tail -5 "$name.log"
  echo "$target: $((SECONDS - start)) s"
  if [ $status -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    digest "$name.log"
  fi
}

# [TARGETS="..."] variant DIR CONFIGURE_ARG...: enter build directory DIR
# (configured once with those arguments) and build it (TARGETS only, when
# given: a sanitizer run needs its test programs, not every library and
# tool); false, counted as a failed test, when configure or the build fails.
variant() {
  local dir=$1 start=$SECONDS
  shift
  mkdir -p "$dir" && cd "$dir" || return 1
  # shellcheck disable=SC2086 # TARGETS is a list
  if { [ -f Makefile ] || "$top/configure" -q "$@"; } && make -s -j"$jobs" ${TARGETS:-} >/dev/null; then
    echo "${dir##*/}: built in $((SECONDS - start)) s"
    return 0
  fi
  echo "${dir##*/}: configure or build failed"
  failed=$((failed + 1))
  return 1
}

cd "$build"
check "plain build (gcc, -Werror)"

# Real verbs: Soft-RoCE in a qemu guest booted from Debian's kernel package
# (tests/rxe/README.md): interop with stock rdmacm-utils both ways, device
# counters, the resource manager's tests and the conformance suite on verbs.
# The interop matrix at the ends of its size range on both devices
# (RXE_SIZES_QUICK; `make check-rxe` alone runs every size on rxe0): the
# guest runs under TCG here, and CI's time is 90 minutes.
guest rxe check-rxe RXE_ENV=RXE_SIZES_QUICK=1

# clang 14 with -Werror: the whole tree, test binaries included, and the
# unit tests.
if variant "${CLANG_BUILD_DIR:-$top/build-clang}" CC=clang CXX=clang++ --enable-werror; then
  check "clang build (-Werror)" TESTS=core_unit_tests check_PROGRAMS=core_unit_tests
fi

# libFuzzer (tests/fuzz): `make fuzz-smoke` configures and builds
# fuzz-build (clang, ASan/UBSan) and runs each parser's target for
# FUZZ_SMOKE_S seconds from its seed corpus; one count per target, and one
# failure when the build fails.
cd "$build"
fuzz_start=$SECONDS
make fuzz-smoke FUZZ_SMOKE_S=8 >fuzz-smoke.log 2>&1
fuzz_status=$?
echo "fuzz-smoke (build and runs): $((SECONDS - fuzz_start)) s"
grep '^fuzz fuzz_' fuzz-smoke.log
fuzz_pass=$(grep -c '^fuzz fuzz_.*: PASS' fuzz-smoke.log)
fuzz_fail=$(grep -c '^fuzz fuzz_.*: FAIL' fuzz-smoke.log)
[ $fuzz_status -eq 0 ] || [ "$fuzz_fail" -gt 0 ] || { fuzz_fail=1; tail -30 fuzz-smoke.log; }
[ "$fuzz_fail" -eq 0 ] || digest fuzz-smoke.log
passed=$((passed + fuzz_pass)) failed=$((failed + fuzz_fail))

# ASan/UBSan. Only the in-process suites: a sanitized library cannot be
# preloaded into uninstrumented programs such as rstream (the VMA face's
# and core/net's namespace suites are in-process too). Then the same
# build's verbs suites in the guest (rxe0 and siw0, IPv4, hostile peers).
# Only the programs a run uses are built (TARGETS, then check-TESTS with
# check_PROGRAMS named: check-TESTS alone still builds every one):
# building the whole tree and every test program under each sanitizer
# cost more CI time than running them.
san_tests="core_unit_tests rsocket_conformance vma_unit_tests net_netns_tests xdp_ring_tests udp_ring_tests"
if TARGETS=$san_tests variant "${SAN_BUILD_DIR:-$top/build-san}" --enable-sanitizers; then
  ASAN_OPTIONS=detect_leaks=1 TARGET=check-TESTS check "ASan/UBSan build" \
    TESTS="$san_tests" check_PROGRAMS="$san_tests" TEST_LIMIT_SCALE=3
  guest rxe-san check-rxe-san
fi

# ThreadSanitizer: the in-process suites on shm and tcp (verbs cases need
# the guest), one binary at a time (-j1: the tests that measure a spinning
# thread's CPU share need a core under TSan's slowdown). Left out: two
# tests that read memory a provider thread places data into with no
# synchronisation, as the target of an RDMA write does (CapAsyncPlace,
# RiowriteLandsWhileTargetMakesNoCalls): in C++ terms each such read is a
# race, by design. Also left out: the tests whose fork child starts threads
# (fork tests, cancellation, the service thread's fork case): TSan aborts
# there ("dup thread with used id": glibc reuses a dead thread's id), and
# die_after_fork=0 lets the other fork children run. tests/tsan.supp says
# what else is suppressed, and why.
tsan_tests="core_unit_tests rsocket_conformance"
if TARGETS=$tsan_tests variant "${TSAN_BUILD_DIR:-$top/build-tsan}" --enable-tsan; then
  GTEST_FILTER='-*verbs*:*Verbs*:*CapAsyncPlace*:*RiowriteLandsWhileTargetMakesNoCalls*:*ForkTest*:*DgramTest.ForkChildsCloseWakes*:CEdge.Cancel*:ServiceThreadTest.ForkChild*' \
    TSAN_OPTIONS="suppressions=$top/tests/tsan.supp die_after_fork=0" TARGET=check-TESTS \
    check "TSan build" -j1 TESTS="$tsan_tests" check_PROGRAMS="$tsan_tests" TEST_LIMIT_SCALE=3
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
