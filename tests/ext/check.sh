# shellcheck shell=bash
# The PASS/FAIL bookkeeping the one-process tests in tests/ext/ share
# (sourced; not a test by itself): `check LABEL STATUS` prints the case and
# its seconds (where a script's minutes go) and counts a failure in $fails; `has FILE REGEX` is true when the file holds
# a matching line, and otherwise shows the file's last 40 lines;
# `require_root WHY TOOL...` skips the test (exit 77, said) unless it runs
# as root with every TOOL and a C compiler, then in $CC; `preload_prog
# SRC` sets up a test of one C program under librspreload. $name: the test's.
fails=0
check_at=$SECONDS
check() {  # check LABEL STATUS; [N s]: seconds since the previous check
  local took="[$((SECONDS - check_at)) s]"
  check_at=$SECONDS
  if [ "$2" = 0 ]; then echo "PASS: $1 $took"; else echo "FAIL: $1 $took"; fails=$((fails + 1)); fi
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
# preload_prog SRC: the set-up of a test that runs one C program of this
# folder under librspreload: $B (the build directory), $PRELOAD (exit 99
# when not built), $CC (skip without one), $T (a folder removed at exit,
# the background $pids killed then) and SRC built there as $T/prog.
preload_prog() {
  B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
  PRELOAD=$B/.libs/librspreload.so
  [ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
  CC=$(command -v cc || command -v gcc || command -v clang) ||
    { echo "SKIP: $name: no C compiler"; exit 77; }
  unset LD_PRELOAD SLIPSTREAM_PROVIDER
  T=$(mktemp -d "${TMPDIR:-/tmp}/ss-${name%.sh}.XXXXXX") || exit 99
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$T"' EXIT
  chmod 755 "$T"
  "$CC" -std=gnu11 -O2 -Wall -Wextra -Werror "$here/$1" -o "$T/prog" >"$T/cc.log" 2>&1 ||
    { cat "$T/cc.log"; echo "ERROR: $name: $1 did not build"; exit 99; }
}

# Statistics of librspreload (SLIPSTREAM_PRELOAD_STATS=DIR, a file per
# process). stats_of SRV DIR REGEX: the process whose pid ends a line of
# file SRV (", pid N") has a line matching REGEX.
stats_of() {
  local pid f
  pid=$(sed -n 's/.*, pid \([0-9]*\)$/\1/p' "$1")
  f=$2/rspreload.$pid
  [ -n "$pid" ] && grep -Eq -- "$3" "$f" 2>/dev/null ||
    { echo "  stats of process ${pid:-?}: $(cat "$f" 2>/dev/null)"; return 1; }
}
# stats_all DIR REGEX MIN: no process counted a kernel TCP connection, and
# at least MIN processes' lines match REGEX.
stats_all() {
  local n
  n=$(cat "$1"/rspreload.* 2>/dev/null | grep -Ec -- "$2")
  [ "$(cat "$1"/rspreload.* 2>/dev/null | grep -c 'kernel_tcp=[1-9]')" = 0 ] && [ "$n" -ge "$3" ] ||
    { echo "  statistics: $(cat "$1"/rspreload.* 2>/dev/null)"; return 1; }
}
