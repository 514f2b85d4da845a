"""The fault matrix (docs/status.md, issue 31): every fault of ROWS against
every way a program reaches a connection (COLUMNS), each cell the same
program (fault_prog.c) and its answer compared with the kernel's.

Run by fault_matrix.sh, which builds the programs and passes:
  fault_matrix.py BUILD_DIR PLAIN_PROG RSOCKET_PROG WORK_DIR [ROW,...] [COL,...]
Namespaces A (the victim's) and B (the peer's), joined by veth, are made
here and removed at exit; same-host columns run both sides in A on
127.0.0.1. The program under test never meets the driver's signals in a
way the kernel's would not: the driver only kills, stops, signals, and
removes routes, links and namespaces, as a user's peer, operator or
network would.

A cell prints "same" (the kernel's answer), "documented" (an answer
DOCUMENTED gives, with its reason: by design), "open" (a difference
KNOWN_OPEN lists: a bug not fixed yet, in docs/status.md), "n/a" (the
fault does not apply to the column), "not run here" (counted), or "FAIL"
(anything else: another answer, a hang, a crash, or a connection that
did not take the column's path).
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

NS_A, NS_B = "ss-fa-%d" % os.getpid(), "ss-fb-%d" % os.getpid()
# The verbs column's address (an RDMA device's), both ends in this
# namespace; unset: the column is not run here.
VERBS_IP = os.environ.get("FAULT_VERBS_IP", "")
# The kernel's answers, recorded by a full run (FAULT_REFERENCE_SAVE) and
# read by a run elsewhere (FAULT_REFERENCE: the guest's), so the kernel
# column runs once.
REFERENCE_IN = os.environ.get("FAULT_REFERENCE", "")
REFERENCE_OUT = os.environ.get("FAULT_REFERENCE_SAVE", "")
IP_A, IP_B, NET = "10.227.0.1", "10.227.0.2", "10.227.0.0/24"

# Faults of a connection (stream) and of a datagram socket.
STREAM_ROWS = ["kill-recv", "kill-recv-c", "exit-unclosed", "kill-send", "kill-connect",
               "kill-accept", "kill-poll", "kill-epoll", "rst-unread", "peer-close", "fork-exit",
               "shut-wr", "stop-cont", "sig-recv", "sig-send", "sig-accept", "sig-connect",
               "sig-poll", "sig-io", "cancel-recv", "cancel-accept", "cancel-connect", "cancel-poll",
               "cancel-epoll",
               "emfile", "rlimit-as", "netns-gone", "unreachable"]
DGRAM_ROWS = ["u-kill-recv", "u-refused", "u-sig-recv", "u-cancel-recv", "u-emfile",
              "u-rlimit-as"]
ROW_TEXT = {
    "kill-recv": "peer SIGKILLed, this side in recv",
    "kill-recv-c": "peer (the server) SIGKILLed, this side (the client) in recv",
    "exit-unclosed": "peer exits (exit(0)) with its connection open",
    "kill-send": "peer SIGKILLed, this side in send (window full)",
    "kill-connect": "peer's listener SIGKILLed before accepting this connect",
    "kill-accept": "peer SIGKILLed right after its connect, this side in accept",
    "kill-poll": "peer SIGKILLed, this side in poll",
    "kill-epoll": "peer SIGKILLed, this side in epoll_wait",
    "rst-unread": "peer closes with unread data (RST), this side in recv",
    "peer-close": "peer closes (close(2)) after sending, its process alive",
    "fork-exit": "a fork child of this side exits (exit(3)) holding the connection",
    "shut-wr": "peer shuts down writes",
    "stop-cont": "peer SIGSTOPped, then SIGCONTinued, this side in recv",
    "sig-recv": "signal without SA_RESTART in recv",
    "sig-send": "signal without SA_RESTART in send (window full)",
    "sig-accept": "signal without SA_RESTART in accept",
    "sig-connect": "signal without SA_RESTART in connect (peer's backlog full)",
    "sig-poll": "signal without SA_RESTART in poll",
    "sig-io": "a handler (SA_RESTART) over recv receives (MSG_DONTWAIT) and sends on the "
              "connection; the peer echoes",
    "cancel-recv": "a thread of this side cancelled (pthread_cancel) in recv, then a wait again",
    "cancel-accept": "a thread of this side cancelled in accept, then an accept again",
    "cancel-connect": "a thread of this side cancelled in connect (peer's backlog full)",
    "cancel-poll": "a thread of this side cancelled in poll, then a wait again",
    "cancel-epoll": "a thread of this side cancelled in epoll_wait, then a wait again",
    "emfile": "out of descriptors mid-stream",
    "rlimit-as": "RLIMIT_AS 32 MB above the process's size mid-stream (4 MB echoed)",
    "netns-gone": "peer's namespace deleted (its link first), this side in poll",
    "unreachable": "route to the peer removed mid-transfer, then restored",
    "u-kill-recv": "UDP: peer SIGKILLed, this side in poll",
    "u-refused": "UDP: connected, sending to a port nobody holds (ICMP)",
    "u-sig-recv": "UDP: signal without SA_RESTART in recv",
    "u-cancel-recv": "UDP: a thread of this side cancelled in recv",
    "u-emfile": "UDP: out of descriptors, echoing 200 datagrams",
    "u-rlimit-as": "UDP: RLIMIT_AS 32 MB above, echoing 200 datagrams",
}
PEER_LISTENS = {"kill-recv-c", "kill-connect", "sig-connect", "cancel-connect", "u-refused"}
NO_PEER = {"sig-accept", "u-refused", "u-sig-recv", "u-cancel-recv"}
NEEDS_VETH = {"netns-gone", "unreachable"}
NO_CONNECTION = {"sig-accept"}
# Faults whose peer starts only once the victim printed this (default: ready).
PEER_AFTER = {"u-emfile": "full", "u-rlimit-as": "full", "cancel-accept": "cancelled"}
NO_RLIMIT_AS_UNDER = ("asan",)  # sanitizers reserve terabytes of address space


class Column:
    def __init__(self, name, proto, topo, victim_env, peer_env, rsocket=False, proof=None,
                 text=""):
        self.name, self.proto, self.topo = name, proto, topo
        self.victim_env, self.peer_env = victim_env, peer_env
        self.rsocket, self.proof, self.text = rsocket, proof, text


class Proc:
    """A side: its stdout lines as they come, its stderr in a file."""

    def __init__(self, ns, env, argv, err_path):
        self.lines, self.cv, self.eof = [], threading.Condition(), False
        self.err_path = err_path
        cmd = (["ip", "netns", "exec", ns] if ns else []) + ["env"] + \
            ["%s=%s" % kv for kv in env.items()] + argv
        with open(err_path, "w") as err:
            self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=err, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.eof = True
            self.cv.notify_all()

    def wait_line(self, prefix, timeout):
        """The first line starting with prefix, waiting up to timeout
        seconds for it; None if it did not come (or the side ended)."""
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                left = end - time.monotonic()
                if left <= 0 or self.eof:
                    return None
                self.cv.wait(min(left, 0.1))

    def tell(self, line):
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
        except OSError:
            pass

    def signal(self, sig):
        try:
            os.kill(self.p.pid, sig)
        except ProcessLookupError:
            pass

    def end(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.p.wait()
            return None

    def stderr(self):
        try:
            with open(self.err_path) as f:
                return f.read()
        except OSError:
            return ""


def sh(*cmd, check=True):
    r = subprocess.run(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.returncode


def make_pair(namespaces=(NS_A, NS_B)):
    """The namespaces given (A and B at first; B again after netns-gone)
    and the veth between A and B."""
    for ns in namespaces:
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "link", "add", "fa", "netns", NS_A, "type", "veth", "peer", "fb", "netns", NS_B)
    sh("ip", "-n", NS_A, "addr", "add", IP_A + "/24", "dev", "fa")
    sh("ip", "-n", NS_B, "addr", "add", IP_B + "/24", "dev", "fb")
    for ns, dev in ((NS_A, "fa"), (NS_B, "fb")):
        sh("ip", "-n", ns, "link", "set", dev, "up")
        # The rings see each segment's real checksum (veth would leave it
        # to an offload nobody does).
        sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", check=False)
    for _ in range(50):
        out = subprocess.run(["ip", "-n", NS_B, "link", "show", "fb"], capture_output=True,
                             text=True).stdout
        if "LOWER_UP" in out:
            break
        time.sleep(0.1)


def remove_pair():
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)


def remake_b():
    """After netns-gone: B and the link again."""
    sh("ip", "-n", NS_A, "link", "del", "fa", check=False)
    sh("ip", "netns", "del", NS_B, check=False)
    make_pair((NS_B,))


def preload_proof(kind):
    """librspreload's own count of where the victim's connections went."""
    def check(row, cell_dir, victim):
        if row in NO_CONNECTION:
            return None  # it counts connections: none was made
        path = os.path.join(cell_dir, "rspreload.%d" % victim.p.pid)
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            return "no stats file: the connection never reached rsockets"
        counts = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
        if int(counts.get(kind, "0")) < 1 or int(counts.get("kernel_tcp", "0")) != 0:
            return "not on rsockets' %s: %s" % (kind, text.strip())
        return None
    return check


def vma_proof(pattern):
    def check(row, cell_dir, victim):
        if re.search(pattern, victim.stderr()):
            return None
        return "not offloaded (no \"%s\" in its log)" % pattern
    return check


# Documented differences: (row, column) -> (the answers it may give, why),
# by design of the face; each is in its man page too (rsocket(7)).
_NEVER_ACCEPTED = (["connect=0 recv=0"],
                   "a killed listener's unaccepted connections end as after a FIN, not a "
                   "reset: rsockets complete a connection before raccept, and a peer that "
                   "sent nothing cannot tell an accepted one from another")
_VERBS_RESET = (["recv_all=1000 recv=-1 ECONNRESET", "accept=0 recv=-1 ECONNRESET",
                 "poll=IN|ERR|HUP recv=-1 ECONNRESET"],
                "on verbs a peer's end without a DISCONNECT is a reset: the fabric does not "
                "tell a process's death from a broken connection")
_PRE_ACCEPTED = (["recv_all=1000 send_all=1000 socket=-1 EMFILE accept=%d"],
                 "a connection the listen thread completed before the process ran out of "
                 "descriptors already holds its own: raccept returns it")
_VERBS_NEVER_ACCEPTED = (_NEVER_ACCEPTED[0] + ["connect=-1 ECONNREFUSED"],
                         _NEVER_ACCEPTED[1] + "; on verbs a request rdma_cm had not yet handed "
                         "to the listener when it died is refused")
DOCUMENTED = {("kill-connect", c): _NEVER_ACCEPTED for c in ("rs-shm", "rs-tcp", "pre-shm",
                                                             "pre-tcp")}
DOCUMENTED[("kill-connect", "verbs")] = _VERBS_NEVER_ACCEPTED
DOCUMENTED.update({(r, "verbs"): _VERBS_RESET
                   for r in ("kill-recv", "kill-recv-c", "kill-accept", "kill-poll")})
DOCUMENTED.update({("emfile", c): _PRE_ACCEPTED for c in ("rs-tcp", "pre-tcp", "rs-shm",
                                                          "pre-shm", "verbs")})
# Differences not fixed yet (docs/status.md lists them): the cell says
# "open" whatever its answer, unless the answer became the kernel's or a
# documented one. One "by the timing" may give the kernel's answer.
_NUMBER_LEFT = ("by the timing: a descriptor the listen path closes in the microseconds "
                "between its look for another free number and the close is free for the "
                "program's socket() (none in 600 runs under load)")
_VERBS_NUMBER_LEFT = ("by the timing: rdma-core's objects close their descriptors when a "
                      "verbs step fails half-way, and the program's socket() may get one")
KNOWN_OPEN = {("emfile", c): _NUMBER_LEFT for c in ("rs-shm", "rs-tcp", "pre-shm", "pre-tcp")}
KNOWN_OPEN[("emfile", "verbs")] = _VERBS_NUMBER_LEFT


def columns(build):
    lib = os.path.join(build, ".libs")
    rs = {"LD_PRELOAD": os.path.join(lib, "librsocket.so"), "LD_LIBRARY_PATH": lib}
    pre = {"LD_PRELOAD": os.path.join(lib, "librspreload.so"), "LD_LIBRARY_PATH": lib}
    vma = {"LD_PRELOAD": os.path.join(lib, "libvma.so"), "LD_LIBRARY_PATH": lib,
           "VMA_TRACELEVEL": "debug", "VMA_STATS_SHMEM_DIR": "", "VMA_CONFIG_FILE": "/dev/null"}

    def both(env, provider):  # the victim's and the peer's environments
        return dict(env, SLIPSTREAM_PROVIDER=provider), dict(env, SLIPSTREAM_PROVIDER=provider)

    return [
        Column("kernel", "stream", "veth", {}, {}, text="Linux TCP, A to B (the reference)"),
        Column("rs-shm", "stream", "lo", *both(rs, "shm"), rsocket=True,
               text="rsocket API, shm provider, both ends in A"),
        Column("rs-tcp", "stream", "veth", *both(rs, "tcp"), rsocket=True,
               text="rsocket API, tcp provider, A to B"),
        Column("pre-shm", "stream", "lo", *both(pre, "shm"), proof=preload_proof("shm"),
               text="librspreload.so both ends, shm, in A"),
        Column("pre-tcp", "stream", "veth", *both(pre, "tcp"), proof=preload_proof("tcp"),
               text="librspreload.so both ends, tcp, A to B"),
        Column("vma-tcp", "stream", "veth", vma, {},
               proof=vma_proof(r"(connect fd \d+: offloaded|listen fd \d+ \(tcp port \d+\): on)"),
               text="libvma.so in A (its TCP on the rings), Linux in B"),
        Column("verbs", "stream", "rxe", *both(rs, "verbs"), rsocket=True,
               text="rsocket API, verbs provider, both ends on FAULT_VERBS_IP (the Soft-RoCE "
                    "guest's rxe0: tests/rxe/check.sh)"),
        Column("kernel-udp", "dgram", "veth", {}, {}, text="Linux UDP, A and B (the reference)"),
        Column("rsd-shm", "dgram", "lo", *both(rs, "shm"), rsocket=True,
               text="datagram rsockets, shm provider, both ends in A"),
        Column("rsd-tcp", "dgram", "veth", *both(rs, "tcp"), rsocket=True,
               text="datagram rsockets, tcp provider, A to B"),
        Column("rsd-verbs", "dgram", "rxe", *both(rs, "verbs"), rsocket=True,
               text="datagram rsockets, verbs provider, both ends on FAULT_VERBS_IP"),
        Column("pre-udp", "dgram", "veth", *both(pre, "tcp"),
               text="librspreload.so both ends, A to B (UDP stays the kernel's)"),
        Column("vma-udp", "dgram", "veth", vma, {}, proof=vma_proof(r"UDP offloaded on"),
               text="libvma.so in A (UDP on the rings), Linux in B"),
    ]


class Matrix:
    def __init__(self, build, plain, rsprog, work):
        self.build, self.plain, self.rsprog, self.work = build, plain, rsprog, work
        self.port = 7400
        self.asan = "asan" in os.environ.get("SS_BUILD_FLAVOUR", "")

    def run(self, row, col):
        """(answer or None, problem or None) for one cell."""
        self.port += 1
        cell_dir = os.path.join(self.work, "%s.%s" % (row, col.name))
        os.makedirs(cell_dir, exist_ok=True)
        if col.topo == "veth":
            ns_v, ns_p = NS_A, NS_B
            addr = IP_B if row in PEER_LISTENS else IP_A
        elif col.topo == "rxe":  # rxe follows no netdev into a namespace (Linux 6.1)
            ns_v = ns_p = None
            addr = VERBS_IP
        else:
            ns_v = ns_p = NS_A
            addr = "127.0.0.1"
        prog = self.rsprog if col.rsocket else self.plain
        venv = dict(col.victim_env)
        penv = dict(col.peer_env)
        if col.proof and "LD_PRELOAD" in venv and "librspreload" in venv["LD_PRELOAD"]:
            venv["SLIPSTREAM_PRELOAD_STATS"] = cell_dir
        if row == "sig-io" and "libvma" in venv.get("LD_PRELOAD", ""):
            venv["VMA_RX_POLL"] = "0"  # asleep in recv by the signal, however slow the machine
        argv = lambda role: [prog, role, row, addr, str(self.port)]  # noqa: E731
        victim = peer = None
        try:
            if row in PEER_LISTENS and row not in NO_PEER:
                peer = Proc(ns_p, penv, argv("peer"), os.path.join(cell_dir, "peer.err"))
                if not peer.wait_line("ready", 10):
                    return None, "the peer never listened: " + peer.stderr()[-200:]
            victim = Proc(ns_v, venv, argv("victim"), os.path.join(cell_dir, "victim.err"))
            if row not in PEER_LISTENS:
                if not victim.wait_line(PEER_AFTER.get(row, "ready"), 10):
                    return None, "the victim never got ready: " + victim.stderr()[-300:]
                if row not in NO_PEER:
                    peer = Proc(ns_p, penv, argv("peer"), os.path.join(cell_dir, "peer.err"))
            self.act(row, victim, peer)
            victim.end(25)
            answer = victim.wait_line("answer ", 5)
            if answer is None:
                rc = victim.p.returncode
                what = "hung (killed)" if rc is None or rc == -signal.SIGKILL else \
                    "ended with %s" % (("signal %d" % -rc) if rc < 0 else "exit %d" % rc)
                return None, "%s, no answer: %s" % (what, victim.stderr()[-300:].strip())
            answer = answer[len("answer "):]
            if col.proof and answer != "n/a":
                problem = col.proof(row, cell_dir, victim)
                if problem:
                    return answer, problem
            return answer, None
        finally:
            for p in (peer, victim):
                if p:
                    p.signal(signal.SIGCONT)
                    p.signal(signal.SIGKILL)
                    p.end(10)
            if row == "unreachable":
                sh("ip", "-n", NS_A, "route", "replace", NET, "dev", "fa", check=False)
            if row == "netns-gone":
                remake_b()

    def act(self, row, victim, peer):
        """The fault itself, on the sides' markers."""
        if row == "kill-accept":
            if peer and peer.wait_line("connected", 10):
                peer.signal(signal.SIGKILL)
            return
        if row in ("emfile", "rlimit-as", "rst-unread", "shut-wr", "peer-close", "fork-exit",
                   "u-refused", "u-emfile", "u-rlimit-as") or "cancel-" in row:
            return  # the victim's own doing
        if not victim.wait_line("blocking", 15):
            return
        time.sleep(0.3)  # in the call by now
        if row.startswith("sig-") or row == "u-sig-recv":
            victim.signal(signal.SIGUSR1)
        elif row == "stop-cont":
            peer.signal(signal.SIGSTOP)
            time.sleep(0.6)
            peer.signal(signal.SIGCONT)
        elif row == "netns-gone":
            sh("ip", "-n", NS_A, "link", "del", "fa", check=False)
            peer.signal(signal.SIGKILL)
            peer.end(10)
            sh("ip", "netns", "del", NS_B, check=False)
        elif row == "unreachable":
            sh("ip", "-n", NS_A, "route", "del", NET, check=False)
            victim.tell("go")
            victim.wait_line("stalled", 15)
            sh("ip", "-n", NS_A, "route", "replace", NET, "dev", "fa", check=False)
        else:  # kill-*, u-kill-recv
            peer.signal(signal.SIGKILL)


def main():
    build, plain, rsprog, work = sys.argv[1:5]
    only_rows = sys.argv[5].split(",") if len(sys.argv) > 5 and sys.argv[5] else None
    only_cols = sys.argv[6].split(",") if len(sys.argv) > 6 and sys.argv[6] else None
    cols = [c for c in columns(build) if not only_cols or c.name in only_cols or
            c.name in ("kernel", "kernel-udp")]
    m = Matrix(build, plain, rsprog, work)
    recorded = {}
    if REFERENCE_IN and os.path.exists(REFERENCE_IN):
        with open(REFERENCE_IN) as f:
            recorded = json.load(f)
    make_pair()
    results, fails, skips, opens = {}, 0, 0, 0
    try:
        for proto, rows in (("stream", STREAM_ROWS), ("dgram", DGRAM_ROWS)):
            ref = [c for c in cols if c.proto == proto][0]
            for row in rows:
                if only_rows and row not in only_rows:
                    continue
                if row in recorded:
                    kernel, problem = recorded[row], None
                else:
                    kernel, problem = m.run(row, ref)
                results[(row, ref.name)] = ("reference" if not problem else "FAIL",
                                            kernel, problem)
                if problem:
                    fails += 1
                for col in cols:
                    if col.proto != proto or col is ref:
                        continue
                    verdict = cell(m, row, col, kernel)
                    results[(row, col.name)] = verdict
                    fails += verdict[0] == "FAIL"
                    skips += verdict[0].startswith("not run")
                    opens += verdict[0] == "open"
                    sys.stdout.flush()
    finally:
        remove_pair()
    if REFERENCE_OUT:
        answers = {r: v[1] for (r, c), v in results.items()
                   if v[0] == "reference" and c in ("kernel", "kernel-udp")}
        with open(REFERENCE_OUT, "w") as f:
            json.dump(answers, f, indent=1, sort_keys=True)
    print_matrix(cols, results)
    # Each cell not run, as a skip (tests/skips.sh counts these lines).
    for (row, col), verdict in results.items():
        if verdict[0].startswith("not run"):
            print("SKIP: fault_matrix.sh: %s in %s: %s" % (row, col, verdict[2]))
    print("fault_matrix: %d FAIL cell(s), %d open (listed), %d not run here"
          % (fails, opens, skips))
    return 1 if fails else 0


def cell(m, row, col, kernel):
    if col.topo == "rxe" and not VERBS_IP:
        return ("not run here", None, "needs an RDMA device: the Soft-RoCE guest runs this column "
                                      "(tests/rxe/check.sh)")
    if row in ("kill-epoll", "cancel-epoll") and col.rsocket:
        return ("n/a", None, "no epoll in the rsocket API")
    if row == "sig-io" and col.rsocket:
        return ("n/a", None, "the rsocket API is not async-signal-safe (rsocket(7))")
    if row in NEEDS_VETH and col.topo != "veth":
        return ("n/a", None, "a same-host transport: no link or route to remove")
    if row in ("rlimit-as", "u-rlimit-as") and m.asan:
        return ("not run here", None, "under a sanitizer (its shadow memory)")
    answer, problem = m.run(row, col)
    if problem and (row, col.name) in KNOWN_OPEN:
        return ("open", answer, "%s (%s)" % (KNOWN_OPEN[(row, col.name)], problem[:80]))
    if problem:
        return ("FAIL", answer, problem)
    if answer == kernel:
        stale = not KNOWN_OPEN.get((row, col.name), "by the timing").startswith("by the timing")
        return ("same", answer, "listed open: drop its KNOWN_OPEN entry" if stale else None)
    doc = DOCUMENTED.get((row, col.name))
    if doc and any(re.fullmatch(re.escape(a).replace("%d", r"\d+"), answer or "")
                   for a in doc[0]):
        return ("differs: documented", answer, doc[1])
    if (row, col.name) in KNOWN_OPEN:
        return ("open", answer, KNOWN_OPEN[(row, col.name)])
    return ("FAIL", answer, "the kernel: %s" % kernel)


def print_matrix(cols, results):
    for proto, rows in (("stream", STREAM_ROWS), ("dgram", DGRAM_ROWS)):
        pcols = [c for c in cols if c.proto == proto]
        rrows = [r for r in rows if (r, pcols[0].name) in results]
        if not rrows:
            continue
        w = max(len(r) for r in rrows)
        print()
        print("| %s | %s |" % ("fault".ljust(w), " | ".join(c.name for c in pcols)))
        print("| %s | %s |" % ("-" * w, " | ".join("-" * len(c.name) for c in pcols)))
        for r in rrows:
            cells = []
            for c in pcols:
                v = results.get((r, c.name), ("-", None, None))[0]
                cells.append({"reference": "kernel", "differs: documented": "documented"}
                             .get(v, v))
            print("| %s | %s |" % (r.ljust(w), " | ".join(cells)))
        print()
        for r in rrows:
            print("%s: %s" % (r, ROW_TEXT[r]))
            for c in pcols:
                v = results.get((r, c.name))
                if not v:
                    continue
                line = "  %-10s %-10s %s" % (c.name, v[0], v[1] if v[1] is not None else "")
                if v[2]:
                    line += "  (%s)" % v[2]
                print(line.rstrip())
    print()
    for c in cols:
        print("%-10s %s" % (c.name, c.text))


if __name__ == "__main__":
    sys.exit(main())
