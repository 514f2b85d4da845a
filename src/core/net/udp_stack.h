// The UDP endpoint layer over ring providers: what the VMA face puts
// behind each offloaded UDP socket. A UdpStack serves the rx queues of one
// netdev (every queue: traffic may arrive on any): bind() steers an
// endpoint's (address, port) to the rings through the provider's flow
// table and enters it in the demux table; poll_rx() parses every received
// frame (parse_frame), counts what is not delivered, and queues the rest
// on their endpoint, the frame's Buffer kept with its view on the UDP
// payload (zero copy: the receiver holds the UMEM frame until it lets the
// Buffer go, which recycles it into the fill ring). Sending is udp_tx.h.
//
// A frame the ring hands over cannot go back to the kernel (AF_XDP has no
// re-injection): one the parser gives "to the kernel" is counted as lost
// (rx_to_kernel_lost). The steering program passes such frames before they
// reach the ring, so the counter stays at zero unless a flow's steering and
// the parser disagree. TCP segments go to Config::tcp (the TCP stack) when
// there is one: enqueued under the lock, drained after it (rx_segment.h).
//
// Multicast: an endpoint joins a group (join(), with a source filter); the
// group's frames to its port are steered while any endpoint is a member
// and each member the filter admits gets its own handle on the frame (one
// frame, no copies). Several endpoints may share an address and port when
// every one was bound `shared` (the socket's SO_REUSEADDR/SO_REUSEPORT):
// each group member on it gets the group's datagrams, unicast goes to the
// last one bound (as Linux's lookup finds the newest socket first).
// Steering flows are counted by their holders (binds and groups): asked
// for by the first, removed with the last.
//
// Locking: one mutex over the demux table and the endpoints' queues, held
// while the rings are polled; frames are released outside it.
//
// Lifetimes: endpoints and the UdpTx go before their stack, the stack
// before its ring queues, each queue before its pool. Addresses are as
// the wire has them: an IPv4-mapped IPv6 address is the face's to turn
// into IPv4 first.
#pragma once
#include "core/base/api.h"
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/base/kick.h"
#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/net/frame_build.h"
#include "core/net/frame_reason.h"
#include "core/net/multicast.h"
#include "core/net/netlink_addr.h"
#include "core/net/rx_segment.h"
#include "core/prov/ring.h"
#include "core/prov/steering.h"

namespace ss::net {

// A UDP address: ip (AF_INET or AF_INET6; all zero bytes: any) and port
// (host order).
struct UdpAddr {
  IpAddr ip;
  uint16_t port = 0;
  friend bool operator==(const UdpAddr&, const UdpAddr&) = default;
};

// One received datagram: buf's view is the payload, inside its frame.
struct Datagram {
  mem::Buffer buf;
  UdpAddr src;
};

struct UdpRxCounters {
  FrameCounters frames;          // by parse_frame's reason (kAccepted: parsed whole)
  uint64_t delivered = 0;        // queued on an endpoint
  uint64_t delivered_bytes = 0;  // their payloads
  uint64_t no_endpoint = 0;      // parsed, but no endpoint has its address and port
  uint64_t not_from_peer = 0;    // a connected endpoint's, from another source
  uint64_t queue_full = 0;       // the endpoint's receive queue was full
  uint64_t to_kernel_lost = 0;   // a "to the kernel" frame on the ring: not re-injectable
  uint64_t chained = 0;          // a datagram over several frames: dropped
  uint64_t tcp_linked = 0;       // TCP segments over several frames (jumbo)
  uint64_t tcp = 0;              // TCP segments handed to the TCP stack
  uint64_t source_filtered = 0;  // a group's frame no member's source filter admits
  uint64_t group_copies = 0;     // handles a group's frame gave beyond its first member
  uint64_t looped = 0;           // our own multicast sends delivered here (IP_MULTICAST_LOOP)
  uint64_t fill_topped_up = 0;   // spare pool frames put in a fill ring the program ran low
  uint64_t fill_dry = 0;         // polls that found a fill ring empty and no spare frame
};

class UdpStack;

// What a socket's options say about its sends: TTL / hop limit and TOS;
// for groups the TTL, loop (local members get a copy), out interface (0:
// the route's) and source (empty: the bound address or the route's).
struct UdpTxOptions {
  uint8_t ttl = 64, tos = 0;
  uint8_t mc_ttl = 1;
  bool mc_loop = true;
  int mc_ifindex = 0;
  IpAddr mc_src;
};

// An offloaded UDP socket's state in the stack. Made by UdpStack::bind;
// its destruction unbinds it (flows removed, demux entries gone, queued
// datagrams released).
class UdpEndpoint {
 public:
  SS_API ~UdpEndpoint();
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;

  const UdpAddr& local() const { return local_; }
  // Accept only datagrams from `peer` (as a connected UDP socket); an
  // empty peer (family AF_UNSPEC) accepts everyone again.
  SS_API void connect(const UdpAddr& peer);
  const UdpAddr& peer() const { return peer_; }
  // Whether `family` was steered to the rings (the other one, if the
  // endpoint takes both, stays with the kernel socket).
  bool steered(sa_family_t family) const;
  // Lends the port's frames to the kernel socket (lend: its bind flows and
  // its groups' flows no longer steered, so another process sharing that
  // socket, a fork child, receives them; what the rings queued stays
  // here), or takes them back. Groups joined while lent start lent. A
  // flow another endpoint also holds (a shared bind, a group another
  // member here joined) stays steered. The flows that moved (0: none), or
  // the steering's -errno taking back (that flow then stays with the
  // kernel).
  SS_API int lend_to_kernel(bool lend);

  // Zero-copy receive: polls the rings when none is queued (poll_rings),
  // then moves the oldest datagram into *out. 1, or 0 when none waits. The
  // caller releases out->buf when done (the frame then goes back to the
  // fill ring).
  SS_API int recv_zcopy(Datagram* out, bool poll_rings = true);
  // Copying receive: at most len bytes into buf, *full_len the datagram's
  // size (larger: truncated, as MSG_TRUNC), *src its source. The copied
  // length, or -EAGAIN when none waits.
  ssize_t recv(void* buf, size_t len, UdpAddr* src, size_t* full_len);
  SS_API size_t queued() const;

  // A sleep waiting for this endpoint's datagrams: another thread's poll
  // of the rings may queue one here and leave the ring empty, so the
  // sleeper also waits on this kick, which every datagram queued wakes.
  // join_waiters: the calling thread's kick eventfd (kick.h), a waiter
  // from now (before the sleeper's last look), or -errno; leave_waiters
  // after the sleep
  // (`woken`: it saw the eventfd readable).
  SS_API int join_waiters();
  SS_API void leave_waiters(bool woken);
  // Watched: each poll that queues a datagram here calls the stack's
  // on_watched_arrival once its lock is released (socketXtreme members,
  // whose program sleeps on the rings' descriptor, not on this endpoint).
  SS_API void watch(bool on);
  // Datagrams queued here since bind: moves with every arrival (what an
  // edge-triggered epoll counts).
  SS_API uint64_t arrivals() const;

  // Joins multicast `group` (the endpoint's family, or IPv4 on a dual
  // endpoint) with `filter`, or replaces the filter when a member already.
  // -EINVAL for an address that is not a group, a family the endpoint
  // does not take or an endpoint bound to another address (it would get
  // none of the group's datagrams); else 0 or the steering's -errno.
  SS_API int join(const IpAddr& group, const McastFilter& filter);
  // Leaves `group`: 0, or -ENOENT when not a member.
  SS_API int leave(const IpAddr& group);

  // The send options (any thread; a send reads them under the same lock).
  SS_API void set_tx_options(const UdpTxOptions& o);

  // IPv4 IDs (udp_tx.cc, under the sender's lock).
  Ipv4IdSequence ip_id;

 private:
  friend class UdpStack;
  friend class UdpTx;
  UdpEndpoint(UdpStack* stack, const UdpAddr& local, bool dual, bool shared);
  UdpStack* stack_;
  UdpAddr local_;
  bool dual_;           // an IPv6 wildcard that also takes IPv4 (no IPV6_V6ONLY)
  bool shared_;         // may share its address and port with other shared ones
  bool bound_ = false;  // entered in the demux table (a failed bind's is not)
  bool steered_v4_ = false, steered_v6_ = false;  // under the stack's mutex after bind
  bool lent_v4_ = false, lent_v6_ = false;        // under the stack's mutex: lend_to_kernel's
  bool lending_ = false;                          // under the stack's mutex: lent, groups too
  bool watched_ = false;                          // under the stack's mutex
  UdpAddr peer_;                                  // under the stack's mutex
  UdpTxOptions tx_;                               // under the stack's mutex
  std::deque<Datagram> queue_;                    // under the stack's mutex
  uint64_t arrivals_ = 0;                         // under the stack's mutex
  Kick waiters_;                                  // under the stack's mutex
};

// One rx queue of the netdev and its pool (a pool per queue: a pool has
// one recycler, the queue's fill ring).
struct UdpRing {
  prov::RingQueue* queue = nullptr;
  mem::Pool* pool = nullptr;
};

class UdpStack {
 public:
  struct Config {
    std::vector<UdpRing> rings;              // every rx queue of the netdev; tx uses the first
    prov::FlowSteering* steering = nullptr;  // asked for UDP flows
    SegmentInput* tcp = nullptr;             // the TCP stack: else TCP is to_kernel_lost
    int ifindex = 0;               // the netdev's (sends routed elsewhere go to the kernel)
    uint32_t initial_fill = 1024;  // frames put in each fill ring at create
    size_t queue_limit = 4096;     // datagrams an endpoint holds before dropping
    // After a poll that queued a datagram on a watched endpoint, the lock
    // released, on the polling thread.
    std::function<void()> on_watched_arrival;
  };
  // Fills each fill ring. -EINVAL for a config without rings or steering.
  SS_API static int create(const Config& cfg, std::unique_ptr<UdpStack>* out);
  SS_API ~UdpStack();

  // Binds (local.ip all zero: every address of its family; dual: an IPv6
  // wildcard that takes IPv4 too). Steers each family it takes: a family
  // the provider cannot steer is left to the kernel socket (steered()
  // says which); -EAFNOSUPPORT when none could be, -EADDRINUSE when the
  // address and port are bound here already (unless this bind and every
  // earlier one are `shared`), else the steering's -errno. A group address
  // is steered by joins, not by the bind.
  SS_API int bind(const UdpAddr& local, bool dual, std::unique_ptr<UdpEndpoint>* out,
                  bool shared = false);

  // Receives up to `budget` frames from every ring and queues them on
  // their endpoints. The number of frames taken, or -errno.
  SS_API int poll_rx(int budget = 64);

  // A frame we sent to a group, for the local members (IP_MULTICAST_LOOP):
  // copied into a frame of the first ring's pool and delivered as if
  // received.
  void loop_back(std::span<const uint8_t> frame);

  SS_API UdpRxCounters rx_counters() const;
  const Config& config() const { return cfg_; }
  int ifindex() const { return cfg_.ifindex; }

 private:
  friend class UdpEndpoint;
  friend class UdpTx;
  struct Key {
    sa_family_t family;
    uint8_t ip[16];
    uint16_t port;
    friend auto operator<=>(const Key&, const Key&) = default;
  };
  static Key key(sa_family_t family, const uint8_t* ip, uint16_t port);
  struct Member {
    UdpEndpoint* ep;
    McastFilter filter;
  };
  // A group's flow is steered while a member's endpoint is not lending.
  struct Group {
    std::vector<Member> members;
    bool steered = false;
  };
  // What a poll leaves for after the lock: frames to release, TCP
  // segments enqueued on cfg.tcp (the destructor drains them), and a
  // watched endpoint's arrival (the destructor calls the hook).
  struct Spill {
    explicit Spill(const Config& cfg) : cfg(cfg) {}
    ~Spill();
    const Config& cfg;
    bool tcp = false;
    bool watched = false;
    std::vector<mem::Buffer> drop;
  };
  explicit UdpStack(const Config& cfg) : cfg_(cfg) {}
  void unbind(UdpEndpoint* ep);
  int lend(UdpEndpoint* ep, bool lend);
  // Steers or unsteers g's flow as its members now want: 1 when it moved,
  // 0 when not, or the steering's -errno (the flow stays unsteered).
  int steer_group_locked(const Key& k, Group& g);
  int join(UdpEndpoint* ep, const IpAddr& group, const McastFilter& filter);
  int leave(UdpEndpoint* ep, const IpAddr& group);
  bool can_bind_locked(const Key& k, bool shared) const;
  // The steering's flow for (ip, port), counted by its holders.
  int steer_ref_locked(const IpAddr& ip, uint16_t port);
  void steer_unref_locked(const IpAddr& ip, uint16_t port);
  // Holders of the steering's flow for (ip, port): 0 when not asked for.
  int steer_holders_locked(const IpAddr& ip, uint16_t port) const;
  UdpEndpoint* find_locked(const FrameFields& f) const;
  // Takes one received frame; what it does not keep goes to *out.
  void deliver_locked(mem::Buffer&& frame, Spill* out);
  // A group's frame to each member whose filter admits src.
  void deliver_group_locked(mem::Buffer&& frame, size_t at, size_t len, const Key& group,
                            const UdpAddr& src, Spill* out);
  // Queues frame (view [at, at+len)) on ep unless its peer or queue refuse.
  void queue_locked(UdpEndpoint* ep, mem::Buffer&& frame, size_t at, size_t len, const UdpAddr& src,
                    Spill* out);
  int poll_locked(int budget, Spill* out);
  // Spare pool frames into r's fill ring when the program holds most of
  // its frames (refused ones to *drop).
  void top_up_locked(const UdpRing& r, std::vector<mem::Buffer>* drop);

  const Config cfg_;
  mutable std::mutex mu_;                           // everything below and the endpoints' queues
  std::map<Key, std::vector<UdpEndpoint*>> demux_;  // in bind order
  std::map<Key, Group> groups_;                     // (group, port): its members
  std::map<Key, int> steer_refs_;                   // flows asked for, by holders
  UdpRxCounters rx_;
  bool warned_dry_ = false;
};

}  // namespace ss::net
