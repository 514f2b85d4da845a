#include "core/prov/verbs/verbs_listener.h"

#include <poll.h>

#include <cerrno>
#include <cstring>

#include "core/base/fd_spare.h"
#include "core/base/log.h"
#include "core/prov/verbs/cm_events.h"
#include "core/prov/verbs/verbs_endpoint.h"
#include "core/res/verbs_manager.h"

namespace ss::prov::verbs {

namespace {
// What answering one request makes: the connection's rdma_cm channel and
// epoll set, its completion channel, the rsocket's name, and a spare.
constexpr int kDescriptorsPerRequest = 5;
}  // namespace

int VerbsListener::create(int sock, int backlog, std::unique_ptr<Listener>* out, bool* tcp_port) {
  *tcp_port = false;
  if (int n = res::device_count(); n <= 0) return n < 0 ? n : -ENODEV;
  if (int rc = res::usable_here()) return rc;
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len)) return -errno;
  std::unique_ptr<VerbsListener> l(new (std::nothrow) VerbsListener);
  if (!l) return -ENOMEM;
  if (!(l->ch_ = rdma_create_event_channel())) return -ENODEV;
  int rc = set_nonblocking(l->ch_->fd);
  if (rc) return rc;
  if (rdma_create_id(l->ch_, &l->id_, nullptr, RDMA_PS_TCP)) return -errno;
  // Without an RDMA device behind the address, bind fails: not an error
  // for the rsocket, which still listens on the other providers.
  if (rdma_bind_addr(l->id_, reinterpret_cast<sockaddr*>(&name)))
    return errno == EADDRNOTAVAIL || errno == ENODEV ? -ENODEV : -errno;
  // A wildcard id listens on every device, a bound one on its own.
  const bool iwarp = l->id_->verbs ? l->id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP
                                   : res::any_iwarp_device();
  int reuse = 0;
  socklen_t reuse_len = sizeof reuse;
  if (iwarp) {
    // The device binds a kernel TCP socket to this address and port (with
    // SO_REUSEADDR); the rsocket's socket keeps its name but must share.
    const int on = 1;
    if (getsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &reuse, &reuse_len) ||
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on))
      return -errno;
  }
  if (rdma_listen(l->id_, backlog)) {
    const int err = errno;
    // The kernel socket may listen after all: as the application set it.
    if (iwarp && !reuse) setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
    return -err;
  }
  *tcp_port = iwarp;
  *out = std::move(l);
  return 0;
}

VerbsListener::~VerbsListener() {
  if (id_) rdma_destroy_id(id_);
  if (ch_) rdma_destroy_event_channel(ch_);
}

int VerbsListener::get_request(std::unique_ptr<Endpoint>* ep) {
  for (;;) {
    // Out of descriptors, a request taken now could only be refused (its
    // channel, epoll set, completion channel and name need one each): it
    // stays queued in rdma_cm, the peer waiting as in a kernel backlog,
    // and the caller hears EMFILE, as from accept(2).
    pollfd p{ch_->fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return -EAGAIN;
    if (int rc = descriptor_shortage(kDescriptorsPerRequest, true)) return rc;
    rdma_cm_event* e = nullptr;
    if (rdma_get_cm_event(ch_, &e) != 0) return errno == EINTR ? -EAGAIN : -errno;
    if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      SS_DEBUG("verbs: listener event %s ignored", rdma_event_str(e->event));
      rdma_ack_cm_event(e);
      continue;
    }
    rdma_cm_id* id = e->id;
    uint8_t pdata[kMaxPrivateData];
    size_t plen = std::min<size_t>(e->param.conn.private_data_len, sizeof pdata);
    if (plen && e->param.conn.private_data)
      memcpy(pdata, e->param.conn.private_data, plen);
    else
      plen = 0;
    // For the iWARP passive side, the request's initiator_depth is the
    // peer's IRD: how many reads of ours it will answer.
    const uint8_t ird = e->param.conn.initiator_depth;
    // The id can move to a channel of its own only once its event is acked.
    rdma_ack_cm_event(e);
    *ep = VerbsEndpoint::make_passive(id, pdata, plen, ird);
    if (*ep) return 0;
    if (errno == EMFILE || errno == ENFILE) {  // taken by the program meanwhile
      const int err = errno;
      reserve_free();  // what it made stays taken: the program is out
      return -err;
    }
  }
}

}  // namespace ss::prov::verbs
