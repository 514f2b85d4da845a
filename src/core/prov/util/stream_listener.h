// The passive side of a stream provider: accepts kernel stream
// connections on one listening socket (tcp: the rsocket's own; shm: its
// rendezvous), reads each peer's hello without blocking (a silent or slow
// peer cannot stall other peers) and hands out endpoints whose private
// data is ready.
#pragma once
#include <chrono>
#include <vector>

#include "core/prov/connection.h"
#include "core/prov/util/frame.h"

namespace ss::prov::util {

class StreamListener : public Listener {
 public:
  // Builds the endpoint for a connection whose hello arrived (nullptr: refuse).
  using PassiveFactory = std::unique_ptr<Endpoint> (*)(int fd, const uint8_t* pdata, size_t len);
  // Serves the listening socket `sock`, whose peers speak `proto` (a hello
  // with another tag is refused). When `owned`, the listener closes it
  // (once created: on failure it stays the caller's).
  static int create(int sock, const StreamProto& proto, PassiveFactory factory, bool owned,
                    std::unique_ptr<Listener>* out);
  ~StreamListener() override;
  int fd() const override { return epfd_; }
  int get_request(std::unique_ptr<Endpoint>* ep) override;
  int fork_child() override;

 private:
  struct Pending {
    int fd;
    std::chrono::steady_clock::time_point deadline;
    uint8_t buf[24 + kMaxPrivateData];
    size_t got;
  };
  struct Source {
    int fd;
    const StreamProto* proto;
    PassiveFactory factory;
    bool owned;
  };
  StreamListener() = default;
  // 0, or -EMFILE/-ENFILE: a connection waits in the backlog for a descriptor.
  int accept_new();
  // 1: hello complete, 0: needs more, -1: drop the connection.
  int read_hello(Pending& p);
  void drop(size_t i);

  int epfd_ = -1;
  Source source_{-1, nullptr, nullptr, false};
  std::vector<Pending> pending_;
};

}  // namespace ss::prov::util
