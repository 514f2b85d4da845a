#!/usr/bin/env bash
# Installs the Debian 12 packages Slipstream needs to build, test and demo.
set -euo pipefail
pkgs=(
  build-essential autoconf automake libtool autoconf-archive pkgconf
  clang libclang-rt-14-dev llvm-14
  libibverbs-dev librdmacm-dev liburcu-dev libmnl-dev
  libxdp-dev libbpf-dev bpftool ethtool
  googletest libgtest-dev libbenchmark-dev
  rdmacm-utils iproute2 procps python3 socat curl strace
  iperf3 redis-server redis-tools sockperf
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
