# shellcheck shell=bash
# The PASS/FAIL bookkeeping the one-process tests in tests/ext/ share
# (sourced; not a test by itself): `check LABEL STATUS` prints the case and
# counts a failure in $fails; `has FILE REGEX` is true when the file holds
# a matching line, and otherwise shows the file's last 40 lines.
fails=0
check() {  # check LABEL STATUS
  if [ "$2" = 0 ]; then echo "PASS: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
has() {  # has FILE REGEX: the line is there
  grep -Eq -- "$2" "$1" || { echo "  missing /$2/ in:"; sed 's/^/    /' "$1" | tail -40; return 1; }
}
