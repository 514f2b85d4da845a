#include "vma_preload/tcp_repair.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/base/log.h"
#include "interpose/real.h"
#include "vma_preload/wire_addr.h"

namespace ss::vma::preload {
namespace {

using interpose::real;

int tcp_opt(int fd, int name, const void* v, socklen_t len) {
  return real().setsockopt(fd, IPPROTO_TCP, name, v, len) < 0 ? -errno : 0;
}

int tcp_int(int fd, int name, int v) { return tcp_opt(fd, name, &v, sizeof v); }

// Queues bytes into the queue selected by TCP_REPAIR_QUEUE (in repair mode:
// the receive queue as if they had arrived, the send queue as if sent), or
// sends them (out of it), in pieces the socket's buffers take: how many
// went (all, or fewer and *err).
size_t queue_bytes(int fd, const std::vector<uint8_t>& bytes, int* err) {
  constexpr size_t kPiece = 64 * 1024;
  size_t off = 0;
  *err = 0;
  while (off < bytes.size()) {
    const size_t n = std::min(kPiece, bytes.size() - off);
    const ssize_t r = real().send(fd, bytes.data() + off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r <= 0) {
      *err = r < 0 ? -errno : -EIO;
      break;
    }
    off += static_cast<size_t>(r);
  }
  return off;
}

int queue_all(int fd, const std::vector<uint8_t>& bytes) {
  int err;
  queue_bytes(fd, bytes, &err);
  return err;
}

// The buffer sizes the queued bytes need (the kernel counts each byte
// about twice with its overhead), raised past what the program set only
// when smaller.
void room_for(int fd, int opt, int force, size_t bytes) {
  int now = 0;
  socklen_t len = sizeof now;
  const size_t want = bytes + 64 * 1024;
  if (real().getsockopt(fd, SOL_SOCKET, opt, &now, &len) == 0 &&
      static_cast<size_t>(now) / 2 >= want)
    return;
  const int v = static_cast<int>(std::min<size_t>(want, INT32_MAX / 2));
  real().setsockopt(fd, SOL_SOCKET, force, &v, sizeof v);
}

// The live connection takes what the program sent and the rings had not
// sent yet as new data; what its send buffer refuses (the room made was
// not enough) goes into the send queue as sent, in repair mode again, for
// the kernel's timer to send: late, never lost.
void send_unsent(int fd, const std::vector<uint8_t>& unsent) {
  int err;
  const size_t went = queue_bytes(fd, unsent, &err);
  if (went == unsent.size()) return;
  const std::vector<uint8_t> rest(unsent.begin() + static_cast<std::ptrdiff_t>(went), unsent.end());
  if ((err = tcp_int(fd, TCP_REPAIR, TCP_REPAIR_ON)) == 0 &&
      (err = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)) == 0)
    err = queue_all(fd, rest);
  tcp_int(fd, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
  tcp_int(fd, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP);
  if (err < 0)
    SS_WARN("fd %d: the kernel took the connection but not %zu bytes the program had sent: %s", fd,
            rest.size(), std::strerror(-err));
}

// Up to the connect: a failure leaves the socket as it was (repair off).
int prepare(int fd, int family, const net::tcp::FourTuple& t, const net::tcp::Handover& h) {
  sockaddr_storage local{};
  socklen_t llen = sizeof local;
  if (real().getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) < 0) return -errno;
  const bool bound =
      (local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                   : reinterpret_cast<sockaddr_in*>(&local)->sin_port) != 0;
  // Repair mode binds over the listener that holds the port (an accepted
  // connection's new socket is not bound).
  if (!bound) {
    llen = program_addr({t.local, t.local_port}, family, &local);
    if (real().bind(fd, reinterpret_cast<sockaddr*>(&local), llen) < 0) return -errno;
  }
  room_for(fd, SO_SNDBUF, SO_SNDBUFFORCE, h.sent.size() + h.unsent.size());
  room_for(fd, SO_RCVBUF, SO_RCVBUFFORCE, h.unread.size());
  const uint32_t snd_seq = h.snd_una;
  const uint32_t rcv_seq = h.rcv_nxt - static_cast<uint32_t>(h.unread.size());
  int r;
  if ((r = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)) < 0 ||
      (r = tcp_opt(fd, TCP_QUEUE_SEQ, &snd_seq, sizeof snd_seq)) < 0 ||
      (r = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)) < 0 ||
      (r = tcp_opt(fd, TCP_QUEUE_SEQ, &rcv_seq, sizeof rcv_seq)) < 0)
    return r;
  // The segment size the connect computes follows TCP_MAXSEG (the option
  // below comes after it, too late for that).
  return tcp_int(fd, TCP_MAXSEG, static_cast<int>(h.peer_mss));
}

// After the connect, still in repair mode: options, queues, windows.
int fill(int fd, const net::tcp::Handover& h) {
  tcp_repair_opt opts[4];
  size_t n = 0;
  opts[n++] = {TCPOPT_MAXSEG, h.peer_mss};
  if (h.window_scaling)
    opts[n++] = {TCPOPT_WINDOW, uint32_t{h.snd_wscale} | uint32_t{h.rcv_wscale} << 16};
  if (h.sack) opts[n++] = {TCPOPT_SACK_PERMITTED, 0};
  if (h.timestamps) opts[n++] = {TCPOPT_TIMESTAMP, 0};
  int r;
  if ((r = tcp_opt(fd, TCP_REPAIR_OPTIONS, opts, static_cast<socklen_t>(n * sizeof opts[0]))) < 0)
    return r;
  // The kernel's timestamps go on from ours: never older for the peer's PAWS.
  if (h.timestamps && (r = tcp_opt(fd, TCP_TIMESTAMP, &h.ts_val, sizeof h.ts_val)) < 0) return r;
  if ((r = queue_all(fd, h.unread)) < 0 ||  // still the receive queue
      (r = tcp_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)) < 0 || (r = queue_all(fd, h.sent)) < 0)
    return r;
  const tcp_repair_window w{h.snd_wl1, h.snd_wnd, h.max_snd_wnd, h.rcv_wnd, h.rcv_wup};
  return tcp_opt(fd, TCP_REPAIR_WINDOW, &w, sizeof w);
}

// The peer's FIN, or its ACK of ours, which came to the rings, given to
// the repaired socket as a segment (repair mode sets no such state) on
// loopback through a raw socket (CAP_NET_RAW), before repair mode ends,
// as CRIU does: the socket goes from state `from` to `to`, as the
// connection did (a FIN's ACK waits as a delayed one). 0, or -errno.
int give_peer(int fd, int raw, const net::tcp::FourTuple& t, const net::tcp::Handover& h,
              net::tcp::PeerClose what, int from, int to) {
  const std::vector<uint8_t> pkt = net::tcp::peer_close_packet(t, h, what);
  if (pkt.empty()) return -EINVAL;
  sockaddr_storage dst{};
  // The packet's own family (an AF_INET6 socket's IPv4 peer is IPv4 on
  // the wire); a raw socket's "port" is its protocol or 0.
  const socklen_t dlen = program_addr({t.local, 0}, t.local.family, &dst);
  if (real().sendto(raw, pkt.data(), pkt.size(), 0, reinterpret_cast<sockaddr*>(&dst), dlen) < 0)
    return -errno;
  // Loopback delivers it inside the send or in the softirq right after
  // (ksoftirqd's on a busy host); the stack's lock is held meanwhile.
  for (int i = 0; i < 400; i++) {
    tcp_info ti{};
    socklen_t len = sizeof ti;
    if (real().getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0) return -errno;
    if (ti.tcpi_state == to) return 0;
    if (ti.tcpi_state != from) return -ECONNRESET;
    usleep(500);
  }
  return -ETIMEDOUT;
}

// Our FIN, which went, marked sent after the bytes: shutdown in repair
// mode with the send queue selected does that without sending, as CRIU
// does (the kernel's timer sends it again). The socket is in FIN-WAIT-1,
// or LAST-ACK after the peer's. 0 or -errno.
int give_own_fin(int fd) {
  if (real().shutdown(fd, SHUT_WR) < 0) return -errno;
  tcp_info ti{};
  socklen_t len = sizeof ti;
  if (real().getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0) return -errno;
  return ti.tcpi_state == TCP_FIN_WAIT1 || ti.tcpi_state == TCP_LAST_ACK ? 0 : -EPROTO;
}

// repair_into_kernel's work; raw: give_peer's socket.
int repair(int fd, int family, const net::tcp::FourTuple& t, const net::tcp::Handover& h, int raw) {
  if (int r = tcp_int(fd, TCP_REPAIR, TCP_REPAIR_ON); r < 0) return r;
  if (int r = prepare(fd, family, t, h); r < 0) {
    tcp_int(fd, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
    tcp_int(fd, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP);
    return r;
  }
  // ESTABLISHED at once, nothing sent.
  sockaddr_storage peer{};
  const socklen_t plen = program_addr({t.remote, t.remote_port}, family, &peer);
  int r = real().connect(fd, reinterpret_cast<sockaddr*>(&peer), plen) < 0 ? -errno : 0;
  if (r == 0) r = fill(fd, h);
  // CLOSING: ours, then the peer's FIN; else the peer's FIN (CLOSE-WAIT),
  // ours (FIN-WAIT-1, LAST-ACK), then the peer's ACK of it (FIN-WAIT-2,
  // or closed: TIME-WAIT's socket).
  using net::tcp::PeerClose;
  if (r == 0 && h.ours_first) r = give_own_fin(fd);
  if (r == 0 && h.fin)
    r = h.ours_first ? give_peer(fd, raw, t, h, PeerClose::kFin, TCP_FIN_WAIT1, TCP_CLOSING)
                     : give_peer(fd, raw, t, h, PeerClose::kFin, TCP_ESTABLISHED, TCP_CLOSE_WAIT);
  if (r == 0 && h.fin_sent && !h.ours_first) r = give_own_fin(fd);
  if (r == 0 && h.fin_acked)
    r = h.fin ? give_peer(fd, raw, t, h, PeerClose::kAckOfOurs, TCP_LAST_ACK, TCP_CLOSE)
              : give_peer(fd, raw, t, h, PeerClose::kAckOfOurs, TCP_FIN_WAIT1, TCP_FIN_WAIT2);
  if (r < 0) {
    // Connected in repair mode: no queue selected, the socket stays so
    // (sends EINVAL, receives EPERM, a silent close) rather than go live
    // beside the rings' connection.
    tcp_int(fd, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
    return r;
  }
  if ((r = tcp_int(fd, TCP_REPAIR, TCP_REPAIR_OFF)) < 0) return r;
  send_unsent(fd, h.unsent);
  // Ours not sent yet: it follows the bytes as the kernel's own.
  if (h.fin_queued && real().shutdown(fd, SHUT_WR) < 0)
    SS_WARN("fd %d: the kernel took the connection but not its shutdown: %s", fd,
            std::strerror(errno));
  return 0;
}

}  // namespace

int repair_into_kernel(int fd, int family, const net::tcp::FourTuple& t,
                       const net::tcp::Handover& h) {
  // A connection whose FIN or ACK cannot follow stays on the rings.
  const bool packet = h.fin || h.fin_acked;
  const int raw = packet ? real().socket(t.local.family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW) : -1;
  if (packet && raw < 0) return -errno;
  const int r = repair(fd, family, t, h, raw);
  if (raw >= 0) real().close(raw);
  return r;
}

}  // namespace ss::vma::preload
