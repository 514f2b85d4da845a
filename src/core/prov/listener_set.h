// A listener made of listeners: one readable fd and one request queue for
// a listening rsocket that is reachable over several providers at once
// (kernel TCP and the shm rendezvous, plus rdma_cm where a device serves
// the address).
#pragma once
#include <memory>
#include <vector>

#include "core/prov/connection.h"

namespace ss::prov {

class ListenerSet final : public Listener {
 public:
  static int create(std::unique_ptr<ListenerSet>* out);
  ~ListenerSet() override;
  int add(std::unique_ptr<Listener> member);
  int fd() const override { return epfd_; }
  // Takes turns among the members so a busy one cannot starve the others.
  int get_request(std::unique_ptr<Endpoint>* ep) override;
  // The members the child can serve go on; those it cannot (verbs: their
  // objects are the parent's) are let go of, never used nor destroyed: 1
  // then. -ENOTSUP when none is left (the set then holds nothing).
  int fork_child() override;

 private:
  ListenerSet() = default;
  int epfd_ = -1;
  std::vector<std::unique_ptr<Listener>> members_;
  size_t next_ = 0;
};

}  // namespace ss::prov
