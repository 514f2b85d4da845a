#include "interpose/passed_fds.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "interpose/program_memory.h"

namespace ss::interpose {

void for_each_passed_fd(const msghdr* m, const std::function<void(int)>& fn) {
  if (!m || !program_readable(m, sizeof *m)) return;
  msghdr h = *m;  // read once: the program may change it meanwhile
  if (!h.msg_control || h.msg_controllen < sizeof(cmsghdr) ||
      !program_readable(h.msg_control, h.msg_controllen))
    return;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
      continue;
    const auto* end = reinterpret_cast<const char*>(h.msg_control) + h.msg_controllen;
    const size_t room = static_cast<size_t>(end - reinterpret_cast<const char*>(CMSG_DATA(c)));
    const size_t n = std::min<size_t>(c->cmsg_len - CMSG_LEN(0), room) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fn(fd);
    }
  }
}

void for_each_passed_fd(const mmsghdr* v, unsigned int vlen, const std::function<void(int)>& fn) {
  vlen = std::min<unsigned int>(vlen, UIO_MAXIOV);
  if (!v || !vlen || !program_readable(v, vlen * sizeof *v)) return;
  for (unsigned int i = 0; i < vlen; i++) for_each_passed_fd(&v[i].msg_hdr, fn);
}

}  // namespace ss::interpose
