// The data calls of the VMA preload: recv, recvfrom, recvmsg, recvmmsg,
// read, readv (and fortify's __recv_chk, __recvfrom_chk, __read_chk),
// send, sendto, sendmsg, sendmmsg, write, writev, sendfile and connect; an
// offloaded TCP connection's go to its TcpOffload. A descriptor without an
// offloaded path costs one lock-free fd-table lookup before libc (two for
// a recorded socket not offloaded). A recorded UDP socket that is not bound
// yet gets its offloaded path after the call that binds it implicitly (its
// first send, connect).
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>

#include <mellanox/vma_extra.h>

#include "core/base/fd_table.h"
#include "core/base/interruptible_poll.h"
#include "core/base/msghdr_of.h"
#include "core/prov/sock_addr.h"
#include "interpose/export.h"
#include "interpose/fortify_receives.h"
#include "interpose/mmsg.h"
#include "interpose/passed_fds.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "interpose/sendfile_copy.h"
#include "interpose/edge.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/socket_flags.h"

using ss::interpose::real;
namespace vp = ss::vma::preload;

namespace {

// fd's record when the preload has one (nullptr: straight to libc).
std::shared_ptr<vp::SocketRecord> record(int fd) {
  ss::FdTable& t = ss::FdTable::instance();
  if (t.kind(fd) != ss::FdKind::kVmaSocket) return nullptr;
  return t.get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket);
}

// A signal handler's call on an offloaded connection its thread was
// inside the library for: EAGAIN, never the kernel socket (not
// connected: ENOTCONN, and SIGPIPE for a send, which kills the program).
bool out_of_reach(const std::shared_ptr<vp::SocketRecord>& s) {
  if (!s || !s->tcp_out_of_reach()) return false;
  errno = EAGAIN;
  return true;
}

ssize_t off_recv(vp::SocketRecord& s, msghdr* m, int flags) {
  return ss::interpose::edge_call([&] { return s.offload()->recvmsg(s, m, flags); });
}
ssize_t off_send(vp::SocketRecord& s, const msghdr* m, int flags) {
  return ss::interpose::edge_call([&] { return s.offload()->sendmsg(s, m, flags); });
}
// An offloaded TCP connection's (tcp_offload.h); the kernel socket's
// once the connection was handed to it during the call.
ssize_t tcp_recv(vp::TcpOffload& t, int fd, msghdr* m, int flags) {
  const msghdr as_given = *m;  // the call may have set its lengths
  const ssize_t r = ss::interpose::edge_call([&] { return t.recvmsg(fd, m, flags); });
  if (r >= 0 || !t.moved()) return r;
  *m = as_given;
  return real().recvmsg(fd, m, flags);
}
ssize_t tcp_send(vp::TcpOffload& t, int fd, const msghdr* m, int flags) {
  const ssize_t r = ss::interpose::edge_call([&] { return t.sendmsg(fd, m, flags); });
  return r < 0 && t.moved() ? real().sendmsg(fd, m, flags) : r;
}

// After a kernel call that may have bound fd (a send, connect).
void maybe_bound(vp::SocketRecord* s, int fd) {
  if (s && !s->offload() && s->protocol == IPPROTO_UDP)
    ss::interpose::edge_quiet("send", fd, [&] { vp::socket_bound(fd); });
}

// Whether a receive on s, not offloaded, must wait here rather than in the
// kernel: it would block, and s may still be offloaded (decided "vma", no
// port yet). Another thread's first send binds such a socket and puts its
// port on the rings, where a call asleep on the kernel socket never sees
// the datagrams (sockperf's under-load client receives in one thread
// before its other thread's first send).
bool awaits_offload(vp::SocketRecord& s, int fd, int flags) {
  return !s.offload() && !vp::nonblocking(fd, flags) && !s.kernel_served();
}

// The wait of awaits_offload(): the kernel socket looked at in slices of
// 20 ms, until a datagram comes there or the socket is offloaded (then
// the offloaded receive), with the kernel's SO_RCVTIMEO and signal rules.
ssize_t recv_awaiting_offload(vp::SocketRecord& s, int fd, msghdr* m, int flags) {
  using clock = std::chrono::steady_clock;
  constexpr int kSliceMs = 20;
  const int timeout = vp::rcv_timeout_ms(fd);
  const clock::time_point end = clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    const ssize_t r = real().recvmsg(fd, m, flags | MSG_DONTWAIT);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return r;
    if (s.offload()) return off_recv(s, m, flags);
    if (s.kernel_served()) return real().recvmsg(fd, m, flags);  // the kernel's for good
    int slice = kSliceMs;
    if (timeout >= 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - clock::now()).count();
      if (left <= 0) {
        errno = EAGAIN;
        return -1;
      }
      if (left < slice) slice = static_cast<int>(left);
    }
    pollfd p{fd, POLLIN, 0};
    if (ss::interruptible_poll(&p, 1, slice, timeout < 0) == -EINTR) {
      errno = EINTR;
      return -1;
    }
  }
}

// A receive on s through msghdr m: offloaded, or waiting for it.
ssize_t recv_on(vp::SocketRecord& s, int fd, msghdr* m, int flags) {
  return s.offload() ? off_recv(s, m, flags) : recv_awaiting_offload(s, fd, m, flags);
}

ssize_t recv_path(int fd, msghdr* m, int flags) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr) return tcp_recv(*t, fd, m, flags);
  if (!s || (!s->offload() && !awaits_offload(*s, fd, flags))) return real().recvmsg(fd, m, flags);
  return recv_on(*s, fd, m, flags);
}

// A recorded UDP socket decided "vma" and not bound yet is bound before
// its first send, as the send would bind it (a wildcard address, an
// ephemeral port), through the interposed bind(), which gives it its
// offloaded path: its port is on the rings before a reply can come. Left
// to the kernel's autobind, the reply raced the rings' set-up (the XDP
// program attached to the netdev meanwhile) and could be lost.
void bind_before_send(vp::SocketRecord* s, int fd) {
  if (s && !s->offload() && s->protocol == IPPROTO_UDP &&
      s->decision().wanted == ss::vma::Transport::kVma && !s->kernel_served())
    ss::prov::bind_if_unbound(fd);
}

// Whether a dummy send (VMA_SND_FLAGS_DUMMY) on fd has an offloaded path
// to take it (a socket not bound yet bound first). Else the call fails
// with EINVAL, as libvma fails a dummy on any descriptor it does not
// offload (the kernel would send it).
bool dummy_path(vp::SocketRecord* s, int fd) {
  bind_before_send(s, fd);
  if (s && s->offload()) return true;
  errno = EINVAL;
  return false;
}

// Each offloaded TCP connection a message passes (SCM_RIGHTS) goes to
// its kernel socket first: the receiving process has only that.
void ready_passed(int fd) {
  if (const auto s = record(fd)) s->tcp_for_another_process("passed to another process");
}

ssize_t send_path(int fd, const msghdr* m, int flags) {
  const auto s = record(fd);
  if (!s)
    ss::interpose::for_each_passed_fd(m, ready_passed);  // unix sockets carry them, never ours
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr) {
    if (flags & VMA_SND_FLAGS_DUMMY) {  // UDP only, as libvma
      errno = EINVAL;
      return -1;
    }
    return tcp_send(*t, fd, m, flags);
  }
  if ((flags & VMA_SND_FLAGS_DUMMY) && !dummy_path(s.get(), fd)) return -1;
  bind_before_send(s.get(), fd);
  if (s && s->offload()) return off_send(*s, m, flags);
  const ssize_t r = real().sendmsg(fd, m, flags);
  if (r >= 0) maybe_bound(s.get(), fd);
  return r;
}

}  // namespace

SS_PRELOAD_EXPORT ssize_t recvmsg(int fd, msghdr* m, int flags) { return recv_path(fd, m, flags); }

// An offloaded socket's batch: each entry through its offloaded path (the
// rings, then its kernel socket), with the kernel's rules (interpose/mmsg.h);
// an error after the first datagram is kept for the socket's next receive
// (SocketRecord::late_error).
SS_PRELOAD_EXPORT int recvmmsg(int fd, mmsghdr* v, unsigned int vlen, int flags, timespec* tmo) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  vp::TcpOffload* t = s ? s->tcp() : nullptr;
  if (!s || (!s->offload() && !t)) return real().recvmmsg(fd, v, vlen, flags, tmo);
  if (tmo && !ss::interpose::program_writable(tmo, sizeof *tmo)) {
    errno = EFAULT;  // the kernel reads it first
    return -1;
  }
  int late = 0;
  const int r = ss::interpose::recvmmsg_each(v, vlen, flags, tmo, &late, [&](msghdr* m, int f) {
    // The entry, msg_len too (msg_hdr is its first member).
    if (!ss::interpose::program_writable(m, sizeof(mmsghdr))) {
      errno = EFAULT;
      return ssize_t{-1};
    }
    return t ? tcp_recv(*t, fd, m, f) : off_recv(*s, m, f);
  });
  if (late) s->late_error.store(late, std::memory_order_relaxed);
  return r;
}

SS_PRELOAD_EXPORT int sendmmsg(int fd, mmsghdr* v, unsigned int vlen, int flags) {
  const auto s = record(fd);
  if (!s) ss::interpose::for_each_passed_fd(v, vlen, ready_passed);
  if (out_of_reach(s)) return -1;
  if ((flags & VMA_SND_FLAGS_DUMMY) && !dummy_path(s.get(), fd)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr)
    return ss::interpose::sendmmsg_each(
        v, vlen, flags, [&](const msghdr* m, int f) { return tcp_send(*t, fd, m, f); });
  if (vlen) bind_before_send(s.get(), fd);
  if (!s || !s->offload()) {
    const int r = real().sendmmsg(fd, v, vlen, flags);
    if (r > 0) maybe_bound(s.get(), fd);
    return r;
  }
  return ss::interpose::sendmmsg_each(v, vlen, flags,
                                      [&](const msghdr* m, int f) { return off_send(*s, m, f); });
}

SS_PRELOAD_EXPORT ssize_t recvfrom(int fd, void* buf, size_t len, int flags, sockaddr* from,
                                   socklen_t* fromlen) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr) {
    iovec iov;
    msghdr m = ss::one_buffer(&iov, buf, len, nullptr, 0);
    const ssize_t r = tcp_recv(*t, fd, &m, flags);
    if (r >= 0 && from && fromlen && ss::interpose::program_writable(fromlen, sizeof *fromlen))
      *fromlen = 0;  // TCP names no source
    return r;
  }
  if (!s || (!s->offload() && !awaits_offload(*s, fd, flags)))
    return real().recvfrom(fd, buf, len, flags, from, fromlen);
  if (from && fromlen && !ss::interpose::program_writable(fromlen, sizeof *fromlen)) {
    errno = EFAULT;
    return -1;
  }
  iovec iov;
  msghdr m = ss::one_buffer(&iov, buf, len, from, from && fromlen ? *fromlen : 0);
  const ssize_t r = recv_on(*s, fd, &m, flags);
  if (r >= 0 && from && fromlen) *fromlen = m.msg_namelen;
  return r;
}

SS_PRELOAD_EXPORT ssize_t recv(int fd, void* buf, size_t len, int flags) {
  return recvfrom(fd, buf, len, flags, nullptr, nullptr);
}

SS_PRELOAD_EXPORT ssize_t read(int fd, void* buf, size_t len) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr) {
    iovec iov;
    msghdr m = ss::one_buffer(&iov, buf, len, nullptr, 0);
    return tcp_recv(*t, fd, &m, 0);
  }
  if (!s || (!s->offload() && !awaits_offload(*s, fd, 0))) return real().read(fd, buf, len);
  iovec iov;
  msghdr m = ss::one_buffer(&iov, buf, len, nullptr, 0);
  return recv_on(*s, fd, &m, 0);
}

SS_PRELOAD_EXPORT ssize_t readv(int fd, const iovec* iov, int n) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr; t && n >= 0) {
    msghdr m = ss::iov_only(iov, n);
    return tcp_recv(*t, fd, &m, 0);
  }
  if (!s || n < 0 || (!s->offload() && !awaits_offload(*s, fd, 0))) return real().readv(fd, iov, n);
  msghdr m = ss::iov_only(iov, n);
  return recv_on(*s, fd, &m, 0);
}

SS_PRELOAD_FORTIFY_RECEIVES

SS_PRELOAD_EXPORT ssize_t sendmsg(int fd, const msghdr* m, int flags) {
  return send_path(fd, m, flags);
}

SS_PRELOAD_EXPORT ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to,
                                 socklen_t tolen) {
  iovec iov;
  const msghdr m = ss::one_buffer(&iov, buf, len, to, to ? tolen : 0);
  return send_path(fd, &m, flags);
}

SS_PRELOAD_EXPORT ssize_t send(int fd, const void* buf, size_t len, int flags) {
  return sendto(fd, buf, len, flags, nullptr, 0);
}

SS_PRELOAD_EXPORT ssize_t write(int fd, const void* buf, size_t len) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr) {
    iovec iov;
    const msghdr m = ss::one_buffer(&iov, buf, len, nullptr, 0);
    return tcp_send(*t, fd, &m, 0);
  }
  if (!s || !s->offload()) return real().write(fd, buf, len);
  iovec iov;
  const msghdr m = ss::one_buffer(&iov, buf, len, nullptr, 0);
  return off_send(*s, &m, 0);
}

SS_PRELOAD_EXPORT ssize_t writev(int fd, const iovec* iov, int n) {
  const auto s = record(fd);
  if (out_of_reach(s)) return -1;
  if (vp::TcpOffload* t = s ? s->tcp() : nullptr; t && n >= 0) {
    const msghdr m = ss::iov_only(iov, n);
    return tcp_send(*t, fd, &m, 0);
  }
  if (!s || !s->offload() || n < 0) return real().writev(fd, iov, n);
  const msghdr m = ss::iov_only(iov, n);
  return off_send(*s, &m, 0);
}

// sendfile to an offloaded TCP connection: the file's bytes through its
// send (interpose/sendfile_copy.h); to anything else, the kernel's.
SS_PRELOAD_EXPORT ssize_t sendfile(int out, int in_fd, off_t* offset, size_t count) noexcept {
  const auto s = record(out);
  if (out_of_reach(s)) return -1;
  vp::TcpOffload* t = s ? s->tcp() : nullptr;
  if (!t) return real().sendfile(out, in_fd, offset, count);
  return ss::interpose::edge_call([&] {
    return ss::interpose::sendfile_copy(in_fd, offset, count, [&](const void* buf, size_t n) {
      iovec iov;
      const msghdr m = ss::one_buffer(&iov, buf, n, nullptr, 0);
      return tcp_send(*t, out, &m, 0);
    });
  });
}

SS_PRELOAD_EXPORT ssize_t sendfile64(int out, int in_fd, off_t* offset, size_t count) noexcept {
  return sendfile(out, in_fd, offset, count);
}

SS_PRELOAD_EXPORT int connect(int fd, const sockaddr* to, socklen_t len) {
  const auto s = record(fd);
  if (out_of_reach(s)) {
    errno = EALREADY;  // connected or connecting on the rings
    return -1;
  }
  if (s && s->protocol == IPPROTO_TCP) {  // the rings' connection, or the kernel's
    int rc = 1;
    ss::interpose::edge_quiet("connect", fd, [&] { rc = s->connect_tcp(to, len); });
    if (rc <= 0) {
      if (rc == 0) return 0;
      errno = -rc;
      return -1;
    }
  }
  const int r = real().connect(fd, to, len);
  if (r < 0) return r;
  maybe_bound(s.get(), fd);
  if (s && s->offload())
    ss::interpose::edge_quiet("connect", fd, [&] {
      ss::interpose::BusyScope busy;
      if (auto* o = s->offload()) o->connect(to, len);
    });
  return r;
}
