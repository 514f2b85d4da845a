#!/bin/bash
# The layer rule of docs/architecture.md, checked on every #include "..."
# under src/: inside core a layer includes only itself and the layers
# drawn below it (net > prov > res > mem > base); core includes nothing
# above it; each face (librsocket, libvmacompat) and src/interpose
# includes core and itself; each preload includes src/interpose, its own
# face and core (never the other preload or face). A line that breaks it
# fails the test, named with its file and line. Under a second.
# Automake exit codes: 0 pass, 1 fail, 99 hard error.
set -u
name=layers.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
src=$(cd "$here/../../src" && pwd) || exit 99

# One awk pass over every quoted #include: a layer per path below src/,
# and the rule between them.
out=$(cd "$src" && grep -rn --include='*.h' --include='*.cc' --include='*.c' \
  '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' . | awk '
  function layer(p) {
    sub(/^\.\//, "", p)
    if (p ~ /^core\/(base|mem|res|prov|net)\//) { split(p, a, "/"); return "core/" a[2] }
    if (p ~ /^core\//) return "core"
    if (p ~ /^(librsocket|libvmacompat|interpose|preload|vma_preload)\//) { split(p, a, "/"); return a[1] }
    return "other"
  }
  function rank(l) { return l == "core/base" ? 1 : l == "core/mem" ? 2 : l == "core/res" ? 3 : l == "core/prov" ? 4 : l == "core/net" ? 5 : 0 }
  function allowed(from, to) {
    if (from == to || to == "other" || from == "other") return 1
    if (from ~ /^core\//) return to == "core" || (rank(to) > 0 && rank(to) < rank(from))
    if (from == "core") return to ~ /^core\//
    if (from == "librsocket" || from == "libvmacompat" || from == "interpose") return to ~ /^core/
    if (from == "preload") return to ~ /^core/ || to == "interpose" || to == "librsocket"
    if (from == "vma_preload") return to ~ /^core/ || to == "interpose" || to == "libvmacompat"
    return 1
  }
  {
    file = $0; sub(/:.*/, "", file)
    rest = substr($0, length(file) + 2); line = rest; sub(/:.*/, "", line)
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    files[file] = 1
    from = layer(file); to = layer(inc)
    if (!allowed(from, to)) { sub(/^\.\//, "", file); printf "  src/%s:%s: includes \"%s\" (%s may not include %s)\n", file, line, inc, from, to; bad++ }
  }
  END { n = 0; for (f in files) n++; printf "files %d bad %d\n", n, bad + 0 }')
echo "$out" | grep -v '^files '
read -r _ files _ bad < <(echo "$out" | grep '^files ')
[ "$files" -gt 100 ] || { echo "ERROR: $name: only $files files with includes found under $src"; exit 99; }
if [ "$bad" = 0 ]; then
  echo "PASS: every #include of $files files under src/ keeps the layer rule"
  exit 0
fi
echo "FAIL: $bad #include lines break the layer rule (docs/architecture.md)"
exit 1
