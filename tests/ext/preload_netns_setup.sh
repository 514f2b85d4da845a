# shellcheck shell=bash
# The setting-up of the librspreload program tests across two network
# namespaces (preload_netns_apps.sh, preload_netns_fallback.sh), sourced
# once they set name (the test's) and NET (the third byte of their
# subnet, one per test: they may run at once): the library found, root
# and the programs checked (skipped otherwise), namespaces ss-NETa-PID
# (the servers: 10.213.NET.1, fd00:213:NET::1) and ss-NETz-PID (the
# clients: .2, ::2) joined by a veth pair, $T with its 3 MB of random
# bytes, and preload_cases.sh sourced for them. Everything the cases
# start, the namespaces and the directories go on exit; no traffic
# leaves the namespaces.
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
PRELOAD=$B/.libs/librspreload.so
[ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
[ "$(id -u)" = 0 ] || { echo "SKIP: $name: needs root for network namespaces"; exit 77; }
for p in ip socat curl python3 ss cmp timeout redis-server redis-cli redis-benchmark iperf3 \
  memcached memcslap nginx wrk sockperf sha256sum; do
  command -v $p >/dev/null || { echo "SKIP: $name: $p not found (scripts/install-deps.sh)"; exit 77; }
done
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/common.sh" || exit 99
. "$here/nginx_conf.sh" || exit 99
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-pn$NET.XXXXXX") || exit 99
pids=()
pg_dirs=()
cleanup() {
  local p ns
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for ns in ${ext_ns_made[@]+"${ext_ns_made[@]}"}; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$T" "${pg_dirs[@]}"
}
trap cleanup EXIT
HOST=10.213.$NET.1 HOST6=fd00:213:$NET::1
ext_netns_pair "ss-${NET}a-$$" "ss-${NET}z-$$" "$HOST/24 $HOST6/64" \
  "10.213.$NET.2/24 fd00:213:$NET::2/64"
port=$((20000 + RANDOM % 9000))
head -c 3000000 /dev/urandom >"$T/in"
mkdir -p "$T/www" && cp "$T/in" "$T/www/blob"
SRV_NS=(ip netns exec "ss-${NET}a-$$") CLI_NS=(ip netns exec "ss-${NET}z-$$") PROV=tcp
WHERE=", across namespaces"
. "$here/preload_cases.sh" || exit 99
