// recvfrom_zcopy hands the program the UMEM frame itself: the datagram
// taken off the rings is held in the socket's HeldPackets and its payload
// described by a vma_packets_t written into the program's buffer, with
// MSG_VMA_ZCOPY set; free_packets gives the frame back. A datagram from
// the kernel socket (and every one of a socket the rings do not serve) is
// copied into the buffer, MSG_VMA_ZCOPY cleared, as libvma does for its
// OS path.
#include "vma_preload/zcopy.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <memory>

#include "core/base/fd_table.h"
#include "core/base/msghdr_of.h"
#include "interpose/real.h"
#include "vma_preload/edge.h"
#include "vma_preload/kernel_socket.h"

namespace ss::vma::preload {

std::shared_ptr<KernelSocket> extra_api_udp_socket(int fd) {
  auto s = FdTable::instance().get<KernelSocket>(fd, FdKind::kVmaKernel);
  if (!s || s->protocol != IPPROTO_UDP || s->decision().wanted != Transport::kVma) {
    errno = EINVAL;
    return nullptr;
  }
  return s;
}

namespace {

int recvfrom_zcopy(int fd, void* buf, size_t len, int* flags, sockaddr* from, socklen_t* fromlen) {
  if (!flags) {
    errno = EINVAL;
    return -1;
  }
  const int in = *flags & ~(MSG_VMA_ZCOPY | MSG_VMA_ZCOPY_FORCE);
  *flags &= ~MSG_VMA_ZCOPY;
  const auto s = FdTable::instance().get<KernelSocket>(fd, FdKind::kVmaKernel);
  UdpOffload* o = s ? s->offload() : nullptr;
  if (!o) return static_cast<int>(interpose::real().recvfrom(fd, buf, len, in, from, fromlen));
  if (!buf || len < kZcopyOnePacket) {  // checked first: nothing is taken off the rings
    errno = ENOBUFS;
    return -1;
  }
  iovec iov;
  msghdr m = one_buffer(&iov, buf, len, from, from && fromlen ? *fromlen : 0);
  net::Datagram d;
  const ssize_t r = o->recvmsg(*s, &m, in, &d);
  if (r < 0) return -1;
  if (from && fromlen) *fromlen = m.msg_namelen;
  if (d.buf) {
    HeldPackets& held = s->rx_extras.held;
    void* id = held.new_id();
    write_one_packet(buf, id, d);
    held.hold(id, std::move(d));
    *flags |= MSG_VMA_ZCOPY;
  }
  return static_cast<int>(r);
}

int free_packets(int fd, vma_packet_t* pkts, size_t count) {
  const auto s = extra_api_udp_socket(fd);
  if (!s) return -1;
  if (in_fork_child()) {  // the frames are the parent's: none is this process's to free
    errno = ENOENT;
    return -1;
  }
  if (const int r = s->rx_extras.held.release(pkts, count); r < 0) {
    errno = -r;
    return -1;
  }
  return 0;
}

int register_recv_callback(int fd, vma_recv_callback_t cb, void* context) {
  const auto s = extra_api_udp_socket(fd);
  if (!s) return -1;
  s->rx_extras.callback.set(cb, context);
  return 0;
}

// The entries as the table holds them: -1/errno, never an exception.
int entry_recvfrom_zcopy(int fd, void* buf, size_t len, int* flags, sockaddr* from,
                         socklen_t* fromlen) {
  return edge_call([&] { return recvfrom_zcopy(fd, buf, len, flags, from, fromlen); });
}
int entry_free_packets(int fd, vma_packet_t* pkts, size_t count) {
  return edge_call([&] { return free_packets(fd, pkts, count); });
}
int entry_register_recv_callback(int fd, vma_recv_callback_t cb, void* context) {
  return edge_call([&] { return register_recv_callback(fd, cb, context); });
}

}  // namespace

void add_rx_entries(vma_api_t* given) {
  given->recvfrom_zcopy = entry_recvfrom_zcopy;
  given->free_packets = entry_free_packets;
  given->register_recv_callback = entry_register_recv_callback;
}

}  // namespace ss::vma::preload
