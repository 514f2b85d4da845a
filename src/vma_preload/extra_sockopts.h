// The SO_VMA_* options libvma answers on a socket it offloads
// (vma_extra(7)), here on every UDP socket the preload may offload (bound
// or not):
//  - SO_VMA_USER_DATA, a void * set and read at SOL_SOCKET (optlen exactly
//    sizeof(void *), else EINVAL, as libvma); until set it is the socket's
//    descriptor. socketxtreme_poll reports it as each completion's
//    user_data. Kept in the socket's RxExtras.
//  - SO_VMA_RING_ALLOC_LOGIC, set only (libvmacompat/ring_logic.h): kept
//    in the socket's record and logged at debug; every logic shares the
//    netdev's rings.
// Any other socket is the kernel's (ENOPROTOOPT), as libvma leaves a
// socket it does not offload to the kernel.
#pragma once
#include <sys/socket.h>

namespace ss::vma::preload {

// False when fd is not such a socket or `name` not such an option (the
// caller asks the kernel); else true with *ret the call's result (0, or -1
// with errno).
bool extra_setsockopt(int fd, int name, const void* val, socklen_t len, int* ret);
bool extra_getsockopt(int fd, int name, void* val, socklen_t* len, int* ret);

}  // namespace ss::vma::preload
