#!/usr/bin/env bash
# The main job: builds Slipstream and runs a client/server exchange over
# kernel TCP, rsocket/shm and rsocket/tcp, printing latency, bandwidth and
# the ratio to kernel TCP.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$("$top/scripts/build.sh")
exec "$build/tools/slipstream-demo" "$@"
