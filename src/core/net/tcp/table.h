// A stack's lookup table (one per stack, no thread per connection): the
// connections by their 4-tuple, hashed with the stack's secret key so a
// peer cannot aim its tuples at one bucket, and the listeners by local
// address and port (a wildcard address serves the whole family). route()
// says where a received segment goes, with RFC 6191's TIME-WAIT reuse: a
// SYN newer than what a TIME-WAIT connection last saw goes to the
// listener in its place, as Linux. The table holds pointers only; the
// stack owns the connections and listeners, and its lock guards all.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/isn.h"
#include "core/net/tcp/listener.h"

namespace ss::net::tcp {

class Table {
 public:
  Table() = default;
  Table(const Table&) = delete;  // the hasher points at this table's key
  Table& operator=(const Table&) = delete;
  // 0, or -EADDRINUSE when the tuple (or the address and port) is taken.
  int add(const FourTuple& t, Connection* c);
  void remove(const FourTuple& t);
  Connection* find(const FourTuple& t) const;
  int listen(const IpAddr& local, uint16_t port, Listener* l);
  void unlisten(const IpAddr& local, uint16_t port);
  // The listener for a segment to local:port: the address's own, else the
  // wildcard (all zero bytes) of its family.
  Listener* listener_for(const IpAddr& local, uint16_t port) const;
  size_t connections() const { return conns_.size(); }

  enum class Route : uint8_t {
    kConnection,  // *conn takes it
    kReuse,       // a SYN may replace the TIME-WAIT *conn: the stack drops that one,
                  // then hands the SYN to *listener
    kListener,    // *listener takes it
    kNone,        // nobody: the stack answers with reset_reply()
  };
  Route route(const FourTuple& t, const Header& h, const Options& o, Connection** conn,
              Listener** listener) const;

 private:
  struct TupleHash {
    const SecretHash* key;
    size_t operator()(const FourTuple& t) const { return (*key)(t); }
  };
  SecretHash key_;
  std::unordered_map<FourTuple, Connection*, TupleHash> conns_{64, TupleHash{&key_}};
  std::map<std::pair<IpAddr, uint16_t>, Listener*> listeners_;
};

}  // namespace ss::net::tcp
