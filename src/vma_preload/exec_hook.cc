// exec under libvma.so (interpose/exec_calls.h): the new image has only
// kernel sockets, so a TCP connection on the rings whose descriptor
// survives the exec (no FD_CLOEXEC, or a spawn's dup2 source) goes to
// its kernel socket first (SocketRecord::tcp_for_another_process).
// So do the connections closed after a fork and left for a child
// (tcp_park.h). A failed exec leaves them there.
#include <fcntl.h>
#include <netinet/in.h>

#include <algorithm>

#include "interpose/exec_calls.h"
#include "interpose/real.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/tcp_park.h"

namespace ss::vma::preload {
namespace {

const char* connections_to_kernel(char* const* /*envp*/, const interpose::SpawnDup* dups,
                                  size_t n_dups, bool spawn) {
  if (!spawn) parked_expire(/*all=*/true);  // the rings go with this image
  for_each_record([=](int fd, const std::shared_ptr<SocketRecord>& s) {
    const int flags = s->protocol == IPPROTO_TCP ? interpose::real().fcntl(fd, F_GETFD) : -1;
    if (flags < 0) return true;
    if ((flags & FD_CLOEXEC) &&
        std::none_of(dups, dups + n_dups,
                     [fd](const interpose::SpawnDup& d) { return d.from == fd; }))
      return true;
    s->tcp_for_another_process("exec");
    return true;
  });
  return nullptr;
}

__attribute__((constructor)) void watch_exec() {
  interpose::set_before_exec(connections_to_kernel);
}

}  // namespace
}  // namespace ss::vma::preload
