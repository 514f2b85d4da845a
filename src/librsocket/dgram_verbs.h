// A datagram rsocket's verbs side (SLIPSTREAM_PROVIDER=verbs), upstream
// librdmacm's protocol: one UD QP per local address (core's UdQp), the
// UDP-assisted QPN exchange (dgram_ds_peers.h) over the rsocket's own UDP
// socket, then UD SENDs behind a DsHeader (dgram_ds_wire.h). Internally
// every function returns 0 / a count, or -errno. The owner (DgramSocket)
// serialises receives; sends may come from any thread. In a fork child
// the QPs stay the parent's (fork_child): every call needing them fails
// with EOPNOTSUPP there.
#pragma once
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/prov/verbs/ud_qp.h"
#include "librsocket/dgram_ds_peers.h"
#include "librsocket/dgram_wire.h"
#include "librsocket/fork.h"

namespace ss::rs {

// True when datagram rsockets run over verbs (the core provider setting).
bool dgram_verbs_enabled();

class DgramVerbs final : public fork::Unforkable, public std::enable_shared_from_this<DgramVerbs> {
 public:
  DgramVerbs(int fd, int domain) : fd_(fd), domain_(domain) {}
  ~DgramVerbs() override;
  DgramVerbs(const DgramVerbs&) = delete;
  DgramVerbs& operator=(const DgramVerbs&) = delete;

  // Makes sure a QP serves `dst` (rconnect, and each send): -ENODEV when no
  // RDMA device owns the local address toward it, -EOPNOTSUPP on iWARP.
  int prepare(const sockaddr* dst, socklen_t len);
  // After a bind to one address (not the wildcard): its QP now, so that a
  // later shortage of descriptors leaves the socket working, as a bound
  // UDP socket does. 0, or as prepare.
  int prepare_bound();
  // One datagram of `len` bytes to `dst`: a UD SEND once its QP is known,
  // else over UDP behind a DsUdpHeader. EMSGSIZE beyond what a UD message
  // takes (the port's MTU less the header).
  ssize_t send(const sockaddr* dst, socklen_t dlen, const iovec* iov, size_t iovcnt, size_t len,
               int os_flags);
  // The next good datagram, from the QPs then the UDP socket (exchange
  // headers handled on the way); -EAGAIN when none. `peer` (ss_family 0:
  // none): a connected socket's filter. Bad datagrams go to `drop`.
  ssize_t recv(msghdr* msg, int flags, const sockaddr_storage& peer,
               void (*drop)(void* ctx, DgramFault f), void* ctx);
  // A datagram a receive would deliver is queued on a QP (those it would
  // not are taken off, as recv does).
  bool readable(const sockaddr_storage& peer, void (*drop)(void* ctx, DgramFault f), void* ctx);
  // Takes exchange-only and bad datagrams off the head of the UDP socket
  // (learning from them, counting them), so that the socket is readable
  // only when a receive would deliver: a readiness that a receive then
  // answers with EAGAIN makes udpong resend a request, and the stale
  // reply to it later derails udpong's next exchange for good. True when
  // a datagram to deliver (or an error to report) is left at the head.
  bool settle_udp(void (*drop)(void* ctx, DgramFault f), void* ctx);
  // The QPs' event descriptors, each once (for the owner's wait set):
  // those not handed out before.
  std::vector<int> new_event_fds();
  // Asks every QP for an event on its next completion.
  void arm();

  // In a fork child (the owner's fork_child, from the fd table's child
  // handler, before any call): a lock a parent thread held is made free,
  // and the QPs (the parent's device objects, and queues both processes
  // map) are let go of, never used nor destroyed here: cut_loose() from
  // then on. Done there, not at the first call as for connections: it
  // only drops pointers, and a QP made while the fork happened, not yet
  // tracked, is cut loose too.
  void fork_child();
  // fork::Unforkable: counted in the child's one warning (its first call).
  bool leave_to_maker() override;
  bool cut_loose() const { return cut_loose_.load(std::memory_order_relaxed); }
  // SO_ERROR: EOPNOTSUPP once after the cut, else 0.
  int take_error() { return error_.exchange(0, std::memory_order_relaxed); }

 private:
  struct LocalQp {
    sockaddr_storage ip;
    std::unique_ptr<prov::verbs::UdQp> qp;
    bool fd_given = false;
  };
  // The local address toward `dst` (our bound one unless a wildcard or
  // loopback, then the kernel's route's), with our UDP port. mu_ held.
  int source_for(const sockaddr* dst, socklen_t len, sockaddr_storage* src);
  int bound_address(sockaddr_storage* s) const;  // getsockname's, IPv4-mapped unmapped
  // The QP of local address `src`, made at the first need. mu_ held.
  int qp_for(const sockaddr_storage& src, prov::verbs::UdQp** out);
  // Handles an exchange header from `src`; true when `buf`'s payload is to
  // be delivered (from *off on).
  bool on_udp(const uint8_t* buf, size_t n, const sockaddr* src, size_t* off, DgramFault* fault);
  // The head of `qp` that a receive would deliver (past its DsHeader of
  // `hl` bytes, from `src`); refused ones and, with a `peer`, others'
  // are taken off on the way. False when none.
  struct UdHead {
    const uint8_t* data;
    size_t len;
    size_t hl;
    sockaddr_storage src;
    socklen_t sl;
  };
  bool ud_head(prov::verbs::UdQp* qp, const sockaddr_storage& peer,
               void (*drop)(void* ctx, DgramFault f), void* ctx, UdHead* h);
  // recv's two halves: from the QPs, from the UDP socket; -EAGAIN when empty.
  ssize_t recv_ud(msghdr* msg, int flags, const sockaddr_storage& peer,
                  void (*drop)(void* ctx, DgramFault f), void* ctx);
  ssize_t recv_udp(msghdr* msg, int flags, void (*drop)(void* ctx, DgramFault f), void* ctx);
  // After a peek at the UDP socket's head (`buf`, `n` bytes from `src`): a
  // good data datagram stays queued (false; *off: where its payload
  // starts); anything else is taken off and acted on (true).
  bool take_unless_data(const uint8_t* buf, size_t n, const sockaddr* src, size_t* off,
                        void (*drop)(void* ctx, DgramFault f), void* ctx);

  const int fd_;
  const int domain_;
  std::mutex mu_;
  std::vector<LocalQp> qps_;  // mu_
  DsPeers peers_;             // mu_
  size_t next_qp_ = 0;        // receive: round robin over qps_ (owner's lock)
  bool udp_first_ = false;    // receive: whose turn it is to be looked at first (owner's lock)
  bool tracked_ = false;      // mu_: fork::track()ed (from the first QP on)
  std::atomic<bool> cut_loose_{false};
  std::atomic<int> error_{0};
};

}  // namespace ss::rs
