#!/usr/bin/env bash
# Installs the Debian 12 packages Slipstream needs to build, test and demo.
set -euo pipefail
pkgs=(
  build-essential autoconf automake libtool autoconf-archive pkgconf ccache
  clang clang-format libclang-rt-14-dev llvm-14
  libibverbs-dev librdmacm-dev liburcu-dev libmnl-dev libsodium-dev
  libxdp-dev libbpf-dev bpftool ethtool
  googletest libgtest-dev libbenchmark-dev
  rdmacm-utils iproute2 nftables procps python3 python3-scapy socat curl strace
  iperf3 redis-server redis-tools sockperf
  memcached libmemcached-tools nginx-light apache2-utils wrk postgresql
  openssh-server openssh-client
  openjdk-17-jdk-headless nodejs
)
# Servers the tests start themselves, on ports of their own: none left
# running or enabled by the install.
services=(redis-server memcached nginx postgresql ssh)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d 101: apt's maintainer scripts start no service.
  own_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
  [ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
  if [ -d /run/systemd/system ]; then
    systemctl disable --now "${services[@]}" >/dev/null 2>&1 || true
  fi
fi
