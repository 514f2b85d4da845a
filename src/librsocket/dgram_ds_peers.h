// The UDP-assisted exchange of upstream's datagram rsockets (docs/protocol.md,
// "Datagram rsockets over verbs"): until a destination's UD QPN is known,
// datagrams to it go over the UDP socket behind a DsUdpHeader carrying our
// QPN; a receiver answers a data datagram with a header-only control one
// carrying its own, and either side, on a header from a source, learns
// (or relearns, when it changed) which QP serves that source. This table
// holds what was learned, keyed by the source's UDP address (IP and port),
// bounded: a flood of forged sources evicts the oldest entries instead of
// growing it. No locking: its owner's.
#pragma once
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "librsocket/dgram_ds_wire.h"

namespace ss::rs {

struct DsPeer {
  sockaddr_storage udp;      // the destination as the application names it
  sockaddr_storage qp_addr;  // the IP address its QP is bound to
  uint32_t qpn;
  void* ah;  // the owner's address handle toward qp_addr; null until made
};

class DsPeers {
 public:
  explicit DsPeers(size_t capacity = 4096) : capacity_(capacity) {}

  // What a good DsUdpHeader from `src` asks of the receiver.
  struct Action {
    bool deliver;     // data: the payload after the header goes to the application
    bool reply_ctrl;  // data: answer `src` with our QPN (header only)
    bool learned;     // the entry for `src` is new or its QP changed: (re)make its ah
  };
  Action on_udp_header(const sockaddr* src, const DsUdpInfo& info);

  // The entry for destination `dst` (IP and port), or null before its
  // first header arrived.
  DsPeer* find(const sockaddr* dst);
  size_t size() const { return peers_.size(); }

 private:
  size_t capacity_;
  std::vector<DsPeer> peers_;  // oldest first
};

// True when `a` and `b` name the same IP address and port (IPv4 and
// v4-mapped IPv6 alike).
bool ds_same_endpoint(const sockaddr* a, const sockaddr* b);

}  // namespace ss::rs
