#!/bin/bash
# Runs one test under a time limit, so a hang names itself instead of
# stalling the run: automake's LOG_COMPILER for every TESTS entry, and
# tests/rxe/check.sh's steps in the rxe guest.
#   [TEST_NAME=NAME] run-with-limit.sh TEST [ARG...]
# NAME is TEST's basename unless given. The limit, in seconds: NAME's entry
# in TEST_LIMITS ("name=secs ..."), else TEST_LIMIT_DEFAULT (600), times
# TEST_LIMIT_SCALE (1; sanitizer builds raise it). Past it TEST's process
# group gets SIGTERM, 10 s later SIGKILL; this prints "TIMEOUT after N s:
# NAME" and exits 1; else its last line is "run-with-limit: NAME took S s".
# Otherwise TEST's own exit status passes through (77 skip, 99 error), but
# a skip fails under SLIPSTREAM_TEST_STRICT=1.
set -u
name=${TEST_NAME:-${1##*/}}
limit=${TEST_LIMIT_DEFAULT:-600}
for kv in ${TEST_LIMITS:-}; do
  [ "${kv%%=*}" = "$name" ] && limit=${kv#*=}
done
limit=$((limit * ${TEST_LIMIT_SCALE:-1}))

# timeout(1) puts itself and the test in a process group of their own, which
# a ^C at the terminal no longer reaches: pass INT/TERM/HUP on ourselves.
# (The trap in the subshell undoes bash's SIGINT/SIGQUIT ignore for
# background jobs, so the test gets the dispositions it would have had.)
(
  trap - INT QUIT
  exec timeout -k 10 "$limit" "$@"
) &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' INT TERM HUP
while :; do
  wait $pid
  rc=$?
  kill -0 $pid 2>/dev/null || break  # else a trapped signal ended the wait
done
# 124 and 137 are also what a test killed by someone else may return.
if [ $rc = 124 -o $rc = 137 ] && [ $SECONDS -ge $limit ]; then
  echo "TIMEOUT after $limit s: $name" >&2
  exit 1
fi
# Where the test command runs as root with what it installs, a test has
# all it needs: a skip of it is a failure.
if [ $rc = 77 ] && [ "${SLIPSTREAM_TEST_STRICT:-0}" = 1 ]; then
  echo "FAIL: $name skipped where it must run (SLIPSTREAM_TEST_STRICT=1: root, the packages installed)" >&2
  rc=1
fi
# Last line of the log: the test's seconds (test-all.sh lists the slowest).
echo "run-with-limit: $name took $SECONDS s (limit $limit)" >&2
exit $rc
