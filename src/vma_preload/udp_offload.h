// The offloaded path of a UDP socket the VMA preload decided "vma": beside
// its kernel socket (the program's descriptor, which keeps bind, ephemeral
// ports and same-host peers), an endpoint on the UdpStack of each netdev
// the bound address can arrive through (netdev_rings.h). Receive looks at
// the rings first and at the kernel socket every VMA_RX_UDP_POLL_OS_RATIO-th
// look (a call's first look covers both); send goes through UdpTx, and
// whatever it answers "use the kernel" through the kernel socket.
#pragma once
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/base/pollable.h"
#include "core/net/udp_stack.h"
#include "interpose/arrival_edges.h"
#include "vma_preload/rx_extras.h"

namespace ss::vma::preload {

struct SocketRecord;
struct NetdevRings;

class UdpOffload {
 public:
  // Endpoints for fd bound at `local` (family: the socket's; dual: an
  // IPv6 socket that takes IPv4 too), on each netdev that can serve it.
  // Null when none could (each refusal logged once by its netdev).
  // extras: the socket's (outlives this object); its receive callback
  // sees every datagram taken off the rings.
  static std::unique_ptr<UdpOffload> attach(int fd, int family, const sockaddr_storage& local,
                                            RxExtras* extras);
  ~UdpOffload();
  UdpOffload(const UdpOffload&) = delete;
  UdpOffload& operator=(const UdpOffload&) = delete;

  // recvmsg/sendmsg for the socket: the kernel's results and errnos.
  // zcopy (recvfrom_zcopy): a datagram from the rings is moved there
  // instead of copied (m gets its source only); one from the kernel
  // socket is copied into m as usual, *zcopy left empty, unless
  // `rings_only` (MSG_VMA_ZCOPY_FORCE): then -1/EIO, the datagram left
  // there, as libvma's.
  ssize_t recvmsg(SocketRecord& s, msghdr* m, int flags, net::Datagram* zcopy = nullptr,
                  bool rings_only = false);
  ssize_t sendmsg(SocketRecord& s, const msghdr* m, int flags);
  // After the kernel socket's connect(): its peer filters receive and is
  // the default destination (AF_UNSPEC: disconnected).
  void connect(const sockaddr* peer, socklen_t len);
  size_t legs() const { return legs_.size(); }
  // Each leg's netdev index and endpoint (udp_multicast.cc sets their
  // memberships and send options).
  void for_each_leg(const std::function<void(int ifindex, net::UdpEndpoint&)>& f);
  // The rings' wake-ups of every leg (readable while a frame waits on
  // that ring, for this socket or another one on the netdev), appended;
  // a socketXtreme member's: each leg's xtreme_fd() (also readable when
  // another thread's read queued a datagram for a member).
  void ring_fds(std::vector<pollfd>* fds) const;
  // Whether a datagram waits on the rings (polls them once).
  bool ring_readable();
  // Empties what the rings hold for the socket (before its endpoints,
  // freed with this object, give the port back to the kernel): the
  // datagrams dropped, each netdev's log line naming the socket and `why`.
  size_t drain(const char* why);
  // Every leg's port lent to the kernel socket, or taken back
  // (UdpEndpoint::lend_to_kernel): a fork child shares the socket.
  // Whether any flow moved.
  bool lend_to_kernel(bool lend);

  // Sleeping on the socket (udp_offload_wait.cc): poll, select and epoll
  // (SocketRecord's Pollable) and a blocking receive. One sleep for
  // `events` (POLLIN, with or without POLLOUT; none: an edge-triggered
  // epoll member waiting for its next datagram): a target on the socket's
  // wait set, an epoll fd holding the kernel socket and every ring's
  // wake-up, and the endpoints' kick (the sleeping thread's eventfd: a
  // datagram another thread's poll of the rings queued for us); kReady
  // when a datagram is there now. `*sleep_ms`
  // is cut when a piece of the set could not be made (out of descriptors).
  WaitTarget wait_target(short events, int* sleep_ms);
  void after_wait(const WaitTarget& armed);
  // Datagrams the rings brought the socket so far (polls them first),
  // and the kernel socket's arrivals (ArrivalEdges).
  // A sleep for no event (an edge-triggered member, reported) ends at
  // once when the count moved since the last call: a datagram another
  // thread queued before the sleeper joined its kicks.
  uint64_t arrivals();
  // Whether a datagram is queued for the socket, the rings not polled.
  bool queued();

 private:
  struct Leg {
    NetdevRings* rings;
    std::unique_ptr<net::UdpEndpoint> ep;
  };
  UdpOffload(int fd, int family, RxExtras* extras) : fd_(fd), family_(family), extras_(extras) {}
  // One look at the rings: the head datagram (kept for MSG_PEEK) or none.
  // Datagrams the receive callback drops or holds are not the head.
  bool head_locked();
  // The receive callback's verdict on d, taken off l: true to deliver it.
  bool callback_passes(Leg& l, net::Datagram* d);
  // The head datagram into m (or to *zcopy): its length, or -EFAULT for a
  // buffer or address the program gave that cannot be written (the head
  // kept).
  ssize_t copy_head_locked(msghdr* m, int flags, net::Datagram* zcopy);
  // Sleeps until the kernel socket or a ring is readable, or timeout_ms:
  // 0, or -EINTR when a signal handler ran and the kernel would fail the
  // receive (no SA_RESTART, or not `restartable`: SO_RCVTIMEO is set).
  int wait(int timeout_ms, bool restartable);
  // Queues what the rings hold on the endpoints (kicking their sleepers).
  void poll_rings();
  uint64_t count_arrivals();  // the endpoints' and the kernel socket's, rings not polled

  const int fd_, family_;
  RxExtras* const extras_;
  bool xtreme_ = false;  // a socketXtreme member on every leg's rings
  std::vector<Leg> legs_;
  // head_, next_leg_; recursive: the receive callback, run under it, may
  // call the socket's receive or poll (they then skip the rings).
  std::recursive_mutex mu_;
  std::optional<net::Datagram> head_;  // taken from a ring, not yet consumed
  size_t next_leg_ = 0;
  std::atomic<uint64_t> looks_{0};  // for VMA_RX_UDP_POLL_OS_RATIO
  std::atomic<bool> connected_{false};
  net::UdpAddr peer_;  // written before connected_ is set
  // The wait set (udp_offload_wait.cc), made at the first sleep.
  std::mutex wait_mu_;
  int wait_fd_ = -1;                        // wait_mu_
  int pollout_sleepers_ = 0;                // wait_mu_: the kernel socket watched for POLLOUT too
  std::atomic<uint64_t> last_arrivals_{0};  // what arrivals() last answered
  // The kernel socket's arrivals and the sleep of an edge-triggered
  // member (made at its first count).
  interpose::ArrivalEdges kernel_edges_;
};

}  // namespace ss::vma::preload
