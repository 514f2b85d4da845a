#include "core/prov/verbs/verbs_listener.h"

#include <cerrno>
#include <cstring>

#include "core/base/log.h"
#include "core/prov/verbs/cm_events.h"
#include "core/prov/verbs/verbs_endpoint.h"
#include "core/res/verbs_manager.h"

namespace ss::prov::verbs {

int VerbsListener::create(int sock, int backlog, std::unique_ptr<Listener>* out) {
  if (res::device_count() == 0) return -ENODEV;
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
  if (rdma_listen(l->id_, backlog)) return -errno;
  *out = std::move(l);
  return 0;
}

VerbsListener::~VerbsListener() {
  if (id_) rdma_destroy_id(id_);
  if (ch_) rdma_destroy_event_channel(ch_);
}

int VerbsListener::get_request(std::unique_ptr<Endpoint>* ep) {
  for (;;) {
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
    // The id can move to a channel of its own only once its event is acked.
    rdma_ack_cm_event(e);
    if (id->verbs && id->verbs->device->transport_type == IBV_TRANSPORT_IWARP) {
      SS_WARN("verbs: connection request on an iWARP device refused (not supported yet)");
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
      continue;
    }
    *ep = VerbsEndpoint::make_passive(id, pdata, plen);
    if (*ep) return 0;
  }
}

}  // namespace ss::prov::verbs
