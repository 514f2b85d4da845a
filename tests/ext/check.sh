# shellcheck shell=bash
# The PASS/FAIL bookkeeping the one-process tests in tests/ext/ share
# (sourced; not a test by itself): `check LABEL STATUS` prints the case and
# counts a failure in $fails; `has FILE REGEX` is true when the file holds
# a matching line, and otherwise shows the file's last 40 lines;
# `require_root WHY TOOL...` skips the test (exit 77, said) unless it runs
# as root with every TOOL and a C compiler, then in $CC. $name: the test's.
fails=0
check() {  # check LABEL STATUS
  if [ "$2" = 0 ]; then echo "PASS: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
require_root() {  # require_root WHY TOOL...
  [ "$(id -u)" = 0 ] || { echo "SKIP: $name: needs root for $1"; exit 77; }
  shift
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null || { echo "SKIP: $name: $p not found"; exit 77; }
  done
  CC=$(command -v cc || command -v gcc || command -v clang) ||
    { echo "SKIP: $name: no C compiler"; exit 77; }
}
has() {  # has FILE REGEX: the line is there
  grep -Eq -- "$2" "$1" || { echo "  missing /$2/ in:"; sed 's/^/    /' "$1" | tail -40; return 1; }
}
