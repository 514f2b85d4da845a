#include "core/base/fd_spare.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace ss {

int descriptor_shortage(int n) {
  constexpr int kMax = 16;
  int fds[kMax];
  int made = 0, err = 0;
  for (; made < n && made < kMax; made++) {
    if ((fds[made] = eventfd(0, EFD_CLOEXEC)) < 0) {
      err = errno;
      break;
    }
  }
  for (int i = 0; i < made; i++) ::close(fds[i]);
  return err == EMFILE || err == ENFILE ? -err : 0;
}

}  // namespace ss
