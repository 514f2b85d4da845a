#include "vma_preload/user_data.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "vma_preload/kernel_socket.h"
#include "vma_preload/zcopy.h"

namespace ss::vma::preload {
namespace {

// fd's record when the option is libvma's to answer on it.
std::shared_ptr<KernelSocket> option_socket(int fd) {
  const int saved = errno;
  auto s = extra_api_udp_socket(fd);
  errno = saved;
  return s;
}

int fail(int err) {
  errno = err;
  return -1;
}

}  // namespace

bool user_data_setsockopt(int fd, const void* val, socklen_t len, int* ret) {
  const auto s = option_socket(fd);
  if (!s) return false;
  if (!val) *ret = fail(EFAULT);
  else if (len != sizeof(void*)) *ret = fail(EINVAL);
  else {
    void* p;
    std::memcpy(&p, val, sizeof p);
    s->rx_extras.set_user_data(reinterpret_cast<uintptr_t>(p));
    *ret = 0;
  }
  return true;
}

bool user_data_getsockopt(int fd, void* val, socklen_t* len, int* ret) {
  const auto s = option_socket(fd);
  if (!s) return false;
  if (!val || !len) *ret = fail(EFAULT);
  else if (*len != sizeof(void*)) *ret = fail(EINVAL);
  else {
    const auto p = reinterpret_cast<void*>(static_cast<uintptr_t>(s->rx_extras.user_data(fd)));
    std::memcpy(val, &p, sizeof p);
    *ret = 0;
  }
  return true;
}

}  // namespace ss::vma::preload
