#!/usr/bin/env bash
# Builds Slipstream out of tree and runs every test, in stages:
#   1. the plain build (gcc, -Werror) and `make check` there: unit and
#      conformance suites, external programs;
#   2. one clang build (-Werror, ASan/UBSan, libFuzzer's instrumentation)
#      of the whole tree, its test programs and the fuzz targets;
#   3. the real verbs checks in a Soft-RoCE/Soft-iWARP guest (make
#      check-rxe), in one boot with the sanitized build's verbs suites;
#      beside it, at a lower priority, the ThreadSanitizer build, then the
#      sanitized GoogleTest suites on the host with each libFuzzer target
#      briefly;
#   4. ThreadSanitizer over the in-process suites on shm and tcp.
# Every test binary runs under a time limit (tests/run-with-limit.sh).
# Compiles go through a compiler cache outside the clone
# (scripts/compiler-cache.sh). Each stage has a budget in seconds, for a
# fresh clone on the 2-core CI machine with an empty cache: a stage over
# it prints a warning (never a failure: the machine is shared and noisy).
# At the end: a table of the stages, every skip with its reason, and
# "N passed, N failed, N skipped" (tests passed and failed; skipped
# counts skipped cases, GoogleTest's and scripts'). Run as root, a test
# that skips as a whole fails (SLIPSTREAM_TEST_STRICT=1): root has the
# namespaces, veth and packages the tests need.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/compiler-cache.sh"
jobs=$(nproc)
[ "$(id -u)" != 0 ] || export SLIPSTREAM_TEST_STRICT=1
stage_rows=()
# Counts and the logs to search for skips go to files, so what runs in the
# background (beside the guest) counts too.
notes=$(mktemp -d "${TMPDIR:-/tmp}/test-all.XXXXXX") || exit 1
trap 'rm -rf "$notes"' EXIT
tally() { echo "$1 $2" >>"$notes/tally"; }  # tally PASSED FAILED
keep_log() { echo "$1" >>"$notes/logs"; }

# stage NAME BUDGET CMD...: runs CMD (a function below) as one stage and
# records its seconds for the closing table.
stage() {
  local name=$1 budget=$2 start=$SECONDS rc
  shift 2
  echo "=== stage: $name"
  "$@"
  rc=$?
  local secs=$((SECONDS - start)) mark=
  echo "=== stage: $name: $secs s (budget $budget)"
  if [ $secs -gt "$budget" ]; then
    mark=" OVER"
    echo "WARNING: stage '$name' took $secs s, over its budget of $budget s"
  fi
  stage_rows+=("$(printf '%-46s %6d %6d%s' "$name" $secs "$budget" "$mark")")
  return $rc
}

counts() {  # "pass fail skip error" from an automake test-suite.log
  awk '/^# PASS:/{p=$3} /^# FAIL:/{f=$3} /^# SKIP:/{s=$3} /^# ERROR:/{e=$3}
       END{print p+0, f+0, s+0, e+0}' "$1"
}

# digest LOG: what failed in a long log, so CI's excerpt names it: failed
# steps and tests, assertion sites, sanitizer reports, time limits hit,
# interop case failures.
# Kept for the closing lines too (CI's excerpt is the output's end).
digest() {
  grep -n -B4 -A6 -E '^=== .*: exit [1-9]|\[  FAILED  \]|: Failure$|ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:|TIMEOUT after|^FAIL[: ]|^check-rxe: FAILED' "$1" |
    head -150 | tee -a "$notes/failures"
}

# [TARGET=check-TESTS] check NAME [MAKE ARG...]: `make check` in the
# current build directory (or TARGET: check-TESTS runs the tests alone,
# their programs built already); prints and adds its counts, and keeps
# its logs for the skip list. A failure no test accounts for (the build)
# counts as one failed test.
check() {
  local name=$1 status p f s e log
  shift
  rm -f test-suite.log
  make -j"$jobs" "${TARGET:-check}" "$@" >/dev/null 2>&1
  status=$?
  [ $status -eq 0 ] || digest test-suite.log 2>/dev/null
  read -r p f s e < <(counts test-suite.log 2>/dev/null || echo 0 0 0 0)
  echo "$name: $p passed, $f failed, $s skipped, $e errors"
  [ $status -eq 0 ] || [ $((f + e)) -gt 0 ] || f=1
  tally "$p" $((f + e))
  for log in *.trs tests/*/*.trs; do
    [ -f "$log" ] && keep_log "$PWD/${log%.trs}.log"
  done
  # The slowest tests of the run (run-with-limit.sh's last line).
  grep -h '^run-with-limit: .* took ' *.log tests/*/*.log 2>/dev/null |
    sort -k4 -n | tail -5 | sed 's/^run-with-limit:/  slowest:/'
  return 0
}

# guest NAME TARGET [MAKE ARG...]: one make target booting the rxe guest:
# one test, and one more for the sanitized build's steps (NAME-san) when
# it ran them.
guest() {
  local name=$1 target=$2
  shift 2
  make "$target" "$@" >"$name.log" 2>&1
  local status=$? san_bad=0 other_bad=0
  grep -E '^=== .*: exit [0-9]+ \(' "$name.log"
  tail -3 "$name.log"
  keep_log "$PWD/$name.log"
  grep -qE '^=== [a-z0-9-]+-san: exit [1-9]' "$name.log" && san_bad=1
  grep -E '^=== [a-z0-9-]+: exit [1-9]' "$name.log" | grep -qv -- '-san: exit' && other_bad=1
  if grep -qE '^=== [a-z0-9-]+-san: exit' "$name.log"; then
    if [ $san_bad = 1 ]; then tally 0 1; else tally 1 0; fi
  fi
  if [ $status -eq 0 ] || { [ $san_bad = 1 ] && [ $other_bad = 0 ]; }; then
    tally 1 0
  else
    tally 0 1
  fi
  [ $status -eq 0 ] || digest "$name.log"
}

# [TARGETS="..."] variant DIR CONFIGURE_ARG...: enter build directory DIR
# (configured once with those arguments) and build it (TARGETS only, when
# given: a sanitizer run needs its test programs, not every library and
# tool); false, counted as a failed test, when configure or the build fails.
variant() {
  local dir=$1
  shift
  mkdir -p "$dir" && cd "$dir" || return 1
  # shellcheck disable=SC2086 # TARGETS is a list
  if { [ -f Makefile ] || "$top/configure" -q "$@"; } && make -s -j"$jobs" ${TARGETS:-} >/dev/null; then
    return 0
  fi
  echo "${dir##*/}: configure or build failed"
  tally 0 1
  return 1
}

plain_build() {
  build=$(CONFIGURE_FLAGS=--enable-werror "$top/scripts/build.sh") || { tally 0 1; return 1; }
}
plain_check() { cd "$build" && check "plain build (gcc, -Werror)"; }

# One clang build serves three checks that each had a build of their own:
# clang's -Werror over the whole tree, the GoogleTest suites under
# ASan/UBSan, and the libFuzzer targets (tests/fuzz: --enable-fuzzing
# instruments every object for ASan, UBSan and the fuzzer's coverage).
# -O1 with line tables: what the sanitizers need, quicker to compile.
san_dir=${SAN_BUILD_DIR:-$top/build-san}
san_tests="core_unit_tests rsocket_conformance vma_unit_tests net_netns_tests xdp_ring_tests udp_ring_tests tcp_ring_tests"
# `all` in its own make: automake's `all` builds in a sub-make, which would
# link the libraries a second time beside a top-level goal that needs them.
san_build() {
  TARGETS=all variant "$san_dir" CC=clang CXX=clang++ --enable-fuzzing \
    --enable-werror CFLAGS='-O1 -gline-tables-only' CXXFLAGS='-O1 -gline-tables-only' || return 1
  TARGETS="$san_tests fuzz" variant "$san_dir" || return 1
  echo "clang -Werror build of the whole tree: passed"
  tally 1 0
}
# Only the in-process suites: a sanitized library cannot be preloaded into
# uninstrumented programs such as rstream (the VMA face's and core/net's
# namespace suites are in-process too). check-TESTS with check_PROGRAMS
# named: check-TESTS alone would build every test program.
san_check() {
  cd "$san_dir" && ASAN_OPTIONS=detect_leaks=1 TARGET=check-TESTS check "ASan/UBSan (clang)" \
    TESTS="$san_tests" check_PROGRAMS="$san_tests" TEST_LIMIT_SCALE=3
}
# libFuzzer's smoke runs go beside those suites (a target takes one core;
# the suites mostly wait on their own timers): each target FUZZ_SMOKE_S
# seconds from its seed corpus, one count per target, one failure when a
# run cannot start.
san_suites_and_fuzz() {
  local status fuzz_pass fuzz_fail
  (cd "$san_dir" && make fuzz-smoke FUZZ_SMOKE_S=8 >fuzz-smoke.log 2>&1) &
  local fuzz_pid=$!
  san_check
  wait $fuzz_pid
  status=$?
  cd "$san_dir" || return 1
  grep '^fuzz fuzz_' fuzz-smoke.log
  fuzz_pass=$(grep -c '^fuzz fuzz_.*: PASS' fuzz-smoke.log)
  fuzz_fail=$(grep -c '^fuzz fuzz_.*: FAIL' fuzz-smoke.log)
  [ $status -eq 0 ] || [ "$fuzz_fail" -gt 0 ] || { fuzz_fail=1; tail -30 fuzz-smoke.log; }
  [ "$fuzz_fail" -eq 0 ] || digest fuzz-smoke.log
  tally "$fuzz_pass" "$fuzz_fail"
}

# Real verbs: Soft-RoCE in a qemu guest booted from Debian's kernel package
# (tests/rxe/README.md): interop with stock rdmacm-utils both ways, device
# counters, the resource manager's tests and the conformance suite on
# verbs, rxe0's IPv4 cases from the sanitized build. The interop matrix at
# the ends of its size range on both devices (RXE_SIZES_QUICK; `make
# check-rxe` alone runs every size on rxe0): the guest runs under TCG here.
rxe() {
  cd "$build" || return 1
  local san=
  [ -x "$san_dir/rsocket_conformance" ] && san=$san_dir
  guest rxe check-rxe RXE_ENV=RXE_SIZES_QUICK=1 RXE_SAN_BUILD="$san"
}

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
tsan_dir=${TSAN_BUILD_DIR:-$top/build-tsan}
tsan_tests="core_unit_tests rsocket_conformance"
tsan_build() {
  TARGETS=$tsan_tests variant "$tsan_dir" --enable-tsan CFLAGS='-O1 -g1' CXXFLAGS='-O1 -g1'
}
# Beside the guest, at a lower priority (its processors idle through its
# tests' waits): the TSan build, then the sanitizer suites with the fuzz
# runs. What these print comes after the guest's lines.
guest_and_beside() {
  local log=$build/beside-the-guest.log
  (
    renice -n 10 -p $BASHPID >/dev/null
    tsan_build && touch "$notes/tsan-built"
    [ $san_ok = 0 ] || san_suites_and_fuzz
  ) >"$log" 2>&1 &
  local pid=$!
  rxe
  wait $pid
  cat "$log"
}
tsan_check() {
  cd "$tsan_dir" || return 1
  GTEST_FILTER='-*verbs*:*Verbs*:*CapAsyncPlace*:*RiowriteLandsWhileTargetMakesNoCalls*:*ForkTest*:*DgramTest.ForkChildsCloseWakes*:CEdge.Cancel*:ServiceThreadTest.ForkChild*' \
    TSAN_OPTIONS="suppressions=$top/tests/tsan.supp die_after_fork=0" TARGET=check-TESTS \
    check "TSan (gcc)" -j1 TESTS="$tsan_tests" check_PROGRAMS="$tsan_tests" TEST_LIMIT_SCALE=3
}

# Budgets: seconds on a fresh clone with an empty compiler cache, the
# measured figure and some room (docs/status.md has the table); 3170 in all.
stage "dependencies and plain build (gcc, -Werror)" 300 plain_build || {
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
}
stage "make check (gcc)" 900 plain_check
san_ok=0
stage "sanitizer build (clang, ASan/UBSan/fuzzer)" 540 san_build && san_ok=1
stage "guest; beside it TSan build, ASan/UBSan, fuzz" 1250 guest_and_beside
[ ! -e "$notes/tsan-built" ] || stage "TSan suites" 360 tsan_check

echo
echo "stage                                          seconds budget"
printf '%s\n' "${stage_rows[@]}"
echo "total                                          $(printf '%6d %6d' $SECONDS 3600)"

# Every skip with its reason, then the reasons with their counts.
echo
list=${build:-$top}/test-all-skips.log
mapfile -t logs < <(sort -u "$notes/logs" 2>/dev/null)
bash "$top/tests/skips.sh" ${logs[@]+"${logs[@]}"} | sed -E 's|^[^:]*/||' >"$list"
skipped=$(wc -l <"$list")
echo "skipped cases ($skipped):"
cat "$list"
echo "skipped cases by reason:"
sed -E 's|^([^:]*): [^:]*: |\1: |' "$list" | sort | uniq -c | sort -rn
if [ -s "$notes/failures" ]; then
  echo
  echo "what failed (the first lines of each digest above):"
  head -60 "$notes/failures"
fi
echo
read -r passed failed < <(awk '{p += $1; f += $2} END {print p + 0, f + 0}' "$notes/tally" 2>/dev/null)
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
