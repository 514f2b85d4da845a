#include "core/prov/verbs/cm_events.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ss::prov::verbs {

int set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -errno;
  return 0;
}

int cm_event_errno(const rdma_cm_event* ev) {
  switch (ev->event) {
    case RDMA_CM_EVENT_REJECTED:
      return ECONNREFUSED;
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
      // The kernel puts a negative errno in status for these.
      return ev->status < 0 ? -ev->status : EHOSTUNREACH;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return ENODEV;
    default:
      return ev->status < 0 ? -ev->status : ECONNREFUSED;
  }
}

int export_route(const rdma_cm_id* id, void* buf, size_t* len) {
  const int n = id->route.num_paths;
  if (n <= 0 || !id->route.path_rec) return -ENOENT;
  if (*len < sizeof(ibv_path_data)) return -EINVAL;
  size_t fit = std::min<size_t>(static_cast<size_t>(n), *len / sizeof(ibv_path_data));
  auto* out = static_cast<ibv_path_data*>(buf);
  for (size_t i = 0; i < fit; i++) {
    const ibv_sa_path_rec& s = id->route.path_rec[i];
    ibv_path_data d{};
    d.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
    ibv_path_record& p = d.path;
    p.service_id = 0;
    p.dgid = s.dgid;
    p.sgid = s.sgid;
    p.dlid = s.dlid;
    p.slid = s.slid;
    // flow label in bits 27:8, hop limit in 7:0 (big-endian field).
    p.flowlabel_hoplimit = htobe32((be32toh(s.flow_label) << 8) | s.hop_limit);
    p.tclass = s.traffic_class;
    p.reversible_numpath = static_cast<uint8_t>((s.reversible ? 0x80 : 0) | (s.numb_path & 0x7f));
    p.pkey = s.pkey;
    p.qosclass_sl = htobe16(s.sl & 0xf);
    p.mtu = static_cast<uint8_t>((s.mtu_selector << 6) | (s.mtu & 0x3f));
    p.rate = static_cast<uint8_t>((s.rate_selector << 6) | (s.rate & 0x3f));
    p.packetlifetime =
        static_cast<uint8_t>((s.packet_life_time_selector << 6) | (s.packet_life_time & 0x3f));
    p.preference = s.preference;
    memcpy(&out[i], &d, sizeof d);
  }
  *len = fit * sizeof(ibv_path_data);
  return 0;
}

}  // namespace ss::prov::verbs
