#!/bin/bash
# Every repository path the docs and READMEs name, and every .md a source
# comment names, exists (tests/ext/doc_paths.py). Under a second.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 99
command -v python3 >/dev/null || { echo "SKIP: doc_paths.sh: no python3"; exit 77; }
python3 "$here/doc_paths.py" "$here/../.."
