// A NETLINK_ROUTE socket over libmnl, non-blocking: the kernel answers a
// rtnetlink request while the request is sent (a dump's later parts while
// the earlier ones are read), so waiting never happens and a reader on a
// data path is never put to sleep here. Two uses: requests (one answer or a
// dump, matched by sequence number) and, joined to multicast groups, a
// stream of change events drained when its fd is readable.
#pragma once
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ss::net {

class NetlinkSocket {
 public:
  using Handler = std::function<void(const nlmsghdr*)>;

  // Joins every RTNLGRP_* of `groups` (none: a request socket); `rcvbuf`
  // > 0 sets the receive buffer (how many events may queue). 0 or -errno.
  static int open(std::span<const unsigned> groups, int rcvbuf,
                  std::unique_ptr<NetlinkSocket>* out);
  ~NetlinkSocket();
  NetlinkSocket(const NetlinkSocket&) = delete;
  NetlinkSocket& operator=(const NetlinkSocket&) = delete;

  int fd() const { return mnl_socket_get_fd(nl_); }

  // A message of `type` and `flags` (NLM_F_REQUEST added) in this
  // socket's buffer, with a zeroed `Extra` header after it (rtmsg,
  // ndmsg...): fill it, add attributes (mnl_attr_put*), then request().
  template <class Extra>
  nlmsghdr* start(uint16_t type, uint16_t flags, Extra** extra) {
    nlmsghdr* nlh = start_header(type, flags);
    *extra = static_cast<Extra*>(mnl_nlmsg_put_extra_header(nlh, sizeof(Extra)));
    return nlh;
  }
  // Sends the message start() made and runs `on_msg` for every answer
  // until the kernel's acknowledgement or the dump's end. 0, or -errno:
  // the kernel's error for this request, or the socket's.
  int request(nlmsghdr* nlh, const Handler& on_msg);

  // Runs `on_msg` for every message queued now. 0 once drained; -ENOBUFS
  // when the kernel dropped messages (the reader's view is out of date);
  // another -errno on failure.
  int drain(const Handler& on_msg);

 private:
  explicit NetlinkSocket(mnl_socket* nl) : nl_(nl), buf_(kBufSize) {}
  nlmsghdr* start_header(uint16_t type, uint16_t flags);
  static constexpr size_t kBufSize = 32768;  // a dump part and more
  mnl_socket* nl_;
  uint32_t portid_ = 0;
  uint32_t seq_ = 0;
  std::vector<char> buf_;
};

// The attributes of `nlh` after its `hdrlen`-byte header, by type (types
// above `max` ignored, absent ones null).
void netlink_attrs(const nlmsghdr* nlh, size_t hdrlen, const nlattr** tb, uint16_t max);
// Every attribute from `begin` to `end` (a message's or a nest's payload).
void for_each_attr(const void* begin, const void* end,
                   const std::function<void(const nlattr*)>& fn);
// The attribute's u32 payload, or `dflt` when absent or too short.
uint32_t attr_u32(const nlattr* a, uint32_t dflt);
// The attribute's string payload (up to its NUL), empty when absent.
std::string attr_str(const nlattr* a);

}  // namespace ss::net
