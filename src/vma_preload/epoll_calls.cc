// epoll is not offloaded yet: the kernel's epoll sees only the kernel
// socket, so a program asleep there would never hear of a datagram on the
// rings. A socket entering an epoll set is therefore handed back to the
// kernel for good (KernelSocket::hand_back: its port unsteered, the rings'
// unread datagrams dropped, one log line, vmastat "Not offloaded"), and a
// socket in a set before its bind is never offloaded. The other epoll
// calls are libc's. (librspreload's EpollSet path, src/preload/epoll.cc,
// is the way to offload them; libvma(7), STATUS.)
#include <sys/epoll.h>

#include "core/base/fd_table.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "vma_preload/edge.h"
#include "vma_preload/kernel_socket.h"

namespace vp = ss::vma::preload;

SS_PRELOAD_EXPORT int epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {
  if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && fd >= 0 &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaKernel)
    vp::edge_quiet("epoll_ctl", fd, [&] {
      if (const auto s = ss::FdTable::instance().get<vp::KernelSocket>(fd, ss::FdKind::kVmaKernel))
        s->hand_back("epoll not offloaded yet");
    });
  return ss::interpose::real().epoll_ctl(epfd, op, fd, ev);
}
