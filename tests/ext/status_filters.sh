#!/bin/bash
# Every GoogleTest filter docs/status.md names selects tests: each
# `BINARY --gtest_filter='A:B'` there, each positive pattern on its own,
# lists at least one test of the built BINARY (a pattern that matches
# nothing would make its row's command pass with no test run). A binary
# this build lacks (the ring suites without libxdp) skips its rows, named.
# Seconds. Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=status_filters.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
doc=$here/../../docs/status.md
[ -f "$doc" ] || { echo "ERROR: $name: no $doc"; exit 99; }
mapfile -t cmds < <(grep -oE "[A-Za-z_]+ --gtest_filter='[^']+'" "$doc" | sort -u)
[ ${#cmds[@]} -gt 0 ] || { echo "ERROR: $name: no filter in $doc"; exit 99; }
bad=0 checked=0 missing=0
for c in "${cmds[@]}"; do
  bin=${c%% *}
  filter=${c#*=\'}
  filter=${filter%\'}
  if [ ! -x "$B/$bin" ]; then
    echo "not built here: $bin (its rows not checked)"
    missing=$((missing + 1))
    continue
  fi
  IFS=: read -r -a pats <<<"${filter%%-*}"
  for p in "${pats[@]}"; do
    [ -n "$p" ] || continue
    n=$("$B/$bin" --gtest_list_tests --gtest_filter="$p" 2>/dev/null | grep -c '^  ')
    checked=$((checked + 1))
    if [ "$n" -eq 0 ]; then
      echo "FAIL: $name: $bin --gtest_filter='$p' matches no test (docs/status.md)"
      bad=$((bad + 1))
    fi
  done
done
[ $bad -eq 0 ] || exit 1
[ $checked -gt 0 ] || { echo "SKIP: $name: none of the binaries is built"; exit 77; }
echo "PASS: $name: $checked patterns of ${#cmds[@]} commands each select a test ($missing binaries not built)"
