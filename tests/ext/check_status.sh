#!/bin/bash
# The tests' `check LABEL $?` idiom: bash sets $? from the last command
# substitution of the same command, so a label that runs one, as in
# check "N=$(count)" $?, hands check that substitution's status and the
# case can never fail. Every line ending in $? that runs a substitution
# under tests/, bench/ and scripts/ fails the test, named with its file
# and line ($((...)) arithmetic sets no status and is allowed). Seconds.
# Automake exit codes: 0 pass, 1 fail, 99 hard error.
set -u
name=check_status.sh
top=$(cd "$(dirname "$0")/../.." && pwd) || exit 99
cd "$top" || exit 99
mapfile -t files < <(find tests bench scripts -name '*.sh' -type f | sort)
[ ${#files[@]} -gt 0 ] || { echo "ERROR: $name: no scripts under $top"; exit 99; }
# Arithmetic first, then any $( left is a command substitution.
mapfile -t bad < <(grep -nE '\$\?[[:space:]]*$' "${files[@]}" |
  sed 's/\$((/ARITH(/g' | grep -E '\$\(' | cut -d: -f1,2)
if [ ${#bad[@]} -gt 0 ]; then
  echo "$name: a substitution sets the \$? these lines pass on:"
  printf '  %s\n' "${bad[@]}"
  echo "FAIL: $name: ${#bad[@]} line(s) in ${#files[@]} scripts"
  exit 1
fi
echo "PASS: $name: ${#files[@]} scripts, no status taken from a label's substitution"
