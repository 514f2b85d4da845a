// Neighbours (next hop on an interface -> MAC and NUD state) as rtnetlink
// describes them: kept by RTM_NEWNEIGH / RTM_DELNEIGH events and by the
// answers to single RTM_GETNEIGH requests. Not locked: its owner
// (NetlinkView) serialises access.
#pragma once
#include <linux/neighbour.h>
#include <linux/netlink.h>

#include <cstdint>
#include <map>
#include <utility>

#include "core/net/netlink_addr.h"

namespace ss::net {

enum class NeighState : uint8_t {
  kReady,    // the MAC may be used (reachable, stale, delay, probe, permanent, noarp)
  kPending,  // not known yet: a resolution runs in the kernel (ask again)
  kFailed,   // the kernel could not resolve it (send through the kernel)
};

struct Neighbour {
  NeighState state = NeighState::kPending;
  uint8_t mac[6] = {};
  uint16_t nud = NUD_NONE;  // the kernel's NUD_* state
};

struct NeighEntry {
  uint16_t nud = NUD_NONE;  // NUD_NONE: the kernel has no entry
  uint8_t mac[6] = {};
  bool has_mac = false;
  // A resolution was started for this state of the entry: the next
  // message about it (a new state) allows another.
  bool kicked = false;

  Neighbour answer() const;
  // Whether the kernel should be asked to (re)resolve it: unknown to the
  // kernel; stale (our traffic bypasses the kernel, which would never
  // confirm it otherwise); failed (the kernel retries when a packet is
  // sent there, and our packets do not pass through it).
  bool wants_kick() const {
    return !kicked && (nud == NUD_NONE || (nud & (NUD_STALE | NUD_FAILED)));
  }
};

using NeighKey = std::pair<int, IpAddr>;  // ifindex, next hop

// The key and entry a neighbour message describes; false when it is not
// one we keep (another family, a proxy entry, malformed).
bool parse_neigh(const nlmsghdr* nlh, NeighKey* key, NeighEntry* entry);

class NeighTable {
 public:
  // Applies RTM_NEWNEIGH / RTM_DELNEIGH: true when it was one.
  bool apply(const nlmsghdr* nlh);
  NeighEntry* find(const NeighKey& k) {
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : &it->second;
  }
  void put(const NeighKey& k, const NeighEntry& e) { map_[k] = e; }
  void clear() { map_.clear(); }
  // Counts every message applied: a single request's answer read before
  // a later event must not overwrite what that event said.
  uint64_t changes() const { return changes_; }

 private:
  std::map<NeighKey, NeighEntry> map_;
  uint64_t changes_ = 0;
};

}  // namespace ss::net
