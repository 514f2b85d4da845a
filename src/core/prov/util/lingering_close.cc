#include "core/prov/util/lingering_close.h"

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace ss::prov::util {

namespace {
// A peer that stops reading delays our close by at most this much.
constexpr std::chrono::milliseconds kLingerBound{2000};

// Reads what is there; true once the peer has closed or the socket failed.
bool drain(int fd) {
  char sink[4096];
  for (;;) {
    ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EINTR);
  }
}

bool all_acknowledged(int fd) {
  int outq = 0;
  return ::ioctl(fd, SIOCOUTQ, &outq) < 0 || outq == 0;
}
}  // namespace

void lingering_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = std::chrono::steady_clock::now() + kLingerBound;
  while (!drain(fd) && !all_acknowledged(fd) && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 1);  // ACKs raise no event: look again shortly
  }
  ::close(fd);
}

}  // namespace ss::prov::util
