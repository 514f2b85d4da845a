#include "core/net/netlink_view.h"

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "core/base/log.h"
#include "core/net/netlink_socket.h"

namespace ss::net {

namespace {

// The groups whose changes can alter an answer: neighbours, routes and
// policy rules (a rule picks the table), links and addresses (MTU, up,
// preferred source), IPv4 and IPv6.
constexpr unsigned kGroups[] = {
    RTNLGRP_NEIGH,      RTNLGRP_LINK,       RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
    RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_IPV4_RULE,   RTNLGRP_IPV6_RULE,
};

// Where a zero-length datagram that makes the kernel resolve a next hop
// goes: the discard port (the peer drops it).
constexpr uint16_t kDiscardPort = 9;

// The errors a route lookup answers with, cached like a route; any other
// (a failed request) is not.
bool is_route_answer(int err) {
  return err == 0 || err == -ENETUNREACH || err == -EHOSTUNREACH || err == -EACCES ||
         err == -EINVAL;
}

// Copies `e`'s answer out; true when the kernel should be asked to resolve
// it now (marked, so once per state of the entry).
bool take(NeighEntry& e, Neighbour* out) {
  *out = e.answer();
  if (!e.wants_kick()) return false;
  e.kicked = true;
  return true;
}

}  // namespace

int NetlinkView::open(const Options& opts, std::unique_ptr<NetlinkView>* out) {
  std::unique_ptr<NetlinkView> v(new NetlinkView(opts));
  // Subscribed before the first read: no change falls between the two.
  int rc = NetlinkSocket::open(kGroups, opts.event_rcvbuf, &v->events_);
  if (!rc) rc = NetlinkSocket::open({}, 0, &v->query_);
  if (!rc) rc = v->resync();
  if (rc) return rc;
  v->counters_.resyncs = 0;  // the first read is not a resync
  *out = std::move(v);
  return 0;
}

NetlinkView::NetlinkView(const Options& opts) : resolve_by_netlink_(opts.resolve_by_netlink) {}
NetlinkView::~NetlinkView() = default;

int NetlinkView::fd() const { return events_->fd(); }

NetlinkView::Counters NetlinkView::counters() const {
  std::lock_guard<std::mutex> g(mu_);
  return counters_;
}

bool NetlinkView::rules_use_ports() {
  bool ports = false;
  std::lock_guard<std::mutex> q(query_mu_);
  fib_rule_hdr* frh;
  const int rc =
      query_->request(query_->start(RTM_GETRULE, NLM_F_DUMP, &frh), [&ports](const nlmsghdr* m) {
        if (m->nlmsg_type != RTM_NEWRULE) return;
        const nlattr* tb[FRA_MAX + 1] = {};
        netlink_attrs(m, sizeof(fib_rule_hdr), tb, FRA_MAX);
        if (tb[FRA_SPORT_RANGE] || tb[FRA_DPORT_RANGE]) ports = true;
      });
  return rc != 0 || ports;
}

int NetlinkView::resync() {
  const bool ports = rules_use_ports();
  LinkTable fresh;
  {
    std::lock_guard<std::mutex> q(query_mu_);
    const auto into_fresh = [&fresh](const nlmsghdr* m) { fresh.apply(m); };
    ifinfomsg* ifi;
    int rc = query_->request(query_->start(RTM_GETLINK, NLM_F_DUMP, &ifi), into_fresh);
    ifaddrmsg* ifa;
    if (!rc) rc = query_->request(query_->start(RTM_GETADDR, NLM_F_DUMP, &ifa), into_fresh);
    if (rc) return rc;
  }
  std::lock_guard<std::mutex> g(mu_);
  links_ = std::move(fresh);
  ports_in_rules_ = ports;
  // Neighbours are asked for again one by one as they are needed.
  neigh_.clear();
  routes_.clear();
  route_gen_++;
  counters_.resyncs++;
  return 0;
}

int NetlinkView::process_events() {
  bool lost = false;
  int rc;
  // After ENOBUFS the queue still holds events older than the loss: apply
  // them, then read everything again, so the newest word wins.
  while ((rc = events_->drain([this](const nlmsghdr* m) { apply(m); })) == -ENOBUFS) lost = true;
  if (rc) return rc;
  if (rules_changed_ && !lost) {  // the rules read again: do ports matter now?
    rules_changed_ = false;
    const bool ports = rules_use_ports();
    std::lock_guard<std::mutex> g(mu_);
    ports_in_rules_ = ports;
    routes_.clear();
    route_gen_++;
  }
  if (lost) {
    rules_changed_ = false;
    SS_INFO(
        "netlink: change events were lost (ENOBUFS); reading routes, links and addresses again");
    return resync();
  }
  return 0;
}

void NetlinkView::apply(const nlmsghdr* nlh) {
  std::lock_guard<std::mutex> g(mu_);
  if (neigh_.apply(nlh)) return;
  const bool links = links_.apply(nlh);
  switch (nlh->nlmsg_type) {
    case RTM_NEWROUTE:
    case RTM_DELROUTE:
      break;
    case RTM_NEWRULE:
    case RTM_DELRULE:
      rules_changed_ = true;
      ports_in_rules_ = true;  // until the rules are read again
      break;
    default:
      if (!links) return;
  }
  // Which cached flows a change touches is the kernel's business (rules,
  // metrics, prefixes): every route answer is asked again.
  routes_.clear();
  route_gen_++;
}

int NetlinkView::route(const Flow& f, Route* out) {
  uint64_t gen;
  Flow key = f;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!ports_in_rules_) key.sport = key.dport = 0;
    auto it = routes_.find(key);
    if (it != routes_.end()) {
      if (!it->second.err) *out = it->second.route;
      return it->second.err;
    }
    gen = route_gen_;
  }
  RouteAnswer a{};
  {
    std::lock_guard<std::mutex> q(query_mu_);
    a.err = query_route(*query_, f, &a.route);
  }
  std::lock_guard<std::mutex> g(mu_);
  counters_.route_queries++;
  if (!a.err && !a.route.mtu)
    if (const Link* l = links_.find(a.route.ifindex)) a.route.mtu = l->mtu;
  // A change applied while the kernel answered may have made it old:
  // return it, but do not keep it.
  if (gen == route_gen_ && is_route_answer(a.err)) {
    if (routes_.size() >= kMaxRoutes) routes_.clear();
    routes_[key] = a;
  }
  if (!a.err) *out = a.route;
  return a.err;
}

bool NetlinkView::link(int ifindex, Link* out) {
  std::lock_guard<std::mutex> g(mu_);
  const Link* l = links_.find(ifindex);
  if (l) *out = *l;
  return l;
}

bool NetlinkView::is_local(const IpAddr& a) {
  std::lock_guard<std::mutex> g(mu_);
  return links_.is_local(a);
}

std::vector<IpAddr> NetlinkView::local_addresses() {
  std::lock_guard<std::mutex> g(mu_);
  return links_.addresses();
}

int NetlinkView::neighbour(int ifindex, const IpAddr& next_hop, Neighbour* out) {
  const NeighKey k{ifindex, next_hop};
  std::optional<bool> hit;  // found in the cache: whether to kick
  uint64_t changes = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (NeighEntry* e = neigh_.find(k))
      hit = take(*e, out);
    else
      changes = neigh_.changes();
  }
  bool kick_now;
  if (hit) {
    kick_now = *hit;
  } else {
    NeighEntry asked;  // NUD_NONE: the kernel has no entry
    const int rc = ask_neighbour(k, &asked);
    if (rc && rc != -ENOENT) return rc;
    std::lock_guard<std::mutex> g(mu_);
    NeighEntry* e = neigh_.find(k);
    // An event applied meanwhile is newer than the answer: it wins.
    if (!e && neigh_.changes() == changes) {
      neigh_.put(k, asked);
      e = neigh_.find(k);
    }
    kick_now = take(e ? *e : asked, out);
  }
  if (kick_now) kick(k);
  return 0;
}

int NetlinkView::ask_neighbour(const NeighKey& k, NeighEntry* out) {
  std::lock_guard<std::mutex> q(query_mu_);
  ndmsg* nd;
  nlmsghdr* nlh = query_->start(RTM_GETNEIGH, 0, &nd);
  nd->ndm_family = k.second.family;
  nd->ndm_ifindex = k.first;
  mnl_attr_put(nlh, NDA_DST, k.second.size(), k.second.bytes);
  return query_->request(nlh, [&](const nlmsghdr* m) {
    NeighKey got;
    NeighEntry e;
    if (m->nlmsg_type == RTM_NEWNEIGH && parse_neigh(m, &got, &e) && got == k) *out = e;
  });
}

void NetlinkView::kick(const NeighKey& k) {
  {
    std::lock_guard<std::mutex> q(query_mu_);
    if (resolve_by_netlink_) {
      // The kernel creates the entry if needed and starts resolving it at
      // once (neigh_event_send), as if it had a packet to send there.
      ndmsg* nd;
      nlmsghdr* nlh = query_->start(RTM_NEWNEIGH, NLM_F_CREATE, &nd);
      nd->ndm_family = k.second.family;
      nd->ndm_ifindex = k.first;
      nd->ndm_state = NUD_NONE;
      nd->ndm_flags = NTF_USE;
      mnl_attr_put(nlh, NDA_DST, k.second.size(), k.second.bytes);
      const int rc = query_->request(nlh, [](const nlmsghdr*) {});
      if (!rc) {
        std::lock_guard<std::mutex> g(mu_);
        counters_.resolve_netlink++;
        return;
      }
      if (rc == -EPERM) {
        resolve_by_netlink_ = false;
        SS_INFO("netlink: no CAP_NET_ADMIN for NTF_USE; next hops resolved by a UDP datagram");
      } else {
        SS_DEBUG("netlink: NTF_USE for %s failed (%d); trying a UDP datagram",
                 k.second.str().c_str(), rc);
      }
    }
  }
  kick_by_datagram(k);
}

void NetlinkView::kick_by_datagram(const NeighKey& k) {
  // A send makes the kernel resolve the next hop as it routes the
  // datagram; an empty one to the discard port costs the peer nothing.
  sockaddr_storage ss;
  const socklen_t len = k.second.to_sockaddr(kDiscardPort, static_cast<uint32_t>(k.first), &ss);
  const int fd = socket(k.second.family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    SS_DEBUG("netlink: no UDP socket to resolve %s: %d", k.second.str().c_str(), errno);
    return;
  }
  if (sendto(fd, "", 0, 0, reinterpret_cast<const sockaddr*>(&ss), len) < 0) {
    SS_DEBUG("netlink: datagram to resolve %s: %d", k.second.str().c_str(), errno);
  } else {
    std::lock_guard<std::mutex> g(mu_);
    counters_.resolve_datagram++;
  }
  close(fd);
}

}  // namespace ss::net
