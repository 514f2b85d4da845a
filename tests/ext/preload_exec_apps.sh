#!/bin/bash
# Programs that hand a connection to a new program across exec, on both
# ends of librspreload (issue 33). OpenSSH: Debian's sshd with its
# defaults (it re-executes itself for each connection, handing the
# connection to the new image across exec, then forks a sandboxed child
# for the key exchange and authentication: chroot, an unprivileged user,
# a seccomp filter, RLIMIT_NOFILE and RLIMIT_FSIZE 0), key authentication
# as root; ssh, scp (100 MB each way) and sftp, each checked with cmp. On
# 127.0.0.1 over shm (auto) and over tcp, and across two namespaces (tcp
# through the listener's side channel):
#   every process that made or took a connection counts it on rsockets
#   over that provider and none on kernel TCP (SLIPSTREAM_PRELOAD_STATS),
#   and the re-executed sshd counts the one it was handed: the connection
#   crossed exec on rsockets, it was not left to a kernel socket.
# git daemon: it execs itself for each connection (--serve), which execs
# git upload-pack on it, which answers through stdio: git clone of a
# repository with a 20 MB file, both ends preloaded on shm, intact, every
# process counting its connection on rsockets (the clone's fetch forks
# index-pack, which inherits the connection and leaves it to the fetch).
# socat as inetd (TCP-LISTEN with fork, EXEC:cat,nofork): two clients in
# turn, each cat echoing 5 MB on the connection it was handed across exec,
# every cat counting it on rsockets.
# The same commands without the preload are the reference. About 35 s.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload_exec_apps.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
. "$here/check.sh"
require_root "sshd's privilege separation" /usr/sbin/sshd ssh scp sftp ssh-keygen cmp git
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
PRELOAD=$B/.libs/librspreload.so
[ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
unset LD_PRELOAD SLIPSTREAM_PROVIDER
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-sshd.XXXXXX") || exit 99
chmod 755 "$T"
pid=
NA=ss-xa-$$ NZ=ss-xz-$$
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; ip netns del $NA 2>/dev/null; ip netns del $NZ 2>/dev/null
  rm -rf "$T"' EXIT
mkdir -p /run/sshd && chmod 755 /run/sshd  # sshd's privilege separation directory
ssh-keygen -q -t ed25519 -N '' -f "$T/host" && ssh-keygen -q -t ed25519 -N '' -f "$T/user" &&
  cp "$T/user.pub" "$T/authorized" || exit 99
head -c 100000000 /dev/urandom >"$T/up" || exit 99
port=$((20000 + RANDOM % 9000))
cat >"$T/sshd_config" <<CONF
Port $port
HostKey $T/host
AuthorizedKeysFile $T/authorized
PermitRootLogin prohibit-password
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PidFile $T/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
CONF
opts=(-F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes
  -o LogLevel=ERROR -i "$T/user")

# Where sshd listens, and the commands that run sshd and the clients
# there (ip netns exec ...; none on one host).
HOST=127.0.0.1 SRV_IN=() CLI_IN=()

# start_sshd ENV...: sshd in the foreground of a background job, under ENV.
start_sshd() {
  "${SRV_IN[@]}" env "$@" /usr/sbin/sshd -D -e -f "$T/sshd_config" -o ListenAddress=$HOST \
    >"$T/sshd.log" 2>&1 &
  pid=$!
  for _ in $(seq 50); do grep -q "Server listening" "$T/sshd.log" && return 0; sleep 0.1; done
  echo "  sshd did not start:"; sed 's/^/    /' "$T/sshd.log"; return 1
}
stop_sshd() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; }

# session ENV...: ssh, scp both ways and sftp, each client under ENV.
session() {
  local bad=0
  rm -f "$T/up.copy" "$T/down" "$T/sftp.copy"
  local cl=("${CLI_IN[@]}" env "$@" timeout 120)
  [ "$("${cl[@]}" ssh "${opts[@]}" -p $port root@$HOST 'echo hello over ssh')" = \
    "hello over ssh" ] || { echo "  ssh echo failed"; bad=1; }
  "${cl[@]}" scp -q "${opts[@]}" -P $port "$T/up" root@$HOST:"$T/up.copy" &&
    cmp -s "$T/up" "$T/up.copy" || { echo "  scp up: not the same"; bad=1; }
  "${cl[@]}" scp -q "${opts[@]}" -P $port root@$HOST:"$T/up" "$T/down" &&
    cmp -s "$T/up" "$T/down" || { echo "  scp down: not the same"; bad=1; }
  printf 'get %s %s\n' "$T/up" "$T/sftp.copy" >"$T/batch"
  "${cl[@]}" sftp -q "${opts[@]}" -P $port -b "$T/batch" root@$HOST >/dev/null &&
    cmp -s "$T/up" "$T/sftp.copy" || { echo "  sftp get: not the same"; bad=1; }
  return $bad
}

# on_rsockets PROV: each line of the statistics counts its connections on
# rsockets over PROV and none on kernel TCP; at least one sshd that made
# no listener (the re-executed one) counts the connection it was handed.
on_rsockets() {
  local f bad=0 handed=0
  for f in "$T/st"/rspreload.*; do
    [ -f "$f" ] || continue
    grep -q ' rsockets=0 ' "$f" && continue
    grep -q " $1=[1-9].* kernel_tcp=0$" "$f" || { echo "  not all on $1: $(cat "$f")"; bad=1; }
    grep -q 'comm=sshd rsockets=1 ' "$f" && handed=$((handed + 1))
  done
  [ "$handed" -ge 4 ] || { echo "  re-executed sshds counting their connection: $handed, want 4"; bad=1; }
  return $bad
}

bad=0
start_sshd || bad=1
session || bad=1
stop_sshd
check "without the preload: ssh, scp 100 MB both ways and sftp against sshd" $bad

# preloaded_sshd PROV WHERE ENV...: sshd and the clients both preloaded
# under ENV, every connection on rsockets over PROV.
preloaded_sshd() {
  local prov=$1 where=$2 bad=0
  shift 2
  rm -rf "$T/st" && mkdir "$T/st"
  local env=(LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" "$@")
  start_sshd "${env[@]}" || bad=1
  session "${env[@]}" || bad=1
  stop_sshd
  on_rsockets "$prov" || bad=1
  [ $bad = 0 ] || { echo "  sshd's log:"; tail -20 "$T/sshd.log" | sed 's/^/    /'; }
  check "$prov$where, both ends preloaded: sshd with its defaults (re-exec, sandboxed child) serves ssh, scp 100 MB both ways and sftp, every connection on rsockets" $bad
}
for prov in shm tcp; do preloaded_sshd $prov "" SLIPSTREAM_PROVIDER=$prov; done

# Across two namespaces joined by a veth pair: rsockets find each other
# through the listener's side channel (tcp).
if (. "$here/common.sh" && ext_name=$name && ext_netns_pair $NA $NZ 10.214.1.1/24 10.214.1.2/24); then
  HOST=10.214.1.1 SRV_IN=(ip netns exec $NA) CLI_IN=(ip netns exec $NZ)
  preloaded_sshd tcp ", across namespaces" SLIPSTREAM_SIDE_PROBE_TIMEOUT=1000
  HOST=127.0.0.1 SRV_IN=() CLI_IN=()
  ip netns del $NA && ip netns del $NZ
fi

# listening PORT ENV...: wait until 127.0.0.1:PORT listens; with ENV (the
# preload), its shm rendezvous too: a client between the kernel's listen
# and the rsocket one gets kernel TCP.
listening() {
  local p=$1
  shift
  for _ in $(seq 50); do
    ss -Hltn "sport = :$p" | grep -q . &&
      { [ $# = 0 ] || ss -Hxl | grep -q "@slipstream/shm/127.0.0.1/$p "; } && return
    sleep 0.1
  done
}

# both_ways RUN REGEX MIN WHAT: RUN without the preload, then with it on
# shm, where at least MIN processes count their connections as REGEX says
# and none on kernel TCP.
both_ways() {
  local bad=0
  $1 || bad=1
  check "without the preload: $4" $bad
  bad=0
  rm -rf "$T/st" && mkdir "$T/st"
  $1 LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=shm SLIPSTREAM_PRELOAD_STATS="$T/st" || bad=1
  stats_all "$T/st" "$2" "$3" || bad=1
  check "shm, both ends preloaded, every connection on rsockets: $4" $bad
}

# git daemon, then git clone from it into $T/clone, both under ENV...
git_clone() {
  local gport=$((port + 1)) gpid ok=0
  env "$@" git daemon --reuseaddr --listen=127.0.0.1 --port=$gport --base-path="$T/git" \
    --export-all "$T/git" >"$T/git.log" 2>&1 &
  gpid=$!
  listening $gport "$@"
  rm -rf "$T/clone"
  env "$@" timeout 60 git clone -q git://127.0.0.1:$gport/repo "$T/clone" >"$T/clone.log" 2>&1 &&
    cmp "$T/git/repo/big" "$T/clone/big" || ok=1
  kill "$gpid" 2>/dev/null
  wait "$gpid" 2>/dev/null
  [ $ok = 0 ] || { echo "  clone:"; cat "$T/clone.log" "$T/git.log" | sed 's/^/    /' | tail -20; }
  return $ok
}
mkdir -p "$T/git" && git init -q "$T/git/repo" && head -c 20000000 /dev/urandom >"$T/git/repo/big" &&
  git -C "$T/git/repo" add big &&
  git -C "$T/git/repo" -c user.email=t@t -c user.name=t commit -q -m one || exit 99

both_ways git_clone ' shm=[1-9].* kernel_tcp=0$' 4 \
  "git clone of a 20 MB file from git daemon (its --serve image and upload-pack: two execs, answering through stdio; the clone's index-pack inherits the connection)"

# socat as inetd: TCP-LISTEN with fork and EXEC:cat,nofork, each
# connection's child execs cat on it (cat's stdin and stdout are the
# connection itself); two clients in turn echo 5 MB each, under ENV...
socat_inetd() {
  local sport=$((port + 2)) spid i ok=0
  env "$@" socat TCP-LISTEN:$sport,bind=127.0.0.1,reuseaddr,fork EXEC:cat,nofork \
    >"$T/socat.log" 2>&1 &
  spid=$!
  listening $sport "$@"
  for i in 1 2; do
    env "$@" timeout 30 socat -t 10 - TCP:127.0.0.1:$sport <"$T/five" >"$T/five.$i" 2>>"$T/socat.log" &&
      cmp -s "$T/five" "$T/five.$i" || { ok=1 && echo "  client $i: $(wc -c <"$T/five.$i") bytes back"; }
  done
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  [ $ok = 0 ] || { sed 's/^/    /' "$T/socat.log" | tail -10; return 1; }
}
if command -v socat >/dev/null; then
  head -c 5000000 /dev/urandom >"$T/five" || exit 99
  both_ways socat_inetd 'comm=cat rsockets=1 shm=1 .* kernel_tcp=0$' 2 \
    "socat as inetd (fork, EXEC:cat,nofork): each cat echoes 5 MB on the connection it was handed across exec"
else
  echo "SKIP: socat not found"
fi

echo "$name: $fails failed"
[ "$fails" = 0 ]
