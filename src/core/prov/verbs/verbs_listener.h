// The verbs side of a listening rsocket: an rdma_cm id bound to the same
// address and port as the rsocket's kernel socket, listening in the TCP
// port space, so stock librdmacm clients (and ours on verbs) reach it.
// InfiniBand and RoCE have a port space of their own; iWARP runs over the
// kernel's TCP, so there the rdma_cm listener alone holds the port.
#pragma once
#include <rdma/rdma_cma.h>

#include <memory>

#include "core/prov/connection.h"

namespace ss::prov::verbs {

class VerbsListener final : public Listener {
 public:
  // -ENODEV when no RDMA device serves the address of `sock`. Call it
  // before `sock` listens: *tcp_port is set when an iWARP device may serve
  // the address, whose listener then holds the port in the kernel's TCP
  // port space, so `sock` must not listen on it (it gets SO_REUSEADDR to
  // share the binding).
  static int create(int sock, int backlog, std::unique_ptr<Listener>* out, bool* tcp_port);
  ~VerbsListener() override;
  int fd() const override { return ch_->fd; }
  int get_request(std::unique_ptr<Endpoint>* ep) override;

 private:
  VerbsListener() = default;
  rdma_event_channel* ch_ = nullptr;
  rdma_cm_id* id_ = nullptr;
};

}  // namespace ss::prov::verbs
