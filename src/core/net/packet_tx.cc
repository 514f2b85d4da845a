#include "core/net/packet_tx.h"

#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace ss::net {

namespace {

// A 64 KiB packet is about 70 KiB of socket memory until the driver frees
// it; a batch of them must not find the default SO_SNDBUF full.
constexpr int kSendBuffer = 8 << 20;
constexpr size_t kPerCall = 64;  // packets a sendmmsg takes

int on(int fd, int name) {
  const int one = 1;
  return setsockopt(fd, SOL_PACKET, name, &one, sizeof one) == 0 ? 0 : -errno;
}

}  // namespace

int PacketTx::open(int ifindex, std::unique_ptr<PacketTx>* out) {
  if (ifindex <= 0 || !out) return -EINVAL;
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  std::unique_ptr<PacketTx> tx(new PacketTx(fd));
  if (const int err = on(fd, PACKET_VNET_HDR); err < 0) return err;
  // Not PACKET_QDISC_BYPASS: its direct transmit drops a packet the
  // kernel would have to cut in software (a netdev without TSO, or with
  // checksum offload off).
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &kSendBuffer, sizeof kSendBuffer) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSendBuffer, sizeof kSendBuffer);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = 0;  // bound to the netdev for sending, no protocol: nothing received
  sll.sll_ifindex = ifindex;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) return -errno;
  *out = std::move(tx);
  return 0;
}

int PacketTx::adopt(int fd, std::unique_ptr<PacketTx>* out) {
  if (fd < 0 || !out) return -EINVAL;
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return -errno;
  out->reset(new PacketTx(own));
  return 0;
}

PacketTx::~PacketTx() { close(fd_); }

size_t PacketTx::send(std::span<mmsghdr> packets) {
  size_t next = 0, taken = 0;
  while (next < packets.size()) {
    const size_t n = std::min(kPerCall, packets.size() - next);
    const int r = sendmmsg(fd_, packets.data() + next, static_cast<unsigned>(n), MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    // Out of socket or device memory: the rest would fail one by one.
    if (r < 0 && (errno == EAGAIN || errno == ENOBUFS)) break;
    const size_t took = r > 0 ? static_cast<size_t>(r) : 0;
    taken += took;
    // The kernel stopped at a packet it refused: that one is lost, the
    // rest go on.
    next += took < n ? took + 1 : took;
  }
  return taken;
}

}  // namespace ss::net
