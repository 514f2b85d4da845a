#!/bin/bash
# Lists every skip in test logs, one line each: "LOG: WHAT: REASON".
#   skips.sh LOG...
# A GoogleTest case skipped (GTEST_SKIP: its "Skipped" line, the reason
# under it, then "[  SKIPPED ] NAME"), and a script's "SKIP: ..." line (a
# case or the whole script; tests/ext/common.sh). A script whose summary
# line ("N passed, N failed, N skipped") counts more skips than it named
# gets one more line saying how many went unnamed. test-all.sh counts these
# lines in its closing total.
set -u
for log in "$@"; do
  [ -f "$log" ] || continue
  awk -v lg="$log" '
    /: Skipped$/ { want = 1; reason = ""; next }
    want == 1 && !/^\[  SKIPPED \]/ { if (reason == "") reason = $0; next }
    /^\[  SKIPPED \] [^ ]+ \([0-9]+ ms\)$/ {
      printf "%s: %s: %s\n", lg, $4, (reason == "" ? "(no reason given)" : reason)
      want = 0; reason = ""; next
    }
    /^SKIP: / { named++; sub(/^SKIP: /, ""); printf "%s: script: %s\n", lg, $0; next }
    /^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { said += $5 }
    END {
      if (said > named)
        printf "%s: script: %d case(s) skipped without a SKIP line\n", lg, said - named
    }' "$log"
done
