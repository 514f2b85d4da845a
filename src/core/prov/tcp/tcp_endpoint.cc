#include "core/prov/tcp/tcp_endpoint.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "core/base/pod_bytes.h"
#include "core/base/sandbox.h"
#include "core/prov/sock_addr.h"
#include "core/prov/util/lingering_close.h"

namespace ss::prov::tcp {

namespace {
constexpr unsigned kYieldEvery = 32;
}  // namespace

TcpEndpoint::TcpEndpoint(int fd, bool active)
    : StreamEndpoint(kProto, fd, active), active_side_(active) {
  // Frames are messages: never hold one back waiting for more (Nagle).
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::unique_ptr<TcpEndpoint> TcpEndpoint::make_active(int fd, const sockaddr* dst, socklen_t len) {
  std::unique_ptr<TcpEndpoint> ep(new TcpEndpoint(fd, true));
  if (!ep->set_destination(dst, len)) return nullptr;
  return ep;
}

std::unique_ptr<Endpoint> TcpEndpoint::make_passive(int fd, const uint8_t* pdata, size_t len) {
  std::unique_ptr<TcpEndpoint> ep(new TcpEndpoint(fd, false));
  ep->init_passive(pdata, len);
  return ep;
}

namespace {
// What the tcp endpoint adds before the stream's hand-over state.
struct ExecState {
  bool active_side;
  uint16_t shown_port;
};
}  // namespace

bool TcpEndpoint::save_for_exec(std::vector<uint8_t>* out, std::vector<int>* keep) const {
  keep->push_back(fd_);  // the rsocket's own descriptor too
  put_pod(out, ExecState{active_side_, shown_port_});
  return save_handover(out);
}

std::unique_ptr<Endpoint> TcpEndpoint::make_restored(int fd, const uint8_t* state, size_t len) {
  PodReader r(state, len);
  ExecState st{};
  if (!r.get(&st)) return nullptr;
  size_t rest_len = 0;
  const uint8_t* rest = r.rest(&rest_len);
  std::unique_ptr<TcpEndpoint> ep(new TcpEndpoint(fd, st.active_side));
  ep->show_port(st.shown_port);
  if (!ep->load_handover(rest, rest_len)) return nullptr;
  return ep;
}

uint32_t TcpEndpoint::caps() const {
  // The peer speaks our framing, and a post is one sendmsg that copies
  // into the kernel: a 64 KiB message is one frame, not six.
  return StreamEndpoint::caps() | kCapUnchunked;
}

int TcpEndpoint::poll_cq(Completion* wc, int max) {
  int n = StreamEndpoint::poll_cq(wc, max);
  // Loopback TCP is delivered by softirq work that may be pushed to
  // ksoftirqd; a caller spinning on us would keep it off the CPU for a
  // scheduler tick or more per message. Give way now and then.
  if (n == 0 && ++empty_polls_ % kYieldEvery == 0) sandbox::yield_cpu();
  if (n) empty_polls_ = 0;
  return n;
}

int TcpEndpoint::local_name(sockaddr_storage* addr, socklen_t* len) const {
  int rc = StreamEndpoint::local_name(addr, len);
  if (rc == 0 && shown_port_ && !active_side_) set_port(addr, shown_port_);
  return rc;
}

int TcpEndpoint::peer_name(sockaddr_storage* addr, socklen_t* len) const {
  int rc = StreamEndpoint::peer_name(addr, len);
  if (rc == 0 && shown_port_ && active_side_) set_port(addr, shown_port_);
  return rc;
}

void TcpEndpoint::close_descriptor(int fd) {
  if (fd != fd_) return StreamEndpoint::close_descriptor(fd);
  // Closing with unread bytes would reset the stream and lose our tail.
  set_async_progress(false);
  util::lingering_close(fd);
}

}  // namespace ss::prov::tcp
