// socketXtreme's connections through the kernel (vma_extra(7)): an
// auto-accepting listener's kernel socket takes the peers its rings
// cannot bring (the same host, loopback, another netdev), and nobody
// calls accept for them. So the listener's kernel socket and each
// connection accepted from it are members of its first netdev's ring
// descriptor: socketxtreme_poll there accepts them
// (VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED) and reports each one's data
// and events as completions, as for the rings' connections. The data are
// read from the kernel socket into fresh frames of the rings' pool and
// lent; reading stops while the program holds a receive buffer's worth of
// frames of a connection (so the kernel's window shuts on the peer, as
// the rings' would), and the free that ends the hold wakes a program
// asleep on the ring. The members' descriptors are in epoll sets of their
// own, edge-triggered (what a poll leaves is listed for the next, with a
// wake-up), inside the ring descriptor's set: a program asleep on the
// ring wakes for them. A poll looks there (one epoll_wait), but for a
// program spinning with no kernel connection yet (xtreme_kernel.cc).
#pragma once
#include <mellanox/vma_extra.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>

namespace ss::vma::preload {

struct NetdevRings;
struct XtremeKernelSet;

// fd's membership (a listener's kernel socket, or a connection accepted
// from it) of r's ring descriptor, left when the object goes (before the
// descriptor closes).
class XtremeKernelMember {
 public:
  // Null when it could not be made (logged: that listener's same-host
  // peers then wait in the kernel's queue).
  static std::unique_ptr<XtremeKernelMember> join(NetdevRings* r, int fd, bool listener,
                                                  const sockaddr_storage* peer = nullptr);
  ~XtremeKernelMember();
  XtremeKernelMember(const XtremeKernelMember&) = delete;
  XtremeKernelMember& operator=(const XtremeKernelMember&) = delete;
  NetdevRings* rings() const { return r_; }
  uint64_t key() const { return key_; }
  // The next poll looks at it (an event before its socket was published
  // found nobody), and a program asleep on the ring comes for it.
  void look_again();

 private:
  XtremeKernelMember(NetdevRings* r, XtremeKernelSet* set, uint64_t key, int fd)
      : r_(r), set_(set), key_(key), fd_(fd) {}
  NetdevRings* const r_;
  XtremeKernelSet* const set_;
  const uint64_t key_;
  const int fd_;
};

// The members' completions on r, from comps[*got] on (socketxtreme_poll).
void xtreme_kernel_poll(NetdevRings* r, vma_completion_t* comps, unsigned int n, unsigned int* got);

}  // namespace ss::vma::preload
