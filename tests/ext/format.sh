#!/bin/bash
# The C++ sources follow .clang-format (the top of the tree): every .cc
# and .h under src, tests, tools and bench, checked with clang-format's
# dry run; a file it would change fails the test, named. Seconds.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=format.sh
top=$(cd "$(dirname "$0")/../.." && pwd) || exit 99
command -v clang-format >/dev/null || { echo "SKIP: $name: no clang-format"; exit 77; }
cd "$top" || exit 99
[ -f .clang-format ] || { echo "ERROR: $name: no .clang-format at $top"; exit 99; }
# The tracked files in a git checkout (an in-tree build generates headers
# beside them); every file in a release tarball.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
    'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'tools/*.cc' 'tools/*.h' 'bench/*.cc' 'bench/*.h')
else
  mapfile -t files < <(find src tests tools bench \( -name '*.cc' -o -name '*.h' \) -type f | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "ERROR: $name: no sources under $top"; exit 99; }
# One clang-format for all (its start costs more than a file): each file
# it would change is named in its "error:" lines.
out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1)
status=$?
mapfile -t bad < <(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ $status -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  printf '%s\n' "$out" | head -20
  echo "ERROR: $name: clang-format failed"
  exit 99
fi
if [ ${#bad[@]} -gt 0 ]; then
  printf '%s: not formatted (clang-format -i FILE): %s\n' "$name" "${bad[@]}"
  echo "FAIL: $name: ${#bad[@]} of ${#files[@]} files"
  exit 1
fi
echo "PASS: $name: ${#files[@]} files formatted"
