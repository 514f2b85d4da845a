#include "core/net/netlink_socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ss::net {

int NetlinkSocket::open(std::span<const unsigned> groups, int rcvbuf,
                        std::unique_ptr<NetlinkSocket>* out) {
  mnl_socket* nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (!nl) return -errno;
  std::unique_ptr<NetlinkSocket> s(new NetlinkSocket(nl));
  if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) return -errno;
  s->portid_ = mnl_socket_get_portid(nl);
  for (unsigned g : groups)
    if (mnl_socket_setsockopt(nl, NETLINK_ADD_MEMBERSHIP, &g, sizeof g) < 0) return -errno;
  if (rcvbuf > 0 && setsockopt(s->fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0)
    return -errno;
  *out = std::move(s);
  return 0;
}

NetlinkSocket::~NetlinkSocket() { mnl_socket_close(nl_); }

nlmsghdr* NetlinkSocket::start_header(uint16_t type, uint16_t flags) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf_.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | flags;
  return nlh;
}

namespace {
int run_handler(const nlmsghdr* nlh, void* data) {
  (*static_cast<const NetlinkSocket::Handler*>(data))(nlh);
  return MNL_CB_OK;
}
}  // namespace

int NetlinkSocket::request(nlmsghdr* nlh, const Handler& on_msg) {
  // A single answer has no end marker of its own: the acknowledgement
  // after it is the end (a dump ends with NLMSG_DONE instead).
  if (!(nlh->nlmsg_flags & NLM_F_DUMP)) nlh->nlmsg_flags |= NLM_F_ACK;
  const uint32_t seq = nlh->nlmsg_seq = ++seq_;
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) return -errno;
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl_, buf_.data(), buf_.size());
    if (n < 0) return -errno;
    // A leftover of an earlier request (another sequence number; the
    // kernel never mixes two answers in one read): skip it.
    if (static_cast<size_t>(n) >= sizeof(nlmsghdr) &&
        reinterpret_cast<const nlmsghdr*>(buf_.data())->nlmsg_seq != seq)
      continue;
    const int rc = mnl_cb_run(buf_.data(), static_cast<size_t>(n), seq, portid_, run_handler,
                              const_cast<Handler*>(&on_msg));
    if (rc == MNL_CB_STOP) return 0;
    if (rc == MNL_CB_ERROR) return -errno;
  }
}

int NetlinkSocket::drain(const Handler& on_msg) {
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl_, buf_.data(), buf_.size());
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    // Events carry sequence 0 and the kernel's port: nothing to match.
    if (mnl_cb_run(buf_.data(), static_cast<size_t>(n), 0, 0, run_handler,
                   const_cast<Handler*>(&on_msg)) == MNL_CB_ERROR)
      return -errno;
  }
}

void netlink_attrs(const nlmsghdr* nlh, size_t hdrlen, const nlattr** tb, uint16_t max) {
  for (uint16_t i = 0; i <= max; i++) tb[i] = nullptr;
  for_each_attr(mnl_nlmsg_get_payload_offset(nlh, hdrlen), mnl_nlmsg_get_payload_tail(nlh),
                [&](const nlattr* a) {
                  const uint16_t t = mnl_attr_get_type(a);
                  if (t <= max) tb[t] = a;
                });
}

void for_each_attr(const void* begin, const void* end,
                   const std::function<void(const nlattr*)>& fn) {
  // libmnl's mnl_attr_for_each macros assign void* (C only).
  const auto* a = static_cast<const nlattr*>(begin);
  while (mnl_attr_ok(
      a, static_cast<int>(static_cast<const char*>(end) - reinterpret_cast<const char*>(a)))) {
    fn(a);
    a = mnl_attr_next(a);
  }
}

uint32_t attr_u32(const nlattr* a, uint32_t dflt) {
  return a && mnl_attr_get_payload_len(a) >= sizeof(uint32_t) ? mnl_attr_get_u32(a) : dflt;
}

std::string attr_str(const nlattr* a) {
  if (!a) return {};
  const auto* p = static_cast<const char*>(mnl_attr_get_payload(a));
  return std::string(p, strnlen(p, mnl_attr_get_payload_len(a)));
}

}  // namespace ss::net
