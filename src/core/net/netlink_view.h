// The kernel's view of routes, links, addresses and neighbours that the
// offload's transmit path asks "how do I send to A (from S, UDP port P)?":
// route() for the way out, link() for the interface's MAC and MTU,
// neighbour() for the next hop's MAC. Answers come from caches kept true by
// a netlink socket subscribed to the kernel's change events; a miss asks
// the kernel by one rtnetlink request, which the kernel answers at once.
// Nothing here ever waits for the network: an unresolved next hop is
// handed to the kernel to resolve and answered kPending.
//
// No thread of its own: the owner watches fd() (in its service thread's
// poll set) and calls process_events() when it is readable.
//
// Locking: one mutex over the caches, held only to copy an answer in or
// out or to apply one event (never across a system call); a second one
// serialises the request socket for misses (docs/architecture.md,
// "Locking on the data path").
#pragma once
#include "core/base/api.h"
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/net/link_table.h"
#include "core/net/neigh_table.h"
#include "core/net/netlink_addr.h"
#include "core/net/route_query.h"

namespace ss::net {

class NetlinkSocket;

class NetlinkView {
 public:
  struct Options {
    // Resolve next hops by RTM_NEWNEIGH with NTF_USE (needs CAP_NET_ADMIN;
    // without it the first EPERM switches to the other way for good).
    // False: always by a zero-length UDP datagram to the next hop.
    bool resolve_by_netlink = true;
    int event_rcvbuf = 1 << 20;  // the subscription socket's receive buffer
  };

  // Subscribes, then reads the links and addresses: 0 or -errno.
  SS_API static int open(const Options& opts, std::unique_ptr<NetlinkView>* out);
  SS_API ~NetlinkView();
  NetlinkView(const NetlinkView&) = delete;
  NetlinkView& operator=(const NetlinkView&) = delete;

  // Readable when change events wait for process_events().
  SS_API int fd() const;
  // Applies every queued event; when the kernel dropped some (ENOBUFS),
  // reads everything again (resync). 0 or -errno. One thread at a time
  // (the owner's); the lookups below may run on any thread meanwhile.
  SS_API int process_events();

  // The way to f.dst: 0 and *out, or -errno as the kernel gives it
  // (ENETUNREACH, EHOSTUNREACH, EACCES, EINVAL).
  SS_API int route(const Flow& f, Route* out);
  // Moves whenever a route answer may have changed: a path kept from an
  // earlier answer is asked again once this differs.
  uint64_t route_generation() const { return route_gen_.load(std::memory_order_acquire); }
  // ifindex's link: false when there is none.
  bool link(int ifindex, Link* out);
  bool is_local(const IpAddr& a);
  std::vector<IpAddr> local_addresses();
  // The MAC of `next_hop` on `ifindex`. 0 with out->state kReady (MAC
  // set), kPending (resolution started: ask again, or send through the
  // kernel meanwhile) or kFailed; -errno when the kernel could not be asked.
  int neighbour(int ifindex, const IpAddr& next_hop, Neighbour* out);

  // What was done so far, for tests and statistics.
  struct Counters {
    uint64_t resyncs = 0;           // caches read again after lost events
    uint64_t route_queries = 0;     // route answers asked of the kernel
    uint64_t resolve_netlink = 0;   // next hops handed to the kernel by NTF_USE
    uint64_t resolve_datagram = 0;  // ... by a zero-length UDP datagram
  };
  Counters counters() const;

 private:
  explicit NetlinkView(const Options& opts);
  int resync();
  // Whether any policy rule matches on a port (a dump of the rules); true
  // also when the kernel could not be asked.
  bool rules_use_ports();
  bool rules_changed_ = false;  // process_events' thread only
  void apply(const nlmsghdr* nlh);
  int ask_neighbour(const NeighKey& k, NeighEntry* out);
  void kick(const NeighKey& k);
  void kick_by_datagram(const NeighKey& k);

  struct RouteAnswer {
    int err;
    Route route;
  };
  static constexpr size_t kMaxRoutes = 4096;  // past it the cache starts over

  std::unique_ptr<NetlinkSocket> events_;  // read by process_events() only

  std::mutex query_mu_;  // the request socket and what only it touches
  std::unique_ptr<NetlinkSocket> query_;
  bool resolve_by_netlink_ = true;

  mutable std::mutex mu_;  // everything below
  LinkTable links_;
  NeighTable neigh_;
  // Keyed without the ports while no policy rule matches on ports: a
  // server's connections from many ports share one answer.
  std::map<Flow, RouteAnswer> routes_;
  bool ports_in_rules_ = true;  // until a dump of the rules says otherwise
  // Moves with every route-relevant event (written under mu_).
  std::atomic<uint64_t> route_gen_{0};
  Counters counters_;
};

}  // namespace ss::net
