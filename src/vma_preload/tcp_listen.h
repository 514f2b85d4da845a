// A listening TCP socket's offloaded side (unless SLIPSTREAM_VMA_TCP=0): after
// the kernel socket's own listen() (which keeps taking same-host peers),
// a listener on the TCP stack of each netdev the bound address can arrive
// through; the steering brings those netdevs' handshakes to the rings.
// accept() hands out a connection from either: one of the rings' gets a
// new descriptor, a kernel socket never connected, recorded with the
// connection (TcpOffload) as connect()'s are.
#pragma once
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/base/pollable.h"
#include "core/net/tcp/stack.h"
#include "interpose/arrival_edges.h"
#include "vma_preload/tcp_offload.h"
#include "vma_preload/xtreme_kernel.h"

namespace ss::vma::preload {

struct NetdevRings;
struct AcceptActivity;

class TcpListen {
 public:
  // Listeners for fd (listening already, bound at its address and port)
  // on every netdev that can serve the address; null when none could.
  static std::unique_ptr<TcpListen> open(int fd, int family, int backlog);
  ~TcpListen();  // the stacks' listeners closed (their queued connections reset)
  TcpListen(const TcpListen&) = delete;
  TcpListen& operator=(const TcpListen&) = delete;

  // accept4(2): the new descriptor, *addr the peer's address; -1/errno.
  // The rings' connections first, then the kernel's; a blocking socket
  // waits for either. EINVAL once socketXtreme accepts for it.
  int accept(int fd, sockaddr* addr, socklen_t* len, int flags);
  // socketXtreme's auto-accept (socketxtreme.cc): one connection of the
  // rings on a new descriptor (*nfd, blocking) and its peer: 0, or -EAGAIN.
  int auto_accept(int fd, int* nfd, sockaddr_storage* peer, socklen_t* len);
  // socketXtreme accepts from its kernel socket (xtreme_kernel.h): accept
  // is refused from then on, as after auto_accept. Whether it may: no
  // thread is inside accept (it takes what is queued itself).
  bool take_kernel_accepts();
  // Its kernel socket's membership key (0: none).
  uint64_t xtreme_kernel_key() const { return xtreme_key_.load(std::memory_order_acquire); }
  // Its kernel socket's membership, once the listener is published: what
  // queued before is looked at by the next poll.
  void xtreme_kernel_published();
  // The legs leave the rings (Stack::stop_listening: handshakes under way
  // reset, SYNs to the kernel listener) while other threads may still be
  // in calls here: the object lives on for them. The connections its legs
  // had completed stay for this process's accept where it accepts here
  // (it did before, or a thread is in accept, or socketXtreme accepts for
  // it), else they are reset (a prefork master that never accepts must
  // not leave its clients waiting). True when some stayed.
  bool leave_rings();
  // In a fork child whose legs are on rings joined to its parent's
  // (fork_join.h): each leg's port gives this process's slot a share of
  // its new connections (join_groups: 0 or the first -errno, the shares
  // taken back then), or no longer (leave_groups, at close).
  int join_groups();
  void leave_groups();
  // The socketXtreme membership of its kernel socket ends (its close).
  void leave_xtreme_kernel() {
    xtreme_key_.store(0, std::memory_order_release);
    xtreme_kernel_.reset();
  }
  // Whether a leg holds a completed connection for accept.
  bool holds_completed();
  // The rings of its legs, each once (a dual listener's two legs share one).
  const std::vector<NetdevRings*>& rings() const { return netdevs_; }

  // SocketRecord's Pollable: POLLIN while a connection waits here or in
  // the kernel listener; after arrivals(), with poll_rings false, as
  // TcpOffload::readiness.
  short readiness(int fd, short events, bool poll_rings = true);
  // Connections that reached the rings' accept queues and kernel listener
  // fd so far: an edge-triggered epoll's new edge (an accept is none, as
  // Linux's). A sleep for no event (an edge-triggered member, reported)
  // ends at once when it moved since the last call.
  uint64_t arrivals(int fd);
  WaitTarget wait_target(int fd, short events, int* sleep_ms);
  void after_wait(const WaitTarget& armed);
  // setsockopt on the listener after listen: the connections it accepts
  // from now take it, as Linux's accepted sockets take the listener's.
  void set_option(net::tcp::Option o, int64_t value);
  // An option its connections take changed on the kernel socket.
  void options_changed();

 private:
  struct Leg {
    NetdevRings* rings;
    net::tcp::Socket* sock;
    net::IpAddr ip;  // where it listens
    uint16_t port;
  };
  explicit TcpListen(int family) : family_(family) {}
  // One connection from the rings for listener fd: 0 and *out (a new
  // socket with fd's options), or -EAGAIN.
  int take(int fd, int flags, int* out, sockaddr* addr, socklen_t* len);
  void progress();
  // The wait set (made at the first sleep): the kernel socket and every
  // netdev's rings. -1 when it cannot be made.
  int wait_set(int fd);
  // This thread sleeps on every netdev's rings from enter to leave
  // (ring_turn.h: vma-tcp leaves them to the sleep, which their
  // descriptors wake); leave wakes vma-tcp when it parked for it.
  void enter_ring_sleep();
  void leave_ring_sleep();
  // What a sleep's wait_target joined (its tag): each leg's waiters, and
  // the ArrivalEdges' sleepers for an edge wait; left after the sleep.
  struct Joined {
    std::vector<bool> legs;
    bool edges = false;
  };
  void leave(const Joined& joined, bool kicked);
  // This process accepts here (an accept, a sleep for POLLIN): on its own
  // rings, its legs' ports' NetdevRings::accepting entries say when, so
  // the groups its fork children form give it a share too; the entries go
  // when the legs leave the rings or close. accepted_now: a connection
  // taken.
  void mark_accepting();
  void accepted_now();
  void unmark_accepting();

  const int family_;
  std::vector<Leg> legs_;              // fixed once made
  std::vector<NetdevRings*> netdevs_;  // the legs' rings, each once
  bool xtreme_ = false;                // joined the socketXtreme members
  // Its kernel socket's membership (same-host peers): until its close.
  std::unique_ptr<XtremeKernelMember> xtreme_kernel_;
  std::atomic<uint64_t> xtreme_key_{0};  // xtreme_kernel_'s (read by a poll on another thread)
  std::atomic<bool> auto_accepting_{false};
  std::atomic<int> in_accept_{0};            // threads inside accept()
  std::atomic<bool> left_to_accept_{false};  // a socketXtreme poll left its peers to them
  std::atomic<bool> handed_out_{false};      // take() gave out a connection
  // Its entries in its own rings' accepting lists (made at the first
  // mark, under mu_; the lists let go of it when the legs leave).
  std::shared_ptr<AcceptActivity> activity_;
  std::atomic<AcceptActivity*> active_{nullptr};
  std::atomic<bool> left_{false};  // leave_rings() done
  size_t next_leg_ = 0;            // mu_: the leg the next take starts at
  std::mutex mu_;
  // What accepted sockets take from the listener's kernel socket.
  std::optional<std::vector<KeptOption>> inherit_;  // mu_
  int wait_fd_ = -1;                                // mu_
  // The kernel listener's arrivals and the sleep of an edge-triggered
  // member (made at its first count), and what arrivals() last answered.
  interpose::ArrivalEdges kernel_edges_;
  std::atomic<uint64_t> last_arrivals_{0};
  uint64_t count_arrivals(int fd);  // the rings' handshakes and the kernel's, rings not read
};

}  // namespace ss::vma::preload
