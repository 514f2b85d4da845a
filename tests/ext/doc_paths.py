"""Every repository path the docs name exists: a file path in backquotes in
docs/*.md and the READMEs (`src/core/prov/provider.h`, `util/frame.h`
from its folder, `dup.h/.cc`), and every `*.md` a source comment names.
Paths resolve from the top, from src/, src/core/, src/core/prov/, tests/
and the naming file's folder. Prints each miss with its file and line;
exit 1 when there is one. Run by doc_paths.sh from the source tree."""
import glob
import os
import re
import sys

top = sys.argv[1]
os.chdir(top)
BASES = ["", "src", "src/core", "src/core/prov", "tests"]
EXT = re.compile(r"\.(h|cc|c|sh|py|md|mk|am|ac|map|conf|[1-8])$")
TICKED = re.compile(r"`([A-Za-z0-9_./+-]+)`")
MD_IN_COMMENT = re.compile(r"(?://|/?\*|#)[^\n]*?\b([A-Za-z0-9_./-]+\.md)\b")


def exists(path, folder):
    return any(os.path.exists(os.path.join(b, path)) for b in BASES + [folder])


def named(token):
    """The paths a backquoted token names ("dup.h/.cc": dup.h and dup.cc)."""
    token = token.rstrip(".,:;")
    if "/" not in token or token.startswith(("/", "../", "http")):
        return []
    m = re.match(r"(.*)\.(\w+)/\.(\w+)$", token)
    if m:
        return [m.group(1) + "." + m.group(2), m.group(1) + "." + m.group(3)]
    return [token] if EXT.search(token) else []


misses = []
docs = sorted(glob.glob("docs/*.md") + ["README.md"] + glob.glob("src/**/README.md", recursive=True)
              + glob.glob("tests/**/README.md", recursive=True))
for doc in docs:
    folder = os.path.dirname(doc)
    with open(doc, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in TICKED.finditer(line):
                for p in named(m.group(1)):
                    if not exists(p, folder):
                        misses.append("%s:%d: `%s`" % (doc, n, p))

sources = sorted(p for pat in ("src/**/*.[ch]", "src/**/*.cc", "tests/**/*.[ch]", "tests/**/*.cc",
                               "tests/**/*.sh", "tests/**/*.py", "tools/**/*.cc", "include/**/*.h",
                               "bench/**/*.sh", "scripts/*.sh")
                 for p in glob.glob(pat, recursive=True))
for src in sources:
    folder = os.path.dirname(src)
    with open(src, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            for m in MD_IN_COMMENT.finditer(line):
                p = m.group(1)
                if not exists(p, folder) and not exists(os.path.join("docs", p), folder):
                    misses.append("%s:%d: %s" % (src, n, p))

for m in misses:
    print("  " + m)
print("%s: %d files read, %d paths that do not exist" % ("FAIL" if misses else "PASS",
                                                          len(docs) + len(sources), len(misses)))
sys.exit(1 if misses else 0)
