// The socket options of an offloaded TCP connection: what the kernel
// socket under the program's descriptor keeps, turned into the stack's
// configuration and options, and what an accepted connection takes from
// its listener.
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <vector>

#include "core/net/tcp/stack.h"

namespace ss::vma::preload {

// What fd's options say of its connections: SO_RCVBUF and SO_SNDBUF (the
// windows; SO_SNDBUF set by the program turns autotuning off), TCP_NODELAY,
// TCP_CORK, SO_KEEPALIVE and its times, TCP_USER_TIMEOUT, and VMA_MSS.
net::tcp::Config tcp_config_of(int fd);
// A TCP option setsockopt sets on a connection (level, name and the
// program's int) as the stack's Option and value; false for any other.
// fd (>= 0): the kernel socket that took the value, for the options whose
// value is what the kernel keeps (SO_RCVBUF, SO_SNDBUF).
bool tcp_option_of(int fd, int level, int name, int v, net::tcp::Option* o, int64_t* value);
// Those options an accepted connection's new socket takes from its
// listener's, as Linux's do: the listener's that differ from a new
// socket's (read once a process), SO_LINGER among them, and setting them.
struct KeptOption {
  int level, name;
  socklen_t len;  // of an int, or of SO_LINGER's struct
  union {
    int i;
    ::linger l;
  } value;
};
std::vector<KeptOption> options_to_inherit(int listener);
void set_kept_options(int fd, const std::vector<KeptOption>& options);

}  // namespace ss::vma::preload
