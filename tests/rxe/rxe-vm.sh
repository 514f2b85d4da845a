#!/bin/bash
# Run a command as root inside a throw-away qemu guest that has real RDMA
# verbs: Soft-RoCE (the kernel's rdma_rxe) as rxe0 on a dummy netdev, and
# Soft-iWARP (siw) as siw0 on a second one.  The development and CI machines
# have no RDMA in their kernel; the guest boots Debian's own kernel package
# and rdma-core userspace (apt-get download), so the host needs nothing but
# qemu (installed when missing) and apt.  Debian's kernel lacks siw, so
# siw-module.sh builds siw.ko once per kernel package version (it installs
# the matching linux-headers, which bring in gcc, and downloads linux-source).
#
# usage: rxe-vm.sh [-t SECS] [-s DIR]... [-m MB] [-v] [-H] -- CMD [ARG...]
#   -t SECS  limit for the whole VM run (default 600)
#   -s DIR   host folder shared over 9p at the SAME path in the guest; may be
#            given more than once (default: the current directory).  CMD
#            starts in the current directory when a share holds it, else in
#            the first share.
#   -m MB    guest memory (default 1024)
#   -H       leave the host's /usr out.  By default it is mounted read-only
#            at /host/usr and laid under the guest's /usr (overlayfs): the
#            guest's own files win, and the host's programs and libraries
#            (GNU tools, make, python3, libraries only the host has) fill in,
#            so binaries and libtool wrappers built on the host run in place.
#   -v       verbose: progress on stderr, the guest console at the end
#
# Inside the guest CMD runs under bash as root, memlock unlimited, with
# RXE_DEV=rxe0 RXE_NETDEV=dummy0 RXE_IP=192.168.77.1 RXE_IP6=fd00:77::1
# exported (both addresses on dummy0, so on rxe0's GID table), and
# SIW_DEV=siw0 SIW_NETDEV=dummy1 SIW_IP=192.168.78.1 SIW_IP6=fd00:78::1 (on
# dummy1).  When siw.ko could not be built or siw0 does not come up, a line
# says so (on stderr, or first in CMD's output) and SIW_IP and SIW_IP6 are
# empty: tests that need siw must then fail.  CMD's output (stdout and
# stderr together) is printed as it comes.  No network leaves the guest:
# qemu has no NIC, dummy0 and dummy1 exist only inside.
#
# Exit status: CMD's; 124 when the time limit hit, 125 when the VM or the
# rxe set-up failed (the console tail is printed), 2 for bad usage.
#
# Environment: RXE_VM_CACHE (default $HOME/.cache/slipstream-rxe) holds the
# downloaded packages, the trimmed kernel and the guest initramfs (~70 MB);
# RXE_VM_ACCEL=auto|kvm|tcg (auto: kvm only when /dev/kvm opens and the CPU
# shows vmx/svm); RXE_VM_KERNEL pins the kernel package (default: what
# linux-image-amd64 depends on, remembered in the cache); RXE_VM_SIW=0 skips
# building siw.ko (no siw0 then).
set -eu -o pipefail

TIMEOUT=600 MEM=1024 VERBOSE=0 HOSTUSR=1
SHARES=()
usage() { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while getopts "t:s:m:Hvh" o; do
  case $o in
    t) TIMEOUT=$OPTARG ;; s) SHARES+=("$OPTARG") ;; m) MEM=$OPTARG ;;
    H) HOSTUSR=0 ;; v) VERBOSE=1 ;; h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { usage >&2; exit 2; }
case $TIMEOUT$MEM in *[!0-9]*) usage >&2; exit 2 ;; esac

GUEST_IP=192.168.77.1
GUEST_IP6=fd00:77::1
SIW_IP=192.168.78.1
SIW_IP6=fd00:78::1
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${RXE_VM_CACHE:-${HOME:-/root}/.cache/slipstream-rxe}
T0=$(date +%s)
log() { [ "$VERBOSE" = 0 ] || echo "rxe-vm: [$(($(date +%s) - T0))s] $*" >&2; }
die() { echo "rxe-vm: $*" >&2; exit 125; }

# Shares: absolute physical paths, duplicates and nested ones dropped.
[ ${#SHARES[@]} -gt 0 ] || SHARES=("$PWD")
mounts=()
for s in "${SHARES[@]}"; do
  s=$(cd "$s" 2>/dev/null && pwd -P) || { echo "rxe-vm: no folder $s" >&2; exit 2; }
  case $s in /|/usr|/usr/*|/lib|/lib/*|/lib64|/lib64/*|/bin|/bin/*|/sbin|/sbin/*|/etc|/etc/*|/proc*|/sys*|/dev*)
    echo "rxe-vm: cannot share $s (it would hide the guest's own files)" >&2; exit 2 ;;
  esac
  mounts+=("$s")
done
SHARES=()
for s in "${mounts[@]}"; do
  keep=1
  for t in "${mounts[@]}"; do
    case $s/ in "$t"/?*) keep=0 ;; esac   # inside another share
  done
  for t in ${SHARES[@]+"${SHARES[@]}"}; do [ "$s" != "$t" ] || keep=0; done
  [ $keep = 0 ] || SHARES+=("$s")
done
WORKDIR=${SHARES[0]}
here=$(pwd -P)
for s in "${SHARES[@]}"; do
  case $here/ in "$s"/*) WORKDIR=$here ;; esac
done

# ------------------------------------------------------------------ host
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
APT_OPTS=()
[ "$(id -u)" != 0 ] || APT_OPTS=(-o APT::Sandbox::User=root)  # no _apt warning
apt_updated=0
apt_update() {
  [ $apt_updated = 0 ] || return 0
  apt_updated=1
  log "apt-get update"
  timeout 300 $SUDO apt-get update -qq >&2 || true
}
# run an apt command; when it fails, refresh the package lists once and retry
apt_retry() {
  timeout 600 "$@" && return 0
  apt_update
  timeout 600 "$@"
}

if ! command -v qemu-system-x86_64 >/dev/null; then
  log "installing qemu-system-x86"
  apt_retry $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends qemu-system-x86 >/dev/null \
    || die "cannot install qemu-system-x86"
fi

# ----------------------------------------------------------------- cache
# debs-HASH/     the guest's userspace packages (apt-get download)
# kernel-PKG-H/  vmlinux (ELF, booted through PVH), kver, kversion (the
#                package's version), the needed modules
# siw-PKG-VER/   siw.ko built by siw-module.sh, build.log
# busybox        static busybox for depmod and cpio on the host
# initrd-HASH    uncompressed guest initramfs (rebuilt when this file changes)
PKGS=(rdma-core ibverbs-providers libibverbs1 librdmacm1 rdmacm-utils
  ibverbs-utils iproute2 busybox-static bash libtinfo6 libc6 libgcc-s1
  libstdc++6 libnl-3-200 libnl-route-3-200 libmnl0 libbsd0 libmd0 libcap2
  libelf1 libbpf1 zlib1g iperf3 libiperf0 libsctp1 libssl3 sockperf libsodium23)
# kernel modules (modprobe names) the guest loads; dependencies follow
# (siw.ko, built apart, depends on ib_core and libcrc32c; libcrc32c needs a
# crc32c provider, which busybox modprobe does not pull in as a softdep)
MODS="virtio_pci 9pnet_virtio 9p overlay crc32_generic dummy veth rdma_rxe rdma_ucm
  ib_uverbs crc32c_generic libcrc32c"
# programs whose shared libraries must all come from the guest's packages
NEED_BINS="bin/bash sbin/ip usr/bin/rdma usr/bin/ibv_devices usr/bin/ibv_devinfo
  usr/bin/ibv_rc_pingpong usr/bin/rstream usr/bin/rping
  usr/bin/iperf3 usr/lib/x86_64-linux-gnu/libiperf.so.0 usr/bin/sockperf
  usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
  usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock -w 900 9 || die "cache $CACHE stays locked"
rm -rf "$CACHE"/tmp.*   # left by a run that died while building

KPKG=${RXE_VM_KERNEL:-$(cat "$CACHE/kernel-pkg" 2>/dev/null || true)}
if [ -z "$KPKG" ]; then
  kdep() { apt-cache depends linux-image-amd64 2>/dev/null |
           awk '/Depends: linux-image-[0-9]/ {print $2; exit}' || true; }
  KPKG=$(kdep)
  [ -n "$KPKG" ] || { apt_update; KPKG=$(kdep); }
  [ -n "$KPKG" ] || die "cannot tell which kernel linux-image-amd64 means"
  echo "$KPKG" > "$CACHE/kernel-pkg"
fi

DEBS=$CACHE/debs-$(echo "${PKGS[*]}" | md5sum | cut -c1-10)
if [ ! -e "$DEBS/.done" ]; then
  log "downloading ${PKGS[*]}"
  rm -rf "$DEBS" "$CACHE"/debs-*
  mkdir -p "$DEBS"
  (cd "$DEBS" && apt_retry apt-get "${APT_OPTS[@]}" download -q "${PKGS[@]}" >/dev/null) \
    || die "apt-get download failed"
  touch "$DEBS/.done"
fi
BB=$CACHE/busybox
if [ ! -x "$BB" ]; then
  tmp=$(mktemp -d "$CACHE/tmp.XXXXXX")
  dpkg-deb -x "$DEBS"/busybox-static_*.deb "$tmp"
  mv "$tmp/bin/busybox" "$BB"
  rm -rf "$tmp"
fi

KDIR=$CACHE/kernel-$KPKG-$(echo "$MODS" | md5sum | cut -c1-6)
if [ ! -e "$KDIR/.done" ]; then
  log "downloading and trimming $KPKG"
  rm -rf "$KDIR" "$CACHE"/kernel-*/
  mkdir -p "$KDIR/x"
  (cd "$KDIR" && apt_retry apt-get "${APT_OPTS[@]}" download -q "$KPKG" >/dev/null) \
    || die "apt-get download $KPKG failed"
  dpkg-deb -x "$KDIR/${KPKG}"_*.deb "$KDIR/x"
  dpkg-deb -f "$KDIR/${KPKG}"_*.deb Version > "$KDIR/kversion"
  rm -f "$KDIR/${KPKG}"_*.deb
  KVER=$(ls "$KDIR/x/lib/modules")
  # The bzImage carries the kernel as xz; the bare ELF boots straight from
  # qemu through PVH and saves ~7 s of decompression under TCG.  Without it
  # (no PVH, no xz payload) the bzImage boots, only slower.
  cp "$KDIR/x/boot/vmlinuz-$KVER" "$KDIR/vmlinuz"
  off=$(LC_ALL=C grep -abo $'\xfd''7zXZ' "$KDIR/vmlinuz" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ] && grep -q '^CONFIG_PVH=y' "$KDIR/x/boot/config-$KVER"; then
    unxz=(xz -dcq)
    command -v xz >/dev/null || unxz=("$BB" xzcat)
    tail -c +$((off + 1)) "$KDIR/vmlinuz" | "${unxz[@]}" > "$KDIR/vmlinux" 2>/dev/null || true
    if [ "$(head -c 4 "$KDIR/vmlinux" | tail -c 3)" = ELF ]; then
      rm "$KDIR/vmlinuz"
    else
      rm -f "$KDIR/vmlinux"
    fi
  fi
  # keep MODS and their dependencies only
  MD=$KDIR/x/lib/modules/$KVER
  "$BB" depmod -b "$KDIR/x" "$KVER"
  files=$(awk -v want="$MODS" '
    BEGIN { n = split(want, w, " ") }
    { f = $1; sub(/:$/, "", f); b = f; sub(/.*\//, "", b); sub(/\.ko.*/, "", b)
      gsub(/-/, "_", b)
      for (i = 1; i <= n; i++) if (b == w[i]) { print f; for (j = 2; j <= NF; j++) print $j } }' \
    "$MD/modules.dep" | sort -u)
  for m in $MODS; do
    echo "$files" | tr - _ | grep -q "/$m\.ko" || die "module $m not in $KPKG"
  done
  for f in $files; do
    mkdir -p "$KDIR/mods/$KVER/$(dirname "$f")"
    cp "$MD/$f" "$KDIR/mods/$KVER/$f"
  done
  cp "$MD/modules.builtin" "$MD/modules.order" "$KDIR/mods/$KVER/"
  echo "$KVER" > "$KDIR/kver"
  rm -rf "$KDIR/x"
  touch "$KDIR/.done"
fi
KVER=$(cat "$KDIR/kver")

# Soft-iWARP: CONFIG_RDMA_SIW is unset in Debian 12's kernels, so siw.ko is
# built out of tree for exactly this kernel package version and cached.  A
# failure is said (always, not only with -v) but not fatal: rxe still works.
# It is tried again on the next run (the cause may be a passing apt error).
SIWKO=
if [ "${RXE_VM_SIW:-1}" != 0 ]; then
  KPVER=$(cat "$KDIR/kversion" 2>/dev/null ||
          apt-cache show --no-all-versions "$KPKG" 2>/dev/null | sed -n 's/^Version: //p' || true)
  SIWDIR=$CACHE/siw-$KPKG-$KPVER
  if [ -n "$KPVER" ] && [ ! -e "$SIWDIR/siw.ko" ]; then
    log "building siw.ko for $KPKG $KPVER (siw-module.sh)"
    rm -rf "$CACHE"/siw-*/
    mkdir -p "$SIWDIR"
    bash "$HERE/siw-module.sh" "$KVER" "$KPVER" "$SIWDIR/siw.ko" > "$SIWDIR/build.log" 2>&1 || {
      echo "rxe-vm: cannot build siw.ko (Soft-iWARP) for $KPKG $KPVER: no siw0 in the" \
        "guest, SIW_IP empty; $SIWDIR/build.log ends:"
      tail -5 "$SIWDIR/build.log" | sed 's/^/  /'
    } >&2
  fi
  [ -z "$KPVER" ] || [ ! -e "$SIWDIR/siw.ko" ] || SIWKO=$SIWDIR/siw.ko
  [ -n "$KPVER" ] ||
    echo "rxe-vm: no version known for $KPKG, so no siw.ko: no siw0 in the guest, SIW_IP empty" >&2
fi

# The guest's /init (busybox sh).  The per-run folder arrives over 9p as
# "rxerun": config (shell variables), shares (one path a line, tag shareN),
# cmd (the bash script to run), alternatives (the host's /etc/alternatives,
# for its /usr); the guest writes out (CMD's output) and rc (its exit
# status) there.  Set-up failures go to the console.
guest_init() {
  cat <<'EOF'
#!/bin/busybox sh
# busybox applets come last in PATH: they must not hide the host's tools
/bin/busybox mkdir /bb
/bin/busybox --install -s /bb
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/bb HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
up() { cut -d' ' -f1 /proc/uptime; }
fail() { echo "rxe-vm(guest): set-up failed: $*"; dmesg | tail -20; poweroff -f; }
# siw is optional: say why it is missing, on the console and first in CMD's output
siw_off() {
  echo "rxe-vm(guest): no siw0 ($*): SIW_IP and SIW_IP6 are empty" | tee -a /rxe-run/out
  dmesg | grep -i siw | tail -5
  SIW_IP= SIW_IP6=
}
echo "rxe-vm(guest): init at $(up)s"
O="-o trans=virtio,version=9p2000.L,msize=262144"
modprobe virtio_pci && modprobe 9pnet_virtio && modprobe 9p || fail "9p modules"
mkdir -p /rxe-run
mount -t 9p $O,access=any rxerun /rxe-run || fail "mount rxerun"
. /rxe-run/config
ip link set lo up
modprobe crc32_generic
for m in rdma_rxe rdma_ucm ib_uverbs; do modprobe $m || fail "modprobe $m"; done
modprobe dummy numdummies=0 || fail "modprobe dummy"
modprobe veth || fail "modprobe veth"  # the fault matrix's namespaces (tests/ext)
ip link add dummy0 type dummy || fail "add dummy0"
ip addr add "$RXE_IP/24" dev dummy0 && ip link set dummy0 up || fail "set up dummy0"
# iproute2 by path: busybox sh prefers its own applet, which lacks nodad
/bin/ip -6 addr add "$RXE_IP6/64" dev dummy0 nodad || fail "IPv6 address on dummy0"
rdma link add rxe0 type rxe netdev dummy0 || fail "rdma link add rxe0"
i=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
  i=$((i + 1)); [ $i -le 100 ] || fail "rxe0 not ACTIVE"; sleep 0.1
done
echo "rxe-vm(guest): rxe0 ACTIVE at $(up)s"
# Soft-iWARP on its own dummy1, so rxe0 and dummy0 stay as they were
if [ ! -e "/lib/modules/$(uname -r)/updates/siw.ko" ]; then
  siw_off "siw.ko is not in the initramfs: the host did not build it"
elif ! { modprobe crc32c_generic && modprobe siw; }; then
  siw_off "modprobe siw failed"
elif ! { ip link add dummy1 type dummy && ip addr add "$SIW_IP/24" dev dummy1 &&
         ip link set dummy1 up && /bin/ip -6 addr add "$SIW_IP6/64" dev dummy1 nodad; }; then
  siw_off "dummy1 set-up failed"
elif ! rdma link add siw0 type siw netdev dummy1; then
  siw_off "rdma link add siw0 failed"
else
  i=0
  until grep -q ACTIVE /sys/class/infiniband/siw0/ports/1/state 2>/dev/null; do
    i=$((i + 1)); [ $i -le 100 ] || break; sleep 0.1
  done
  if [ $i -le 100 ]; then echo "rxe-vm(guest): siw0 ACTIVE at $(up)s"; else siw_off "siw0 not ACTIVE"; fi
fi
n=0
while IFS= read -r d; do
  mkdir -p "$d" && mount -t 9p $O,access=any "share$n" "$d" || fail "mount $d"
  n=$((n + 1))
done < /rxe-run/shares
if [ "$HOSTUSR" = 1 ]; then
  # the host's /usr under the guest's own: guest files win, host ones fill in
  mkdir -p /host/usr
  mount -t 9p $O,ro,cache=loose hostusr /host/usr || fail "mount /host/usr"
  modprobe overlay && mount -t overlay -o lowerdir=/usr:/host/usr usr /usr || fail "overlay /usr"
  ln -s /rxe-run/alternatives /etc/alternatives   # awk, cc, c++...
fi
export RXE_DEV=rxe0 RXE_NETDEV=dummy0 RXE_IP RXE_IP6
export SIW_DEV=siw0 SIW_NETDEV=dummy1 SIW_IP SIW_IP6
ulimit -l unlimited
echo 1 > /proc/sys/kernel/printk
echo "rxe-vm(guest): running at $(up)s"
/bin/bash /rxe-run/cmd < /dev/null >> /rxe-run/out 2>&1
echo $? > /rxe-run/rc
echo "rxe-vm(guest): done at $(up)s"
poweroff -f
EOF
}

INITRD=$CACHE/initrd-$( (guest_init; ls "$DEBS"; [ -z "$SIWKO" ] || md5sum < "$SIWKO"
                         cd "$KDIR" && find mods | sort) | md5sum | cut -c1-10)
if [ ! -e "$INITRD" ]; then
  log "building the guest initramfs"
  R=$(mktemp -d "$CACHE/tmp.XXXXXX")
  for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$R"; done
  # every library the tools need must come from the guest's packages
  if command -v readelf >/dev/null; then
    for b in $NEED_BINS; do
      [ -e "$R/$b" ] || die "$b missing from the guest packages"
      for l in $(readelf -d "$R/$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        [ -e "$R/lib/x86_64-linux-gnu/$l" ] || [ -e "$R/usr/lib/x86_64-linux-gnu/$l" ] ||
          die "$b needs $l, which no guest package brings: add it to PKGS"
      done
    done
  fi
  rm -rf "$R"/usr/share/{doc,man,info,locale,lintian,bash-completion,zoneinfo,i18n} \
         "$R"/usr/lib/x86_64-linux-gnu/gconv "$R"/lib/systemd "$R"/lib/udev
  mkdir -p "$R"/{proc,sys,dev,tmp,run,root,etc,lib/modules}
  ln -s bash "$R/bin/sh"
  cp -a "$KDIR/mods/$KVER" "$R/lib/modules/"
  if [ -n "$SIWKO" ]; then
    mkdir -p "$R/lib/modules/$KVER/updates"
    cp "$SIWKO" "$R/lib/modules/$KVER/updates/siw.ko"
  fi
  "$BB" depmod -b "$R" "$KVER"
  echo 'root:x:0:0:root:/root:/bin/bash' > "$R/etc/passwd"
  echo 'root:x:0:' > "$R/etc/group"
  printf '127.0.0.1 localhost\n%s rxe-vm\n' "$GUEST_IP" > "$R/etc/hosts"
  guest_init > "$R/init"
  chmod 755 "$R/init"
  (cd "$R" && find . | LC_ALL=C sort | "$BB" cpio -o -H newc > "$INITRD.tmp" 2>/dev/null)
  rm -rf "$R"
  find "$CACHE" -maxdepth 1 -name 'initrd-*' ! -name "${INITRD##*/}*" -delete
  mv "$INITRD.tmp" "$INITRD"
  log "initramfs $(du -h "$INITRD" | cut -f1), cache $(du -sh "$CACHE" | cut -f1)"
fi
exec 9>&-

# --------------------------------------------------------------- one run
RUN=$(mktemp -d "${TMPDIR:-/tmp}/rxe-vm.XXXXXX")
QPID='' TPID=''
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  [ -z "$QPID" ] || { kill "$QPID" 2>/dev/null; wait "$QPID" 2>/dev/null; }
  [ -z "$TPID" ] || kill "$TPID" 2>/dev/null
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

printf 'RXE_IP=%s\nRXE_IP6=%s\nSIW_IP=%s\nSIW_IP6=%s\nHOSTUSR=%s\n' \
  "$GUEST_IP" "$GUEST_IP6" "$SIW_IP" "$SIW_IP6" "$HOSTUSR" > "$RUN/config"
printf '%s\n' "${SHARES[@]}" > "$RUN/shares"
{ printf 'cd %q || exit 125\n' "$WORKDIR"; printf '%q ' "$@"; echo; } > "$RUN/cmd"
: > "$RUN/out"
[ "$HOSTUSR" = 0 ] || cp -a /etc/alternatives "$RUN/alternatives" 2>/dev/null || true

ACCEL=${RXE_VM_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
  # /dev/kvm can exist without hardware virtualisation behind it (a nested
  # PVM hypervisor); Debian's kernel hangs there, so ask for vmx/svm too.
  ACCEL=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
    ACCEL=kvm
  fi
fi
CPU=max
[ "$ACCEL" = tcg ] || CPU=host
KERNEL=$KDIR/vmlinux
[ -e "$KERNEL" ] || KERNEL=$KDIR/vmlinuz
SMP=$(nproc)
[ "$SMP" -le 4 ] || SMP=4
Q=(qemu-system-x86_64 -accel "$ACCEL" -cpu "$CPU" -smp "$SMP" -m "$MEM"
   -nodefaults -no-user-config -display none -nic none -no-reboot
   -serial "file:$RUN/console" -kernel "$KERNEL" -initrd "$INITRD"
   -append "console=ttyS0 panic=-1 quiet loglevel=3 mitigations=off"
   -virtfs "local,path=${RUN//,/,,},mount_tag=rxerun,security_model=none")
n=0
for s in "${SHARES[@]}"; do
  Q+=(-virtfs "local,path=${s//,/,,},mount_tag=share$n,security_model=none,multidevs=remap")
  n=$((n + 1))
done
[ "$HOSTUSR" = 0 ] ||
  Q+=(-virtfs "local,path=/usr,mount_tag=hostusr,security_model=none,readonly=on,multidevs=remap")
log "accel=$ACCEL smp=$SMP mem=${MEM}M shares=${SHARES[*]} workdir=$WORKDIR"

# timeout bounds the run; setpriv kills timeout when this script dies, even
# by SIGKILL, and qemu when timeout dies, so no qemu outlives the script.
REAP=()
! setpriv --pdeathsig KILL true 2>/dev/null || REAP=(setpriv --pdeathsig KILL)
"${REAP[@]}" timeout -k 5 "$TIMEOUT" "${REAP[@]}" "${Q[@]}" < /dev/null > "$RUN/qemu.log" 2>&1 &
QPID=$!
tail -s 0.2 -n +1 -f --pid=$QPID "$RUN/out" &
TPID=$!
qrc=0
wait $QPID || qrc=$?
QPID=
wait $TPID 2>/dev/null || true
TPID=
log "qemu exited ($qrc)"
[ "$VERBOSE" = 0 ] || { echo "--- guest console"; tr -d '\r' < "$RUN/console"; } >&2

if [ -s "$RUN/rc" ]; then
  exit "$(cat "$RUN/rc")"
elif [ $qrc = 124 ] || [ $qrc = 137 ]; then
  echo "rxe-vm: timed out after ${TIMEOUT}s" >&2
  exit 124
fi
{
  echo "rxe-vm: the guest stopped without running the command (qemu exit $qrc)"
  [ "$VERBOSE" = 1 ] || { echo "--- console tail"; tr -d '\r' < "$RUN/console" | tail -30; }
  cat "$RUN/qemu.log"
} >&2
exit 125
