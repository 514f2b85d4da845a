#include "preload/late_fallback.h"

#include <fcntl.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/dup_share.h"
#include "interpose/own_calls.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "preload/epoll_face.h"
#include "preload/stats.h"

namespace ss::preload {

using interpose::OwnCalls;

bool fell_back(int fd) {
  OwnCalls in;
  return ss_rspreload_fell_back(fd) == 1;
}

void finish_late_fallback(int fd) {
  OwnCalls in;
  std::shared_ptr<Pollable> obj = FdTable::instance().get_pollable(fd);
  char provider[16] = "";
  if (const char* p = ss_rspreload_provider(fd)) snprintf(provider, sizeof provider, "%s", p);
  if (!obj || !ss_rspreload_fell_back(fd)) return;
  // Duplicates made while it connected: plain copies of the kernel
  // socket from now on (a number the program closed meanwhile is closed).
  const std::vector<int> others = ss::interpose::dups::dissolve(fd);
  if (ss_rspreload_release(fd)) return;                           // another thread's call did it
  const int fd_flags = ss::interpose::real().fcntl(fd, F_GETFD);  // one for all its numbers
  for (int n : others) ss::interpose::real().fcntl(n, F_SETFD, fd_flags < 0 ? 0 : fd_flags);
  SS_DEBUG("librspreload: fd %d: connect fell back to kernel TCP after EINPROGRESS", fd);
  ss::interpose::kernel_in_epoll_sets(kEpollFace, obj.get());
  stats::moved_to_kernel(provider);
}

}  // namespace ss::preload
