// A fork child's rings of its own beside its parent's (nginx's workers on
// the master's listener): the child asks the rings' owner, through the
// request socket fork_share.h names, for the descriptors that let it join
// a netdev's queues (prov/xdp's Device::join and JoinedQueue), then, once
// its own listener is on its rings, for its slot to take a share of the
// listening port's new connections (Device::set_group); or for a
// connection its parent left it (fork_join_take). The owner answers
// on its service thread (fork_share_serve); the child waits a second at
// most. Both sides are the same library: the messages are its structs.
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

#include <string>
#include <vector>

#include "core/base/own_fd.h"
#include "core/net/netlink_addr.h"
#if SS_VMA_XDP
#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_join.h"
#endif

namespace ss::vma::preload {

#if SS_VMA_XDP
// What a child needs to join a netdev (rings_share), with the
// descriptors this process received or made for it: the child's Device
// and queues keep what they need, the owner has sent them by its end.
struct JoinShare {
  JoinShare() = default;
  JoinShare(const JoinShare&) = delete;
  JoinShare& operator=(const JoinShare&) = delete;
  ~JoinShare() {
    for (const int fd : fds) own_close(fd);
  }
  prov::xdp::DeviceShare device;
  std::vector<prov::xdp::QueueShare> queues;  // each with the child's own socket
  int packet = -1;                            // the child's PacketTx socket
  std::vector<int> fds;                       // closed with it
};

// Child: the owner's share of ifname's rings. 0 or -errno (-ENOENT: no
// owner answers, -ETIMEDOUT: no answer within a second).
int fork_join_ask(const std::string& ifname, JoinShare* out);
#endif
// Child: slot `slot` takes its share of the new connections to TCP
// (ip, port) on ifname from now on. 0 or -errno.
int fork_join_group(const std::string& ifname, const net::IpAddr& ip, uint16_t port, int slot);

// Child: the connection its parent closed after the fork and left for a
// child (tcp_park.h), the parent's record `id`: its netdev in *ifname and
// its state (encode_handover's bytes) in *bytes, the parent's no more.
// 0 or -errno (-EBUSY: the parent still holds it; -ENOENT: not left).
int fork_join_take(uint64_t id, std::string* ifname, std::vector<uint8_t>* bytes);

// Owner (fork_share_serve): a request datagram that came from `from`,
// sent by process `asker` (ours: one fork_share_serve answers): whether
// it was one of these (then answered; another process's with EPERM).
bool fork_join_serve(int sock, const void* msg, size_t len, const sockaddr_un& from,
                     socklen_t from_len, pid_t asker, bool ours);

}  // namespace ss::vma::preload
