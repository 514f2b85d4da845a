#include "core/prov/selection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/config_core.h"
#include "core/base/log.h"
#include "core/prov/listener_set.h"
#include "core/prov/registry.h"
#include "core/prov/sock_addr.h"

namespace ss::prov {

namespace {

// The provider SLIPSTREAM_PROVIDER names (*named), or nullptr for auto. The
// config layer has already warned about a name it does not know (and chose
// auto); a known name that no provider registered is -ENOTSUP.
int configured(const Descriptor** named) {
  const std::string name = config::core::table.get_string(config::core::Id::kProvider);
  *named = nullptr;
  if (name == "auto") return 0;
  *named = find_provider(name.c_str(), Family::kConnection);
  return *named ? 0 : -ENOTSUP;
}

// Highest preference first; equal ones keep providers()' name order.
std::vector<const Descriptor*> by_preference() {
  std::vector<const Descriptor*> all = providers(Family::kConnection);
  std::stable_sort(all.begin(), all.end(), [](const Descriptor* a, const Descriptor* b) {
    return a->connection->preference > b->connection->preference;
  });
  return all;
}

}  // namespace

int create_active(const Peer& peer, std::unique_ptr<Endpoint>* out) {
  const Descriptor* named;
  if (int rc = configured(&named)) return rc;
  if (named) {
    const ConnectionOps& ops = *named->connection;
    int rc = ops.probe(peer, true);
    return rc ? rc : ops.create(peer, out);
  }
  int rc = -ENOTSUP;
  for (const Descriptor* d : by_preference()) {
    const ConnectionOps& ops = *d->connection;
    if (ops.probe(peer, false)) continue;
    if ((rc = ops.create(peer, out)) == 0) return 0;
    SS_DEBUG("%s unavailable for this peer (%s); trying the next provider", d->name, strerror(-rc));
  }
  return rc;
}

int create_listener(int sock, std::unique_ptr<Listener>* out, int backlog, bool off_stream) {
  const Descriptor* named;
  if (int rc = configured(&named)) return rc;
  if (int rc = bind_if_unbound(sock)) return rc;
  ListenSite site{sock, backlog};
  site.off_stream = off_stream;
  std::vector<std::unique_ptr<Listener>> made;
  for (const Descriptor* d : by_preference()) {
    const ConnectionOps& ops = *d->connection;
    if (named && d != named && !ops.listens_always) continue;
    std::unique_ptr<Listener> l;
    if (int rc = ops.listen(&site, d == named, &l)) return rc;
    if (l) made.push_back(std::move(l));
  }
  if (made.empty()) return -ENOTSUP;
  if (made.size() == 1) {
    *out = std::move(made.front());
    return 0;
  }
  std::unique_ptr<ListenerSet> set;
  if (int rc = ListenerSet::create(&set)) return rc;
  for (auto& l : made)
    if (int rc = set->add(std::move(l))) return rc;
  *out = std::move(set);
  return 0;
}

bool can_route() {
  const Descriptor* named;
  if (configured(&named)) return false;
  for (const Descriptor* d : providers(Family::kConnection)) {
    if (named && d != named) continue;
    if (d->connection->can_route && d->connection->can_route()) return true;
  }
  return false;
}

}  // namespace ss::prov
