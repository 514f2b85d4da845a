// The process's rings on one netdev, made on first need and kept until the
// process exits (the kernel then frees the UMEM, the XSKs and the bpf_link):
// an xdp queue with its own pool on every rx queue (their depth from
// VMA_RX_WRE and VMA_TX_WRE, ring_depth.h; the pool on hugepages when
// VMA_MEM_ALLOC_TYPE is 2 and the system has them), the steering program's
// flow table, a UdpStack over them and its UdpTx, the TCP stack beside
// them (tcp_offload.h). One NetlinkView for the
// process, kept current by a service thread ("vma-netlink") that runs
// process_events() when the kernel announces a change.
#pragma once
#include <poll.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/packet_tx.h"
#include "core/net/tcp/stack.h"
#include "core/net/udp_stack.h"
#include "core/net/udp_tx.h"
#include "core/prov/ring.h"
#include "libvmacompat/ring_depth.h"
#include "libvmacompat/stats_publisher.h"
#include "vma_preload/ring_turn.h"
#if SS_VMA_XDP
#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_join.h"
#endif

namespace ss::vma {
class LentOwner;
}

namespace ss::vma::preload {

struct RxExtras;
struct XtremeKernelSet;

// A listener's accepting, as NetdevRings::accepting reads it.
struct AcceptActivity {
  static int64_t now_ms() {  // last_ms's clock
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::atomic<int64_t> last_ms{0};
  std::atomic<int> waiting{0};  // threads in accept or asleep for POLLIN
};

struct NetdevRings {
  struct Queue {
    std::unique_ptr<mem::Pool> pool;
    std::unique_ptr<prov::RingQueue> queue;  // before its pool
  };
  std::string ifname;
  int ifindex = 0;
  uint32_t slot = 0;  // 0: our own rings; else a fork child's slot on its parent's
  RingDepth depth;    // every queue's rings and pool (VMA_RX_WRE, VMA_TX_WRE)
  std::vector<Queue> queues;
  std::unique_ptr<net::FrameTx> frames;    // the first queue's send path
  std::unique_ptr<net::PacketTx> packets;  // TCP's send path where the rings copy (or none)
  std::unique_ptr<prov::FlowSteering> steering;
  std::unique_ptr<net::TxResolver> resolver;
  std::unique_ptr<net::tcp::Stack> tcp;  // takes the TCP segments the UDP stack reads
  std::unique_ptr<net::UdpStack> stack;
  std::unique_ptr<net::UdpTx> tx;
  RingTurn turn;  // the program's calls or the vma-tcp thread
  // What keeps the rings and the program alive in the kernel (each
  // queue's AF_XDP socket, the program's link, program and maps): a fork
  // child closes its copies, so the parent's exit takes them away.
  std::vector<int> kernel_fds;
  // The netdev's ring block in vmastat (empty without one), refreshed by
  // publish_ring_counters().
  stats::GroupStats stats;

  // socketXtreme (socketxtreme.h): the endpoints whose datagrams
  // socketxtreme_poll on any of these rings reports, with their sockets.
  struct XtremeMember {
    int fd;
    net::UdpEndpoint* ep;
    const RxExtras* extras;  // the socket's SO_VMA_USER_DATA
  };
  std::mutex xtreme_mu;
  std::vector<XtremeMember> xtreme;  // xtreme_mu
  size_t xtreme_next = 0;            // xtreme_mu: the member the next poll starts at
  // Whether a member holds a datagram no poll reported yet (xtreme_mu).
  bool xtreme_udp_waiting_locked() const;
  // socketXtreme on TCP: the listeners it accepts for and the connections
  // whose data and events it reports, by their object `who` (its
  // descriptor's socket must still be `who`: a later socket may have the
  // number). A poll looks at the listeners, the connections the stack
  // changed (Stack::take_ready) and those the last poll left with more.
  struct XtremeTcp {
    int fd;
    bool listener;
    uint64_t looked = 0;  // the poll that last took it (each looks at a member once)
  };
  std::unordered_map<const void*, XtremeTcp> xtreme_tcp;  // xtreme_mu
  std::vector<const void*> xtreme_tcp_listeners;          // xtreme_mu
  std::vector<const void*> xtreme_tcp_again;              // xtreme_mu
  uint64_t xtreme_tcp_polls = 0;                          // xtreme_mu
  // Connections with buffers lent out, each with a reference on its owner:
  // looked at when the program frees bytes of theirs.
  std::vector<std::pair<const void*, LentOwner*>> xtreme_tcp_lending;  // xtreme_mu
  std::atomic<size_t> xtreme_tcp_count{0};
  // Its members through the kernel (xtreme_kernel.h), made at the first.
  std::atomic<XtremeKernelSet*> xtreme_kernel{nullptr};
  // The ring descriptor a socketXtreme member is given
  // (get_socket_rings_fds): an epoll set of the rings' wake-ups and an
  // eventfd signalled when a thread took frames off the rings for a
  // member, so a program asleep on it learns of what another thread read
  // (made at first use, kept; -1 when it cannot be made).
  int xtreme_fd();
  void xtreme_kick();
  void xtreme_drain();  // socketxtreme_poll
  // The stacks' on_first_ready (TCP) and on_watched_arrival (UDP): a
  // member changed (whichever thread fed the stack: the vma-tcp thread, a
  // call on another socket, socketxtreme_poll's own reads), so a program
  // asleep on the ring descriptor is woken; not while this thread polls
  // these rings (XtremeLook: it takes them, and checks at the end).
  void xtreme_member_ready();
  // socketxtreme_poll's span on these rings: what becomes ready after its
  // take kicks once, as it ends.
  class XtremeLook {
   public:
    explicit XtremeLook(NetdevRings* r);
    ~XtremeLook();
    XtremeLook(const XtremeLook&) = delete;
    XtremeLook& operator=(const XtremeLook&) = delete;

   private:
    NetdevRings* r_;
    NetdevRings* outer_;
    bool outer_held_;  // the outer look's: a member's kick held back meanwhile
  };

  // A program's call looks at the rings (counted for RingTurn): the TCP
  // segments they hold go to the stack, whose timers due fire.
  void program_look();
  // The rings' wake-ups (readable when a frame arrived), appended to fds.
  void poll_fds(std::vector<pollfd>* fds) const;
  // One descriptor for them all (an epoll set, made at first use, kept),
  // or -1 when it cannot be made (out of descriptors: asked again next time).
  int wait_fd();
  std::mutex wait_mu;
  int wait_fd_ = -1;    // wait_mu
  int xtreme_fd_ = -1;  // wait_mu
  std::atomic<int> xtreme_event_{-1};
  std::atomic<bool> xtreme_kicked_{false};  // the eventfd was written, not read yet
  // The program watches the ring descriptor edge-triggered (EPOLLET): an
  // edge it took may be all it gets for a peer, so every poll looks at the
  // kernel's side (xtreme_kernel.cc).
  std::atomic<bool> xtreme_edge_watched{false};

  // The owner's, on its service thread (fork_join.h): the TCP ports whose
  // new connections fork children take, by slot; our own connections
  // marked ours once before the first.
  std::map<std::pair<net::IpAddr, uint16_t>, std::vector<uint32_t>> groups;
  bool owned_open = false;
  // The owner's listeners and when it last accepted on them (TcpListen):
  // a port's group takes this process's slot (0) too while a thread of
  // it waits there (in accept, or a poll for POLLIN) or it took a
  // connection there in the last kAcceptingMs, as a parent accepting
  // beside its children shares the kernel's accept queue (one that
  // stopped gets no more).
  static constexpr int64_t kAcceptingMs = 2000;
  std::mutex accepting_mu;
  std::multimap<std::pair<net::IpAddr, uint16_t>, std::shared_ptr<AcceptActivity>>
      accepting;  // accepting_mu
};

// ifname's rings, made now if needed; null when the netdev cannot have
// them (no permission, no XDP, a queue taken, no xdp provider in this
// build): logged once per netdev, and asked again never.
NetdevRings* netdev_rings(const std::string& ifname);

// Every netdev's counters into its vmastat ring block: datagrams and
// payload bytes the rings delivered and sent, the steering program's
// redirects and drops (and the rings' own drops), malformed frames. The
// service thread runs it once a second.
void publish_ring_counters();

// In a fork child (fork_child.cc): every netdev's kernel_fds closed, from
// a list published without a lock (the registry's lock may be held by a
// thread the child does not have), and a registry of its own begun (a
// listener may join the parent's rings: t_joining). True when the parent
// had rings.
bool close_rings_in_fork_child();

// The frames the program holds in this process's own rings (not joined
// ones: their pools fork as any memory does), copied into a fork child
// at their addresses (mem::ForkFrames): taken before the fork, placed in
// the child, freed in the parent, the rings held from before the take to
// after the fork. From the fork handlers (fork_child.cc), which they keep
// one fork at a time; a fork from a signal handler (!copy) takes and
// holds nothing.
void ring_frames_before_fork(bool copy);
void ring_frames_after_fork(bool child);

// Set by a fork child's listener while it makes its listeners: then, and
// only then, netdev_rings() in a fork child joins the parent's rings on a
// netdev the parent had them on (fork_join.h), or with t_taking_over
// makes rings of its own there, as their owner (the parent is gone:
// fork_child.cc).
extern thread_local bool t_joining, t_taking_over;

#if SS_VMA_XDP
struct JoinShare;
// Owner: what a fork child needs to join ifname's rings, with the sockets
// it may not make itself (it may have changed its user) made for it and
// listed in out->fds, for the caller to close once sent. 0 or -errno.
int rings_share(const std::string& ifname, JoinShare* out);
#endif
// Owner: fork child `slot` takes a share of the new connections to TCP
// (ip, port) on ifname (a negative slot: -slot no longer), asked by
// process `asker`, which must hold the slot (else -EPERM). 0 or -errno.
int rings_group_add(const std::string& ifname, const net::IpAddr& ip, uint16_t port, int slot,
                    pid_t asker);
// Owner, each second: children gone leave their ports' groups; a port
// this process accepts on (NetdevRings::accepting) has its slot in its
// group, one it no longer accepts on not.
void prune_groups();
// Has the service thread look at the groups now (an owner's listener left).
void wake_rings_service();

// The netdev one of whose rings' wake-ups (poll_fds) is fd, else null.
NetdevRings* netdev_rings_of_ring_fd(int fd);
// epoll_ctl of fd with EPOLLET: when fd is a netdev's ring descriptor,
// that netdev's xtreme_edge_watched.
void note_edge_watch(int fd);

// The netdevs a socket bound at `ip` can receive through: the one holding
// the address, or, for a wildcard, every netdev (but loopback) with an
// address of a family the socket takes (dual: an IPv6 wildcard taking
// IPv4 too).
std::set<std::string> netdevs_for(const net::IpAddr& ip, bool dual);

// The interface the kernel routes `dst` out of (the process's NetlinkView;
// a multicast join names none); 0 when there is no answer.
int route_ifindex(const net::IpAddr& dst);

}  // namespace ss::vma::preload
