// A netdev's packet socket for sending whole Ethernet frames, each behind
// a virtio-net header (PACKET_VNET_HDR): a frame may carry several TCP
// segments for the netdev's TSO or the kernel's GSO to cut, and leave its
// checksum partial for the netdev or the kernel to finish. Bound with
// protocol 0: it receives nothing.
//
// Where the rings copy anyway (AF_XDP without zero-copy: each frame an
// skb of a system call, and on veth the peer's receive path run per
// frame), this sends what TCP has in one call and one skb per 64 KiB.
// The kernel picks each packet's tx queue (by CPU where XPS is set), not
// one bound queue as AF_XDP's.
#pragma once
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/base/api.h"

namespace ss::net {

class PacketTx {
 public:
  // On the calling thread's network namespace's netdev `ifindex`: 0, or
  // -errno (-EPERM without CAP_NET_RAW; -ENOPROTOOPT where the kernel
  // has no virtio-net headers on packet sockets).
  SS_API static int open(int ifindex, std::unique_ptr<PacketTx>* out);
  // The socket of another process's open() (passed to this one, which may
  // not make one): sends through a dup of fd. 0 or -errno.
  SS_API static int adopt(int fd, std::unique_ptr<PacketTx>* out);
  SS_API ~PacketTx();
  PacketTx(const PacketTx&) = delete;
  PacketTx& operator=(const PacketTx&) = delete;

  // Sends each message as one packet (its iovecs gather a virtio_net_hdr,
  // then the frame), without blocking: how many the kernel took. A packet
  // it refuses (no memory, a full device queue, the netdev down) is lost
  // as on the wire: TCP sends it again.
  size_t send(std::span<mmsghdr> packets);
  int fd() const { return fd_; }

 private:
  explicit PacketTx(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ss::net
