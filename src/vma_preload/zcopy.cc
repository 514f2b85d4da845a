// recvfrom_zcopy hands the program the UMEM frame itself: the datagram
// taken off the rings is held in the socket's HeldPackets and its payload
// described by a vma_packets_t written into the program's buffer, with
// MSG_VMA_ZCOPY set; free_packets gives the frame back. On a TCP
// connection of the rings it is the in-order data, one packet per view of
// a frame (a segment, or small ones gathered), as many as the buffer has
// records for; their bytes stay out of the receive window until
// free_packets (libvma's back-pressure). A datagram from the kernel socket
// (and every one of a socket the rings do not serve, a connection the
// kernel carries, a peek) is copied into the buffer, MSG_VMA_ZCOPY
// cleared, as libvma does for its OS path.
#include "vma_preload/zcopy.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/msghdr_of.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "interpose/edge.h"
#include "vma_preload/socket_record.h"

namespace ss::vma::preload {

std::shared_ptr<SocketRecord> extra_api_socket(int fd) {
  auto s = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket);
  if (!s || s->decision().wanted != Transport::kVma ||
      (s->protocol == IPPROTO_TCP && !s->tcp_wanted())) {
    errno = EINVAL;
    return nullptr;
  }
  return s;
}

std::shared_ptr<SocketRecord> extra_api_udp_socket(int fd) {
  auto s = extra_api_socket(fd);
  if (s && s->protocol != IPPROTO_UDP) {
    errno = EINVAL;
    return nullptr;
  }
  return s;
}

namespace {

// The most iovecs a record of ours carries (one): a record naming more
// is not one we wrote.
constexpr size_t kMaxIovs = 64;

// The packet ids of free_packets' `count` records at pkts: fixed 16-byte
// records (UDP, as libvma walks them), or with_iovs each followed by its
// sz_iov iovecs (TCP). -EFAULT for a record the program cannot read,
// -ENOENT for one no packet of ours could have written.
int packet_ids(const vma_packet_t* pkts, size_t count, bool with_iovs,
               std::vector<const void*>* ids) {
  if (count && !pkts) return -ENOENT;
  const auto* at = reinterpret_cast<const uint8_t*>(pkts);
  for (size_t i = 0; i < count; i++) {
    if (!interpose::program_readable(at, sizeof(vma_packet_t))) return -EFAULT;
    const void* id;  // packed records: through memcpy
    std::memcpy(&id, at + offsetof(vma_packet_t, packet_id), sizeof id);
    size_t iovs = 0;
    if (with_iovs) std::memcpy(&iovs, at + offsetof(vma_packet_t, sz_iov), sizeof iovs);
    if (iovs > kMaxIovs) return -ENOENT;
    ids->push_back(id);
    at += sizeof(vma_packet_t) + iovs * sizeof(iovec);
  }
  return 0;
}

// A TCP connection's receive without a copy: the views taken, held under
// new ids, described in buf (len bytes: as many one-iovec records as fit).
int tcp_zcopy(SocketRecord& s, TcpOffload& t, int fd, void* buf, size_t len, int in, int* flags,
              socklen_t* fromlen) {
  constexpr size_t kRecord = sizeof(vma_packet_t) + sizeof(iovec);
  if (!interpose::program_writable(buf, len)) {
    errno = EFAULT;
    return -1;
  }
  std::vector<mem::Buffer> views;
  ssize_t r;
  {
    interpose::BusyScope busy;  // a handler's call meanwhile is the kernel's
    r = t.recv_lent(fd, in, (len - sizeof(vma_packets_t)) / kRecord, &views);
  }
  if (r < 0 && t.moved())  // handed to the kernel during the call
    return static_cast<int>(interpose::real().recvfrom(fd, buf, len, in, nullptr, nullptr));
  if (r < 0) return -1;
  if (fromlen) *fromlen = 0;  // TCP names no source
  auto* out = static_cast<uint8_t*>(buf);
  const size_t count = views.size();
  std::memcpy(out + offsetof(vma_packets_t, n_packet_num), &count, sizeof count);
  uint8_t* rec = out + offsetof(vma_packets_t, pkts);
  HeldPackets& held = s.rx_extras.held;
  for (mem::Buffer& v : views) {
    void* id = held.new_id();
    const size_t one = 1;
    const iovec iov{v.data(), v.size()};
    std::memcpy(rec + offsetof(vma_packet_t, packet_id), &id, sizeof id);
    std::memcpy(rec + offsetof(vma_packet_t, sz_iov), &one, sizeof one);
    std::memcpy(rec + offsetof(vma_packet_t, iov), &iov, sizeof iov);
    held.hold(id, net::Datagram{std::move(v), {}});
    rec += kRecord;
  }
  if (count) *flags |= MSG_VMA_ZCOPY;
  return static_cast<int>(r);
}

int recvfrom_zcopy(int fd, void* buf, size_t len, int* flags, sockaddr* from, socklen_t* fromlen) {
  if (!flags) {
    errno = EINVAL;
    return -1;
  }
  const int in = *flags & ~(MSG_VMA_ZCOPY | MSG_VMA_ZCOPY_FORCE);
  *flags &= ~MSG_VMA_ZCOPY;
  const auto s = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket);
  UdpOffload* o = s ? s->offload() : nullptr;
  TcpOffload* t = s && !(in & MSG_PEEK) ? s->tcp() : nullptr;
  if (!o && !t) {
    if (s && s->tcp()) return static_cast<int>(recv(fd, buf, len, in));  // a peek: ours, copied
    return static_cast<int>(interpose::real().recvfrom(fd, buf, len, in, from, fromlen));
  }
  if (!buf || len < kZcopyOnePacket) {  // checked first: nothing is taken off the rings
    errno = ENOBUFS;
    return -1;
  }
  if (t) return tcp_zcopy(*s, *t, fd, buf, len, in, flags, fromlen);
  iovec iov;
  msghdr m = one_buffer(&iov, buf, len, from, from && fromlen ? *fromlen : 0);
  net::Datagram d;
  const ssize_t r = o->recvmsg(*s, &m, in, &d, (*flags & MSG_VMA_ZCOPY_FORCE) != 0);
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
  const auto s = extra_api_socket(fd);
  if (!s) return -1;
  if (s->inherited()) {  // the frames are the parent's: none is this process's to free
    errno = ENOENT;
    return -1;
  }
  const bool tcp = s->protocol == IPPROTO_TCP;
  std::vector<const void*> ids;
  size_t bytes = 0;
  int r = packet_ids(pkts, count, tcp, &ids);
  if (r == 0) r = s->rx_extras.held.release(ids, &bytes);
  if (r < 0) {
    errno = -r;
    return -1;
  }
  if (TcpOffload* t = tcp ? s->tcp() : nullptr) t->give_back(bytes);  // the window reopens
  return 0;
}

int register_recv_callback(int fd, vma_recv_callback_t cb, void* context) {
  const auto s = extra_api_socket(fd);
  if (!s) return -1;
  s->rx_extras.callback.set(cb, context);
  return 0;
}

// The entries as the table holds them: -1/errno, never an exception.
int entry_recvfrom_zcopy(int fd, void* buf, size_t len, int* flags, sockaddr* from,
                         socklen_t* fromlen) {
  return interpose::edge_call([&] { return recvfrom_zcopy(fd, buf, len, flags, from, fromlen); });
}
int entry_free_packets(int fd, vma_packet_t* pkts, size_t count) {
  return interpose::edge_call([&] { return free_packets(fd, pkts, count); });
}
int entry_register_recv_callback(int fd, vma_recv_callback_t cb, void* context) {
  return interpose::edge_call([&] { return register_recv_callback(fd, cb, context); });
}

}  // namespace

void add_rx_entries(vma_api_t* given) {
  given->recvfrom_zcopy = entry_recvfrom_zcopy;
  given->free_packets = entry_free_packets;
  given->register_recv_callback = entry_register_recv_callback;
}

}  // namespace ss::vma::preload
