#include "core/net/tcp/table.h"

#include <cerrno>

namespace ss::net::tcp {

int Table::add(const FourTuple& t, Connection* c) {
  return conns_.emplace(t, c).second ? 0 : -EADDRINUSE;
}

void Table::remove(const FourTuple& t) { conns_.erase(t); }

Connection* Table::find(const FourTuple& t) const {
  const auto it = conns_.find(t);
  return it == conns_.end() ? nullptr : it->second;
}

int Table::listen(const IpAddr& local, uint16_t port, Listener* l) {
  return listeners_.emplace(std::pair{local, port}, l).second ? 0 : -EADDRINUSE;
}

void Table::unlisten(const IpAddr& local, uint16_t port) { listeners_.erase({local, port}); }

Listener* Table::listener_for(const IpAddr& local, uint16_t port) const {
  auto it = listeners_.find({local, port});
  if (it != listeners_.end()) return it->second;
  IpAddr any;
  any.family = local.family;
  it = listeners_.find({any, port});
  return it == listeners_.end() ? nullptr : it->second;
}

Table::Route Table::route(const FourTuple& t, const Header& h, const Options& o, Connection** conn,
                          Listener** listener) const {
  *conn = find(t);
  *listener = listener_for(t.local, t.local_port);
  if (*conn) {
    const bool syn_only = (h.flags & (kSyn | kAck | kRst)) == kSyn;
    if (syn_only && *listener && (*conn)->syn_may_reuse(h, o)) return Route::kReuse;
    return Route::kConnection;
  }
  return *listener ? Route::kListener : Route::kNone;
}

}  // namespace ss::net::tcp
