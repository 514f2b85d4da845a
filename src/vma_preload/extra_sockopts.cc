#include "vma_preload/extra_sockopts.h"

#include <mellanox/vma_extra.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/base/log.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/zcopy.h"

namespace ss::vma::preload {
namespace {

// fd's record when the option is libvma's to answer on it: the user data
// on a UDP or TCP socket, the ring logic on a UDP one.
std::shared_ptr<SocketRecord> option_socket(int fd, int name) {
  if (name != SO_VMA_USER_DATA && name != SO_VMA_RING_ALLOC_LOGIC) return nullptr;
  const int saved = errno;
  auto s = name == SO_VMA_USER_DATA ? extra_api_socket(fd) : extra_api_udp_socket(fd);
  errno = saved;
  return s;
}

int fail(int err) {
  errno = err;
  return -1;
}

int set_user_data(SocketRecord& s, const void* val, socklen_t len) {
  if (!val) return fail(EFAULT);
  if (len != sizeof(void*)) return fail(EINVAL);
  void* p;
  std::memcpy(&p, val, sizeof p);
  s.rx_extras.set_user_data(reinterpret_cast<uintptr_t>(p));
  return 0;
}

int set_ring_logic(SocketRecord& s, const void* val, socklen_t len) {
  if (const int r = s.ring_logic.set(val, len); r < 0) return fail(-r);
  const RingLogic::Side rx = s.ring_logic.rx(), tx = s.ring_logic.tx();
  SS_DEBUG(
      "fd %d: ring allocation logic rx %d (user id %u), tx %d (user id %u); the netdev's "
      "rings serve it whatever the logic",
      s.fd, rx.logic, rx.user_id, tx.logic, tx.user_id);
  return 0;
}

}  // namespace

bool extra_setsockopt(int fd, int name, const void* val, socklen_t len, int* ret) {
  const auto s = option_socket(fd, name);
  if (!s) return false;
  *ret = name == SO_VMA_USER_DATA ? set_user_data(*s, val, len) : set_ring_logic(*s, val, len);
  return true;
}

bool extra_getsockopt(int fd, int name, void* val, socklen_t* len, int* ret) {
  // SO_VMA_RING_ALLOC_LOGIC is set only: libvma's getsockopt leaves it to
  // the kernel.
  if (name != SO_VMA_USER_DATA) return false;
  const auto s = option_socket(fd, name);
  if (!s) return false;
  if (!val || !len)
    *ret = fail(EFAULT);
  else if (*len != sizeof(void*))
    *ret = fail(EINVAL);
  else {
    const auto p = reinterpret_cast<void*>(static_cast<uintptr_t>(s->rx_extras.user_data(fd)));
    std::memcpy(val, &p, sizeof p);
    *ret = 0;
  }
  return true;
}

}  // namespace ss::vma::preload
