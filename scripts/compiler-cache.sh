# Sourced by build.sh and test-all.sh (after they set $top): every compile
# goes through Debian's ccache when it is installed, its cache outside the
# clone, so a later run on the same machine, from any clone in any folder,
# rebuilds from it. Paths are hashed relative to the clone (CCACHE_BASEDIR,
# CCACHE_NOHASHDIR) for that. A miss, or no cache at all, only costs the
# compile: without a writable cache folder ccache is left out.
if command -v ccache >/dev/null && [ -d /usr/lib/ccache ]; then
  : "${CCACHE_DIR:=/var/cache/slipstream-ccache}"
  if mkdir -p "$CCACHE_DIR" 2>/dev/null && [ -w "$CCACHE_DIR" ]; then
    export CCACHE_DIR CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
    export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
    case ":$PATH:" in *:/usr/lib/ccache:*) ;; *) export PATH="/usr/lib/ccache:$PATH" ;; esac
  fi
fi
