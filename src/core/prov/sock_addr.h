// Facts about kernel sockets and addresses that provider selection and
// several providers ask for.
#pragma once
#include <sys/socket.h>

#include <cstdint>

#include "core/base/api.h"

namespace ss::prov {

// True when the kernel socket `sock` is bound to a port.
SS_API bool has_local_port(int sock);
// The port of an AF_INET/AF_INET6 address (0 for another family), and
// setting it (other families untouched).
SS_API uint16_t port_of(const sockaddr_storage& a);
void set_port(sockaddr_storage* a, uint16_t port);
// An AF_INET/AF_INET6 address `a` (len bytes) with its family's wildcard
// in place of its address, its port kept.
SS_API sockaddr_storage wildcard_of(const sockaddr* a, socklen_t len);
// True when `dst` names an address of this host (in this network namespace).
bool is_local_address(const sockaddr* dst, socklen_t len);
// Makes the TCP socket `sock` unconnected again, whatever a provider did
// with it (tcp's side channel connects the program's socket to the peer's
// side port): Linux's connect(AF_UNSPEC), which aborts a connect under way
// and keeps a bound port, so a kernel connect elsewhere can follow.
SS_API void disconnect_stream(int sock);
// Binds an unbound `sock` to the wildcard of its family and an ephemeral
// port, as listen(2) would (a provider may need the port before it listens).
SS_API int bind_if_unbound(int sock);

}  // namespace ss::prov
