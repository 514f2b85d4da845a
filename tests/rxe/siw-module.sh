#!/bin/bash
# Builds Soft-iWARP (siw.ko) out of tree for one Debian kernel package.
# Debian 12's kernels leave CONFIG_RDMA_SIW unset, so rxe-vm.sh calls this
# once per kernel package version and caches the result:
#
# usage: siw-module.sh KVER VERSION OUT.ko
#   KVER     the kernel release (6.1.0-56-amd64)
#   VERSION  the kernel package's Debian version (6.1.192-2): the source
#            and headers must be exactly that one, or vermagic and the
#            struct layouts may not match
#   OUT.ko   where the module goes (written last: it exists only when whole)
#
# Installs linux-headers-KVER=VERSION on the host (apt; make, xz-utils and
# binutils too when missing), downloads linux-source-X.Y=VERSION (~140 MB)
# into a temporary folder beside OUT.ko, unpacks drivers/infiniband/sw/siw
# only (streamed: the 140 MB .tar.xz is never written out), builds against
# the headers, then deletes everything but OUT.ko (debug info stripped,
# ~280 KB).  Progress and errors on stderr; exit 1 on failure.  Installing
# the headers may bring linux-libc-dev and linux-perf to the same version.
set -eu -o pipefail

[ $# = 3 ] || { sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
KVER=$1 VER=$2 OUT=$3
SRCPKG=linux-source-$(echo "$KVER" | cut -d. -f1,2)   # linux-source-6.1
HDRPKG=linux-headers-$KVER
say() { echo "siw-module: [${SECONDS}s] $*" >&2; }

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
APT_OPTS=()
[ "$(id -u)" != 0 ] || APT_OPTS=(-o APT::Sandbox::User=root)  # no _apt warning
# run an apt command; when it fails, refresh the package lists once and retry
apt_retry() {
  timeout 900 "$@" && return 0
  say "apt failed; apt-get update and once more"
  timeout 300 $SUDO apt-get update -qq >&2 || true
  timeout 900 "$@"
}

T=$(mktemp -d "$(dirname "$OUT")/tmp.XXXXXX")
trap 'rm -rf "$T"' EXIT

# the headers (they bring gcc), and the few tools used here when missing
want=()
[ "$(dpkg-query -W -f='${Status} ${Version}' "$HDRPKG" 2>/dev/null)" = "install ok installed $VER" ] ||
  want+=("$HDRPKG=$VER")
command -v make >/dev/null || want+=(make)
command -v xz >/dev/null || want+=(xz-utils)
command -v strings >/dev/null || want+=(binutils)
if [ ${#want[@]} -gt 0 ]; then
  say "installing ${want[*]}"
  apt_retry $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${want[@]}" >&2
fi
HDR=/usr/src/linux-headers-$KVER
[ -e "$HDR/Makefile" ] || { say "no $HDR/Makefile after installing $HDRPKG"; exit 1; }

say "downloading $SRCPKG=$VER"
(cd "$T" && apt_retry apt-get "${APT_OPTS[@]}" download -q "$SRCPKG=$VER" >&2)
deb=$(ls "$T/${SRCPKG}"_*.deb)
say "unpacking drivers/infiniband/sw/siw from $(du -h "$deb" | cut -f1) $SRCPKG"
mkdir "$T/src"
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "./usr/src/$SRCPKG.tar.xz" | xz -dc |
  tar -xf - -C "$T/src" --wildcards '*/drivers/infiniband/sw/siw/*'
rm -f "$deb"
SRC=$(echo "$T"/src/*/drivers/infiniband/sw/siw)
[ -e "$SRC/siw_main.c" ] || { say "no siw sources in $SRCPKG"; exit 1; }

# The tree's own Makefile (obj-$(CONFIG_RDMA_SIW) += siw.o, siw-y := ...)
# builds it once CONFIG_RDMA_SIW=m is given on the command line.
say "building siw.ko against $HDR"
make -C "$HDR" M="$SRC" CONFIG_RDMA_SIW=m -j"$(nproc)" modules >&2
magic=$(modinfo -F vermagic "$SRC/siw.ko" 2>/dev/null || strings "$SRC/siw.ko" | sed -n 's/^vermagic=//p')
case $magic in
  "$KVER "*) ;;
  *) say "siw.ko has vermagic '$magic', not $KVER"; exit 1 ;;
esac
cp "$SRC/siw.ko" "$OUT.tmp"
# 5 MB of debug info otherwise, in an uncompressed initramfs (Debian strips too)
! command -v strip >/dev/null || strip --strip-debug "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
say "built $OUT ($(du -h "$OUT" | cut -f1))"
