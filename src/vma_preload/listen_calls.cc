// Listening and accepting under libvma.so: listen is the kernel's (same-
// host peers) and the rings' (TcpListen); accept takes from either.
#include <sys/socket.h>

#include "core/base/fd_table.h"
#include "interpose/edge.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/tcp_listen.h"

using ss::interpose::real;
namespace vp = ss::vma::preload;

SS_PRELOAD_EXPORT int listen(int fd, int backlog) {
  if (ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket))
      return s->listen_tcp(backlog);
  return real().listen(fd, backlog);
}

SS_PRELOAD_EXPORT int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  if (ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket))
      if (vp::TcpListen* l = s->listening()) {
        const int r = ss::interpose::edge_call([&] { return l->accept(fd, addr, len, flags); });
        s->after_accept();
        return r;
      }
  return real().accept4(fd, addr, len, flags);
}

SS_PRELOAD_EXPORT int accept(int fd, sockaddr* addr, socklen_t* len) {
  return accept4(fd, addr, len, 0);
}
