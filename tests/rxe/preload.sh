#!/bin/bash
# librspreload on real verbs; runs INSIDE the rxe guest:
#   tests/rxe/rxe-vm.sh -s BUILD -s SRC -- bash SRC/tests/rxe/preload.sh BUILD
# Debian's rstream in socket mode (-T s: plain socket(), connect(), send(),
# recv() calls, as any TCP program makes them) with both ends, one end or
# no end under a preload, over $RXE_IP, verified (-T v) in custom mode:
#   * rspre:rspre: both ends on our librspreload with SLIPSTREAM_PROVIDER=verbs
#     (blocking, non-blocking and 64 B to 1 MiB; and with no provider named,
#     auto, which must pick verbs for rxe0's address): the connections must be
#     on rsockets over verbs by each process's own count
#     (SLIPSTREAM_PRELOAD_STATS) and rxe0's packet counters must grow by at
#     least the bytes / active_mtu, so a fall-back to kernel TCP fails;
#   * rspre-stock:rspre and rspre:rspre-stock: upstream's librspreload (the
#     guest's librdmacm1) on the other end, the same proof on ours;
#   * plain:rspre and rspre:plain: one end on kernel sockets: our end
#     falls back to kernel TCP (counted so), bytes verified; with a
#     non-blocking connect (-T n) rdma_cm refuses at once or after
#     EINPROGRESS (a late fallback), the outcome must be the same;
#   * siw0 (iWARP), when the guest has it: the same pairs, all on kernel
#     TCP (below: why);
#   * across exec (exec_case): tests/ext/exec_prog.c's server hands its
#     verbs connection to a new program as its stdin and stdout (sshd's
#     re-exec); verbs objects cannot follow, so the new program finds a
#     socket of its family whose read says ECONNRESET, and the client's
#     stream ends (a reset or an end), never a hang (rsocket(7), Exec);
#   * the late fallback made certain (late_case): a preloaded server,
#     stopped, takes the rsocket connect and never answers; the client's
#     non-blocking connect times out after EINPROGRESS and carries on over
#     kernel TCP (tests/preload/nb_client.py: poll, select, epoll).
# Prints PASS/FAIL per case and "N passed, N failed, ..."; exits 1 on a
# failure. Knobs: RXE_ONLY=REGEX, RXE_CMD_TIMEOUT (60), RXE_KEEP=1.
set -u
# shellcheck source=tests/rxe/common.sh
. "$(dirname "$0")/common.sh" || exit 2
rxe_init "${1:-}"
mkdir -p "$WORK/st"

# rs_case SRV CLI WANT ARGS... : one rstream -T s run; WANT is "verbs"
# (our ends' connections on rsockets over verbs, RDMA seen on rxe0) or
# "kernel" (our end's connection on kernel TCP).
rs_case() {
  local s=$1 c=$2 want=$3 name ours=0 size=64 count=100 v k
  shift 3
  name="rstream -T s $s:$c $* ($want${EXTRA_ENV[*]+, ${EXTRA_ENV[*]}}${ON:+, $ON})"
  want "$name" || return 0
  [ "$s" = rspre ] && [ -z "${SERVER_UNCOUNTED:-}" ] && ours=$((ours + 1))
  [ "$c" = rspre ] && ours=$((ours + 1))
  local a=("$@") i
  for ((i = 0; i < ${#a[@]}; i++)); do
    [ "${a[i]}" = -S ] && size=${a[i + 1]}
    [ "${a[i]}" = -C ] && count=${a[i + 1]}
  done
  rdma_mark
  pair "$s" "$c" rstream "$RXE_IP" -T s "$@"
  verdict
  [ -n "$WHY" ] || [ -n "$(perf_line "$CASE_DIR/c.out")" ] || WHY="client printed no result line"
  if [ "$want" = verbs ]; then
    rdma_check rstream "$ours" "$(mtu_pkts $((size * count)))"
  else
    v=$(stats_sum verbs rstream) k=$(stats_sum kernel_tcp rstream)
    [ "$v" = 0 ] && [ "$k" = "$ours" ] ||
      WHY+="${WHY:+; }our end counted verbs=$v kernel_tcp=$k, want kernel_tcp=$ours"
    PROOF="verbs=$v kernel_tcp=$k"
  fi
  report "$name"
  [ -n "$WHY" ] || echo "    $PROOF"
}

# late_case HOW: our tests/preload/nb_server.py on $RXE_IP, stopped
# (SIGSTOP) once it listens, so rdma_cm queues our client's connect
# request and nobody answers; our nb_client.py (HOW: poll, select,
# asyncio's epoll, or a blocking send at once) connects non-blocking, its rsocket connect times out
# after EINPROGRESS (connect_timeout 500 ms) and must carry on over kernel
# TCP: its debug line says the fallback was late, its count is
# kernel_tcp=1 verbs=0, the echo is intact. Continued, the server skips
# the rsocket connection the client gave up, if it sees it.
NB=$(cd "$(dirname "$0")/../preload" && pwd)
late_case() {
  local how=$1 name pid i v k
  name="non-blocking connect ($how), stopped server: late fallback to kernel TCP"
  want "$name" || return 0
  new_case
  rdma_mark
  head -c 200000 /dev/urandom >"$CASE_DIR/in"
  start_server rspre python3 "$NB/nb_server.py" "$RXE_IP" "$PORT" "$CASE_DIR/pid"
  for i in $(seq 100); do [ -s "$CASE_DIR/pid" ] && break; sleep 0.1; done
  pid=$(cat "$CASE_DIR/pid" 2>/dev/null)
  WHY=
  [ -n "$pid" ] && kill -STOP "$pid" || WHY="server never listened; "
  EXTRA_ENV=(SLIPSTREAM_RS_CONNECT_TIMEOUT=500 SLIPSTREAM_LOG_LEVEL=debug)
  end_env rspre
  EXTRA_ENV=()
  timeout -k 5 "$CMD_T" env "${ENV[@]}" python3 "$NB/nb_client.py" "$RXE_IP" "$PORT" "$how" \
    <"$CASE_DIR/in" >"$CASE_DIR/c.out" 2>"$CASE_DIR/c.err" &
  local cpid=$!
  for i in $(seq 200); do grep -q "after EINPROGRESS" "$CASE_DIR/c.err" && break; sleep 0.1; done
  grep -q "after EINPROGRESS" "$CASE_DIR/c.err" || WHY+="no late fallback logged; "
  [ -z "$pid" ] || kill -CONT "$pid"
  wait "$cpid"
  C_RC=$?
  [ "$C_RC" = 0 ] || WHY+="client exit $C_RC; "
  quiet reap_server
  [ "$S_RC" = 0 ] || WHY+="server exit $S_RC; "
  cmp -s "$CASE_DIR/in" "$CASE_DIR/c.out" || WHY+="bytes differ; "
  rm -f "$WORK/st/rspreload.$pid"  # the server's: it may count the given-up connection
  v=$(stats_sum verbs python3) k=$(stats_sum kernel_tcp python3)
  [ "$v" = 0 ] && [ "$k" = 1 ] || WHY+="client counted verbs=$v kernel_tcp=$k, want kernel_tcp=1"
  WHY=${WHY%; }
  report "$name"
}

# exec_case: the exec hand-over of a verbs connection, both ends ours.
EXEC_PROG=$WORK/exec_prog
exec_case() {
  local name="verbs across exec: the new program finds its stdin a socket that says ECONNRESET, the client's stream ends"
  want "$name" || return 0
  new_case
  WHY=
  if ! gcc -O2 -o "$EXEC_PROG" "$(dirname "$0")/../ext/exec_prog.c" 2>"$CASE_DIR/cc.err"; then
    WHY="exec_prog did not build: $(head -c 200 "$CASE_DIR/cc.err")"
    report "$name"
    return
  fi
  rdma_mark
  EXTRA_ENV=(EXEC_PROG_ADDR="$RXE_IP")
  start_server rspre "$EXEC_PROG" serve "$PORT" 1000000 exec
  end_env rspre
  EXTRA_ENV=()
  timeout -k 5 "$CMD_T" env "${ENV[@]}" EXEC_PROG_ADDR="$RXE_IP" "$EXEC_PROG" send "$PORT" 1000000 \
    >"$CASE_DIR/c.out" 2>"$CASE_DIR/c.err"
  C_RC=$?
  reap_server
  [ "$C_RC" = 124 ] || [ "$C_RC" = 137 ] && WHY+="client hung; "
  [ "$S_HUNG" = 0 ] || WHY+="server hung; "
  grep -qE '^got [0-9]+ then ' "$CASE_DIR/c.out" ||
    WHY+="client: $(head -c 120 "$CASE_DIR/c.out"); "
  grep -q '^stdin: a socket of family 2, ' "$CASE_DIR/s.err" ||
    WHY+="the new program's stdin: $(grep -m1 stdin "$CASE_DIR/s.err"); "
  grep -q '^echo: read: Connection reset by peer after 0$' "$CASE_DIR/s.err" ||
    WHY+="the new program's read: $(grep -m1 '^echo' "$CASE_DIR/s.err"); "
  local v k
  v=$(stats_sum verbs exec_prog) k=$(stats_sum kernel_tcp exec_prog)
  [ "$v" -ge 2 ] && [ "$k" = 0 ] || WHY+="counted verbs=$v kernel_tcp=$k, want both ends on verbs; "
  WHY=${WHY%; }
  report "$name"
  [ -n "$WHY" ] || echo "    client: $(cat "$CASE_DIR/c.out"); verbs=$v kernel_tcp=$k"
}

T_ALL=$SECONDS
echo "== librspreload on $RXE_DEV ($RXE_IP): ours = $BUILD/.libs/librspreload.so, SLIPSTREAM_PROVIDER=$OURS_PROV"
[ -f "$BUILD/.libs/librspreload.so" ] || fail "setup" "no librspreload.so: build first"
[ -f "$STOCK_RSPRELOAD" ] || fail "setup" "no upstream librspreload at $STOCK_RSPRELOAD"

section "both ends ours"
rs_case rspre rspre verbs -T b -T v -S 64 -C 1000
rs_case rspre rspre verbs -T b -T v -S 1048576 -C 4
rs_case rspre rspre verbs -T n -T v -S 65536 -C 20

# No provider named: rxe0's address leads to an RDMA device, so verbs.
EXTRA_ENV=(SLIPSTREAM_PROVIDER=auto)
rs_case rspre rspre verbs -T b -T v -S 65536 -C 20
EXTRA_ENV=()

section "upstream's librspreload on the other end"
rs_case rspre-stock rspre verbs -T b -T v -S 65536 -C 20
rs_case rspre rspre-stock verbs -T b -T v -S 65536 -C 20

section "fallback to kernel TCP (one end plain)"
rs_case plain rspre kernel -T b -T v -S 65536 -C 20
rs_case rspre plain kernel -T b -T v -S 65536 -C 20
rs_case plain rspre kernel -T n -T v -S 65536 -C 20
for how in poll select epoll asyncio blocking; do late_case $how; done

section "across exec"
exec_case

# iWARP (siw0): rdma_cm's port space there is TCP's own, and its connect a
# TCP connection to the port carrying MPA's bytes. Our client refuses an
# iWARP device before it connects (a plain server must not read MPA), and
# our listener cannot have an rdma_cm listener on the port its kernel
# socket holds (EADDRINUSE): every case ends on kernel TCP, bytes intact.
# That listener is then the kernel's alone, and what it accepts is not
# counted (SERVER_UNCOUNTED): our clients' counts are checked.
if [ -n "${SIW_IP:-}" ]; then
  section "iWARP ($SIW_DEV): kernel TCP"
  RXE_IP=$SIW_IP ON=$SIW_DEV SERVER_UNCOUNTED=1
  rs_case rspre rspre kernel -T b -T v -S 65536 -C 20
  rs_case rspre rspre kernel -T n -T v -S 65536 -C 20
  rs_case plain rspre kernel -T b -T v -S 65536 -C 20
  rs_case plain rspre kernel -T n -T v -S 65536 -C 20
  rs_case rspre plain kernel -T b -T v -S 65536 -C 20
fi

[ "$n_filtered" = 0 ] || echo "($n_filtered cases not selected by RXE_ONLY)"
section
echo "preload: $((SECONDS - T_ALL)) s"
echo "$n_pass passed, $n_fail failed, $n_skip skipped"
[ "$n_fail" = 0 ]
