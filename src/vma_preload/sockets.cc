// The socket calls of libvma.so's bookkeeping (listen_calls.cc listens
// and accepts): socket, bind and close (the decision, the vmastat block,
// the offloaded path at bind), getsockopt and setsockopt (the Extra API
// and the SO_VMA_* options; IPPROTO_IP/IPV6 options of a recorded socket
// through udp_multicast.h); getsockname, getpeername, shutdown and
// SO_ERROR of an offloaded TCP connection. The data calls are
// data_calls.cc. glibc has no _chk variant of these.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <mellanox/vma_extra.h>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/own_calls.h"
#include "interpose/connected_options.h"
#include "interpose/dup_share.h"
#include "interpose/epoll_glue.h"
#include "interpose/export.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "interpose/edge.h"
#include "vma_preload/extra_api.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/tcp_info_linux.h"
#include "vma_preload/epoll_face.h"
#include "vma_preload/start.h"
#include "vma_preload/wire_addr.h"
#include "vma_preload/extra_sockopts.h"

using ss::interpose::real;
namespace vp = ss::vma::preload;

namespace {

// fd's offloaded TCP connection, read once (another thread may hand it to
// the kernel meanwhile: the record keeps the object alive through the
// call), or none: the kernel socket's.
struct TcpCall {
  std::shared_ptr<vp::SocketRecord> rec;
  vp::TcpOffload* t = nullptr;
  explicit operator bool() const { return t != nullptr; }
};
TcpCall tcp_record(int fd) {
  ss::FdTable& t = ss::FdTable::instance();
  if (t.kind(fd) != ss::FdKind::kVmaSocket) return {};
  TcpCall c;
  c.rec = t.get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket);
  c.t = c.rec ? c.rec->tcp() : nullptr;
  if (c.t && c.t->moved()) c.t = nullptr;
  return c;
}

int tcp_name(int fd, bool peer, sockaddr* out, socklen_t* len) {
  const auto s = tcp_record(fd);
  if (!s) return peer ? real().getpeername(fd, out, len) : real().getsockname(fd, out, len);
  return ss::interpose::edge_call([&] {
    sockaddr_storage a;
    const int n = s.t->name(peer, &a);
    if (n < 0) {
      errno = -n;
      return -1;
    }
    if (const int err = vp::give_name(a, static_cast<socklen_t>(n), out, len); err < 0) {
      errno = -err;
      return -1;
    }
    return 0;
  });
}

}  // namespace

SS_PRELOAD_EXPORT int getsockname(int fd, sockaddr* addr, socklen_t* len) {
  return tcp_name(fd, false, addr, len);
}

SS_PRELOAD_EXPORT int getpeername(int fd, sockaddr* addr, socklen_t* len) {
  return tcp_name(fd, true, addr, len);
}

SS_PRELOAD_EXPORT int shutdown(int fd, int how) {
  const auto s = tcp_record(fd);
  if (!s) return real().shutdown(fd, how);
  return ss::interpose::edge_call([&] {
    const int r = s.t->shutdown(how);
    if (r == 0) return 0;
    if (s.t->moved()) return real().shutdown(fd, how);  // handed to the kernel meanwhile
    errno = -r;
    return -1;
  });
}

SS_PRELOAD_EXPORT int socket(int domain, int type, int protocol) {
  vp::start();
  const int fd = real().socket(domain, type, protocol);
  if (fd >= 0)
    ss::interpose::edge_quiet("socket", fd, [&] {
      vp::drop_stale(fd);
      vp::track_socket(fd, domain, type, protocol);
    });
  return fd;
}

SS_PRELOAD_EXPORT int bind(int fd, const sockaddr* addr, socklen_t len) {
  const int r = real().bind(fd, addr, len);
  if (r == 0 && ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    ss::interpose::edge_quiet("bind", fd, [&] { vp::socket_bound(fd); });
  return r;
}

SS_PRELOAD_EXPORT int close(int fd) {
  // One of our epoll sets (epoll_calls.cc): its members leave with it. A
  // socket leaves the sets it is in when its record goes (weak members).
  if (!ss::interpose::in_own_call() && ss::FdTable::instance().kind(fd) == ss::FdKind::kKernel &&
      ss::interpose::epoll_fd(fd))
    return ss::interpose::close_epoll(vp::kEpollFace, fd);
  if (ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket) return vp::close_recorded(fd);
  if (ss::interpose::dups::held(fd)) {
    errno = EBADF;  // closed already as the program sees it; kept for a duplicate
    return -1;
  }
  return real().close(fd);
}

SS_PRELOAD_EXPORT int getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  // libvma answers on fd -1 only (reference §1); a real fd's SO_VMA_GET_API
  // is the kernel's to refuse (ENOPROTOOPT).
  if (fd == -1 && level == SOL_SOCKET && name == SO_VMA_GET_API && len &&
      *len >= sizeof(vma_api_t*)) {
    if (!val) {
      errno = EFAULT;
      return -1;
    }
    vp::start();
    return ss::interpose::edge_call([&] {
      *static_cast<vma_api_t**>(val) = vp::extra_api();
      *len = sizeof(vma_api_t*);
      return 0;
    });
  }
  if (level == SOL_SOCKET)
    if (int r; vp::extra_getsockopt(fd, name, val, len, &r)) return r;
  // The twin is not connected: what Linux answers from a connection's
  // state comes from the offloaded one.
  if (ss::interpose::answered_by_connection(level, name))
    if (const auto s = tcp_record(fd))
      return ss::interpose::edge_call([&] {
        sockaddr_storage peer{};
        const int n = s.t->name(true, &peer);
        return ss::interpose::connection_getsockopt(
            s.rec->family, peer, n < 0 ? 0 : static_cast<socklen_t>(n), level, name, val, len);
      });
  if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket);
        s && s->v6only_by_bind.load(std::memory_order_relaxed)) {
      const int rc = real().getsockopt(fd, level, name, val, len);  // the kernel's checks
      const int clear = 0;
      if (rc == 0 && ss::interpose::copy_to_program(val, &clear,
                                                    std::min<socklen_t>(*len, sizeof clear)) < 0) {
        errno = EFAULT;
        return -1;
      }
      return rc;
    }
  if (level == IPPROTO_TCP && name == TCP_INFO && val && len)
    if (const auto s = tcp_record(fd))
      return ss::interpose::edge_call([&] {
        if (!ss::interpose::program_writable(len, sizeof *len)) {
          errno = EFAULT;
          return -1;
        }
        if (static_cast<int>(*len) < 0) {
          errno = EINVAL;
          return -1;
        }
        // As long as the running kernel's struct (its size asked once of
        // this twin), zeros past what is known here.
        unsigned char out[512] = {};
        static const socklen_t kernel = [&] {
          socklen_t n = sizeof out;
          return real().getsockopt(fd, level, name, out, &n) < 0
                     ? static_cast<socklen_t>(sizeof(vp::LinuxTcpInfo))
                     : n;
        }();
        vp::LinuxTcpInfo info;
        s.t->info(&info);
        std::memset(out, 0, sizeof out);
        std::memcpy(out, &info, std::min<size_t>(sizeof info, kernel));
        const socklen_t n = std::min(*len, kernel);
        if (ss::interpose::copy_to_program(val, out, n) < 0) {
          errno = EFAULT;
          return -1;
        }
        *len = n;
        return 0;
      });
  if (level == SOL_SOCKET && name == SO_ERROR && val && len && *len >= sizeof(int))
    if (const auto s = tcp_record(fd))
      return ss::interpose::edge_call([&] {
        *static_cast<int*>(val) = s.t->take_error();
        *len = sizeof(int);
        return 0;
      });
  // An error recvmmsg kept (socket_record.h) is the socket's SO_ERROR.
  if (level == SOL_SOCKET && name == SO_ERROR && val && len && *len >= sizeof(int) &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket))
      if (const int e = s->take_late_error()) {
        *static_cast<int*>(val) = e;
        *len = sizeof(int);
        return 0;
      }
  return real().getsockopt(fd, level, name, val, len);
}

SS_PRELOAD_EXPORT int setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  if (level == SOL_SOCKET)
    if (int r; vp::extra_setsockopt(fd, name, val, len, &r)) return r;
  // Any other SO_VMA_* goes to the kernel, which refuses it (ENOPROTOOPT),
  // as libvma does on a socket it does not offload.
  if (level == SOL_SOCKET && name >= SO_VMA_USER_DATA && name <= SO_VMA_SHUTDOWN_RX &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    SS_DEBUG("setsockopt fd %d: SO_VMA_* option %d is not there; the kernel answers it", fd, name);
  // The TCP options of a socket of ours: the kernel socket checks the
  // value (its errno) and keeps it for getsockopt; an offloaded connection
  // acts on it, a listener of the rings gives it to what it accepts next.
  ss::net::tcp::Option o;
  int64_t v;
  if (vp::tcp_option_of(-1, level, name, 0, &o, &v) &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto rec =
            ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket)) {
      const int r = real().setsockopt(fd, level, name, val, len);
      int given;
      if (r == 0 && len >= sizeof given) {  // the kernel read it: readable
        std::memcpy(&given, val, sizeof given);
        if (o == ss::net::tcp::Option::kSndBuf)
          rec->sndbuf_set.store(true, std::memory_order_relaxed);
        if (o == ss::net::tcp::Option::kRcvBuf)
          rec->rcvbuf_set.store(true, std::memory_order_relaxed);
        vp::tcp_option_of(fd, level, name, given, &o, &v);
        ss::interpose::edge_call([&] {
          if (const auto s = tcp_record(fd))
            s.t->set_option(o, v);
          else if (vp::TcpListen* l = rec->listening())
            l->set_option(o, v);
          return 0;
        });
      }
      return r;
    }
  if (ss::interpose::refused_once_connected(level, name) && tcp_record(fd))
    return ss::interpose::refuse_on_connection(fd, level, name, val, len);
  if ((level == IPPROTO_IP || level == IPPROTO_IPV6) &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket))
      return vp::ip_setsockopt(*s, level, name, val, len);
  // A listener's SO_LINGER and flags: its connections take them
  // (options_to_inherit).
  if (level == SOL_SOCKET && (name == SO_LINGER || name == SO_REUSEADDR || name == SO_REUSEPORT) &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto rec = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket))
      if (vp::TcpListen* l = rec->listening()) {
        const int r = real().setsockopt(fd, level, name, val, len);
        if (r == 0) l->options_changed();
        return r;
      }
  return real().setsockopt(fd, level, name, val, len);
}
