// The tcp provider's endpoint: the util stream over a kernel TCP socket,
// plus what TCP itself asks for (no Nagle, a lingering close, giving way
// to the softirq work that delivers loopback traffic).
#pragma once
#include "core/prov/util/stream_endpoint.h"

namespace ss::prov::tcp {

// The hello tag is a wire value (util/frame.h): 2 since the first release.
inline constexpr util::StreamProto kProto{"tcp", 2, 64 * 1024};

class TcpEndpoint final : public util::StreamEndpoint {
 public:
  // Active: `fd` is the rsocket's non-blocking TCP socket; connect() dials `dst`.
  static std::unique_ptr<TcpEndpoint> make_active(int fd, const sockaddr* dst, socklen_t len);
  // Passive (StreamListener::PassiveFactory): `fd` is accepted, its hello read.
  static std::unique_ptr<Endpoint> make_passive(int fd, const uint8_t* pdata, size_t len);

  // After exec (ConnectionOps::restore): the connection on `fd`, from
  // what save_for_exec wrote; nullptr when the state is not one.
  static std::unique_ptr<Endpoint> make_restored(int fd, const uint8_t* state, size_t len);

  uint32_t caps() const override;
  bool save_for_exec(std::vector<uint8_t>* out, std::vector<int>* keep) const override;
  int poll_cq(Completion* wc, int max) override;
  void close_descriptor(int fd) override;
  // A connection through the side channel (side_probe.h) runs between a
  // port of the peer's and the side port; the program's names show the
  // program's port instead: the peer's (active) or ours (passive).
  void show_port(uint16_t port) { shown_port_ = port; }
  int local_name(sockaddr_storage* addr, socklen_t* len) const override;
  int peer_name(sockaddr_storage* addr, socklen_t* len) const override;

 private:
  TcpEndpoint(int fd, bool active);
  unsigned empty_polls_ = 0;
  uint16_t shown_port_ = 0;
  bool active_side_;
};

}  // namespace ss::prov::tcp
