// SO_VMA_USER_DATA (vma_extra(7)): a void * per UDP socket the preload
// may offload, set and read with setsockopt/getsockopt at SOL_SOCKET
// (optlen exactly sizeof(void *), else EINVAL, as libvma); until set it
// is the socket's descriptor. socketxtreme_poll reports it as each
// completion's user_data. Kept in the socket's RxExtras. Any other socket
// is the kernel's (ENOPROTOOPT).
#pragma once
#include <sys/socket.h>

namespace ss::vma::preload {

// False when fd is not such a socket (the caller asks the kernel); else
// true with *ret the call's result (0, or -1 with errno).
bool user_data_setsockopt(int fd, const void* val, socklen_t len, int* ret);
bool user_data_getsockopt(int fd, void* val, socklen_t* len, int* ret);

}  // namespace ss::vma::preload
