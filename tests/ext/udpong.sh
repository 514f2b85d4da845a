#!/bin/bash
# rdmacm-utils' udpong on Slipstream's datagram rsockets: a server
# (udpong -b) and clients (udpong -s) on loopback, both with librsocket.so
# preloaded (without it, udpong needs an RDMA device).  Latency (-T e: the
# server echoes every message) and bandwidth runs, 64 B to 1 KiB, with
# blocking (-T b), non-blocking (-T n) and rpoll (-T a) I/O, on 127.0.0.1
# and ::1.  udpong checks what it can itself (its control messages are
# request/reply with sequence numbers) and exits non-zero on an error; the
# case passes on exit 0 with its result line.  The same cases run first on
# plain kernel sockets (-T s, no preload) to validate the harness.
#
# The runs themselves: udpong_cases.sh.
#
# Run from the build directory: bash $srcdir/tests/ext/udpong.sh
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
ext_init udpong

. "$(dirname "$0")/udpong_cases.sh" || ext_hard_error "udpong_cases.sh not found"

ext_ipv6_loopback

echo "== plain kernel sockets (udpong -T s, no preload): harness sanity"
run_env_plain
udpong_family kernel 127.0.0.1 -T s
n_sanity_fail=$n_fail

echo "== datagram rsockets (librsocket.so preloaded on both ends)"
run_env_preload
udpong_family rsocket 127.0.0.1
if [ -n "$IPV6_SKIP" ]; then
  echo "SKIP: rsocket: udpong on ::1: $IPV6_SKIP"
  n_skip=$((n_skip + 1))
else
  udpong_family rsocket ::1
fi

ext_finish
