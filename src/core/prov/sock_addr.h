// Facts about kernel sockets and addresses that provider selection and
// several providers ask for.
#pragma once
#include <sys/socket.h>

#include "core/base/api.h"

namespace ss::prov {

// True when the kernel socket `sock` is bound to a port.
SS_API bool has_local_port(int sock);
// True when `dst` names an address of this host (in this network namespace).
bool is_local_address(const sockaddr* dst, socklen_t len);
// Binds an unbound `sock` to the wildcard of its family and an ephemeral
// port, as listen(2) would (a provider may need the port before it listens).
SS_API int bind_if_unbound(int sock);

}  // namespace ss::prov
