// The passive side of the software providers: accepts kernel stream
// connections on the rsocket's listening socket, reads each peer's hello
// without blocking (a silent or slow peer cannot stall other peers) and
// hands out endpoints whose private data is ready.
#pragma once
#include <chrono>
#include <vector>

#include "core/prov/provider.h"

namespace ss::prov::soft {

class StreamListener : public Listener {
 public:
  // `sock` is a listening stream socket owned by the caller (-1: none
  // yet, add_socket() brings them); `kind` is the provider its connections
  // speak.
  static int create(int sock, Kind kind, std::unique_ptr<StreamListener>* out);
  ~StreamListener() override;
  // Builds the endpoint for a connection whose hello arrived (nullptr: refuse).
  using PassiveFactory = std::unique_ptr<Endpoint> (*)(int fd, const uint8_t* pdata, size_t len);
  // Also serve `sock` (another listening socket, e.g. the shm rendezvous),
  // closing it with the listener when `owned`.
  int add_socket(int sock, Kind kind, PassiveFactory factory, bool owned);
  int fd() const override { return epfd_; }
  int get_request(std::unique_ptr<Endpoint>* ep) override;

 private:
  struct Pending {
    int fd;
    Kind kind;
    PassiveFactory factory;
    std::chrono::steady_clock::time_point deadline;
    uint8_t buf[24 + kMaxPrivateData];
    size_t got;
  };
  struct Source {
    int fd;
    Kind kind;
    PassiveFactory factory;
    bool owned;
  };
  StreamListener() = default;
  // 0, or -EMFILE/-ENFILE: a connection waits in the backlog for a descriptor.
  int accept_new(const Source& src);
  // 1: hello complete, 0: needs more, -1: drop the connection.
  int read_hello(Pending& p);
  void drop(size_t i);

  int epfd_ = -1;
  std::vector<Source> sources_;
  std::vector<Pending> pending_;
};

}  // namespace ss::prov::soft
