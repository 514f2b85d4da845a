#include "vma_preload/tcp_options.h"

#include <netinet/tcp.h>

#include <algorithm>
#include <atomic>

#include "core/base/fd_table.h"
#include "core/base/proc_sys.h"
#include "interpose/real.h"
#include "libvmacompat/ring_depth.h"
#include "libvmacompat/settings.h"
#include "vma_preload/socket_record.h"

namespace ss::vma::preload {

using interpose::real;

namespace {

int sock_int(int fd, int level, int name) {
  int v = 0;
  socklen_t len = sizeof v;
  return real().getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}

// What the kernel's TCP is told: read once, as Linux reads its sysctls
// when a socket opens (a process keeps what it read).
struct KernelTcp {
  uint32_t wmem_max;  // tcp_wmem's third field: the largest a send buffer grows to
  uint32_t rmem_max;  // tcp_rmem's: the largest a receive buffer grows to
  bool timestamps, window_scaling, sack;
};
const KernelTcp& kernel_tcp() {
  static const KernelTcp k{static_cast<uint32_t>(std::clamp<long>(
                               proc_sys_number("net/ipv4/tcp_wmem", 2, 4 << 20), 4096, 1 << 30)),
                           static_cast<uint32_t>(std::clamp<long>(
                               proc_sys_number("net/ipv4/tcp_rmem", 2, 6 << 20), 4096, 1 << 30)),
                           proc_sys_number("net/ipv4/tcp_timestamps", 0, 1) != 0,
                           proc_sys_number("net/ipv4/tcp_window_scaling", 0, 1) != 0,
                           proc_sys_number("net/ipv4/tcp_sack", 0, 1) != 0};
  return k;
}

// The options setsockopt may set on a connection that the stack acts on.
struct OptionRow {
  int level, name;
  net::tcp::Option o;
  // The program's unit in microseconds; 0: a flag; kKernelKeeps: the
  // value is what the kernel socket keeps (SO_RCVBUF and SO_SNDBUF:
  // doubled and bounded), read back from it under `kept`.
  int64_t unit;
  int kept = 0;
};
constexpr int64_t kSecondUs = 1'000'000, kMilliUs = 1000, kKernelKeeps = -1;
constexpr OptionRow kOptionRows[] = {
    {SOL_SOCKET, SO_RCVBUF, net::tcp::Option::kRcvBuf, kKernelKeeps, SO_RCVBUF},
    {SOL_SOCKET, SO_RCVBUFFORCE, net::tcp::Option::kRcvBuf, kKernelKeeps, SO_RCVBUF},
    {SOL_SOCKET, SO_SNDBUF, net::tcp::Option::kSndBuf, kKernelKeeps, SO_SNDBUF},
    {SOL_SOCKET, SO_SNDBUFFORCE, net::tcp::Option::kSndBuf, kKernelKeeps, SO_SNDBUF},
    {IPPROTO_TCP, TCP_NODELAY, net::tcp::Option::kNodelay, 0},
    {IPPROTO_TCP, TCP_CORK, net::tcp::Option::kCork, 0},
    {IPPROTO_TCP, TCP_QUICKACK, net::tcp::Option::kQuickack, 0},
    {SOL_SOCKET, SO_KEEPALIVE, net::tcp::Option::kKeepalive, 0},
    {IPPROTO_TCP, TCP_KEEPIDLE, net::tcp::Option::kKeepIdle, kSecondUs},
    {IPPROTO_TCP, TCP_KEEPINTVL, net::tcp::Option::kKeepIntvl, kSecondUs},
    {IPPROTO_TCP, TCP_KEEPCNT, net::tcp::Option::kKeepCnt, 1},
    {IPPROTO_TCP, TCP_USER_TIMEOUT, net::tcp::Option::kUserTimeout, kMilliUs},
};

int64_t option_value(const OptionRow& r, int v) {
  return r.unit == kKernelKeeps ? v : r.unit ? int64_t{v} * r.unit : v != 0;
}

// f(row, value) for each option the kernel socket fd keeps (what the
// program set, or Linux's default), TCP_QUICKACK (a passing state) and
// the buffers (setting what the kernel keeps would double it; tcp_config_of
// reads them) aside.
template <class F>
void each_kept_option(int fd, const F& f) {
  for (const OptionRow& r : kOptionRows)
    if (r.name != TCP_QUICKACK && r.unit != kKernelKeeps)
      if (const int v = sock_int(fd, r.level, r.name); v >= 0) f(r, v);
}

}  // namespace

net::tcp::Config tcp_config_of(int fd) {
  using settings::Id;
  net::tcp::Config cfg;
  cfg.mss = 0xffff;  // the path's MTU and the rings' frames bound it (tcp::Stack)
  const KernelTcp& k = kernel_tcp();
  // The kernel socket's buffers (what setsockopt set, or the system's
  // defaults) bound the windows; TCP_NODELAY as set.
  if (const int rb = sock_int(fd, SOL_SOCKET, SO_RCVBUF); rb > 0)
    cfg.rcv_buf = static_cast<uint32_t>(rb);
  if (const int sb = sock_int(fd, SOL_SOCKET, SO_SNDBUF); sb > 0)
    cfg.snd_buf = static_cast<uint32_t>(sb);
  const auto rec = ss::FdTable::instance().get<SocketRecord>(fd, ss::FdKind::kVmaSocket);
  if (!rec || !rec->sndbuf_set.load(std::memory_order_relaxed))
    cfg.snd_buf_max = k.wmem_max;  // autotuned
  // Autotuned, a connection's window bounded so that it pins at most half
  // the program's share of a queue's frames (each held frame carries at
  // least ReceiveQueue::kCoalesceBelow bytes): one slow reader cannot
  // starve the rings.
  if (!rec || !rec->rcvbuf_set.load(std::memory_order_relaxed))
    cfg.rcv_buf_max = static_cast<uint32_t>(std::min<size_t>(
        k.rmem_max, ring_depth().spare_frames() / 2 * net::tcp::ReceiveQueue::kCoalesceBelow));
  each_kept_option(
      fd, [&](const OptionRow& r, int v) { net::tcp::set_option(&cfg, r.o, option_value(r, v)); });
  cfg.nodelay = cfg.nodelay || settings::get(Id::kTcpNodelay);
  if (const int64_t mss = settings::get(Id::kMss); mss > 0)
    cfg.mss = static_cast<uint16_t>(std::min<int64_t>(mss, cfg.mss));
  // libvma's VMA_TCP_* and ours; the kernel's sysctls where Linux's TCP
  // would follow them.
  cfg.cc = static_cast<net::tcp::CcAlgo>(settings::get(Id::kTcpCcAlgo));
  cfg.quickack = settings::get(Id::kTcpQuickack) != 0;
  const int64_t ts = settings::get(Id::kTcpTimestampOption);
  cfg.timestamps = ts == 1 || (ts == 2 && k.timestamps);
  cfg.window_scaling = k.window_scaling;
  cfg.sack = settings::get(Id::kTcpSack) && k.sack;
  cfg.msl_us = static_cast<uint64_t>(settings::get(Id::kTcpMsl)) * 1000;
  cfg.min_rto_us = std::min<uint64_t>(static_cast<uint64_t>(settings::get(Id::kTcpMinRto)) * 1000,
                                      cfg.max_rto_us);
  return cfg;
}

bool tcp_option_of(int fd, int level, int name, int v, net::tcp::Option* o, int64_t* value) {
  for (const OptionRow& r : kOptionRows)
    if (r.level == level && r.name == name) {
      *o = r.o;
      *value = option_value(r, r.kept && fd >= 0 ? sock_int(fd, r.level, r.kept) : v);
      return true;
    }
  return false;
}

namespace {
KeptOption int_option(const OptionRow& r, int v) {
  KeptOption o{r.level, r.name, sizeof(int), {}};
  o.value.i = v;
  return o;
}
}  // namespace

std::vector<KeptOption> options_to_inherit(int listener) {
  static const std::vector<KeptOption> defaults = [] {
    std::vector<KeptOption> d;
    const int fd = real().socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return d;  // every option is then copied
    each_kept_option(fd, [&](const OptionRow& r, int v) { d.push_back(int_option(r, v)); });
    real().close(fd);
    return d;
  }();
  std::vector<KeptOption> out;
  each_kept_option(listener, [&](const OptionRow& r, int v) {
    for (const KeptOption& d : defaults)
      if (d.level == r.level && d.name == r.name && d.value.i == v) return;
    out.push_back(int_option(r, v));
  });
  // Flags Linux's accepted socket copies from its listener (sock_copy),
  // where the listener's differ from a new socket's.
  static const int v6only_default = proc_sys_number("net/ipv6/bindv6only", 0, 0) != 0;
  constexpr struct {
    int level, name;
  } kFlags[] = {
      {SOL_SOCKET, SO_REUSEADDR}, {SOL_SOCKET, SO_REUSEPORT}, {IPPROTO_IPV6, IPV6_V6ONLY}};
  for (const auto& f : kFlags) {
    const int v = sock_int(listener, f.level, f.name);  // -1: not of its family
    if (v >= 0 && v != (f.name == IPV6_V6ONLY ? v6only_default : 0)) {
      KeptOption o{f.level, f.name, sizeof(int), {}};
      o.value.i = v;
      out.push_back(o);
    }
  }
  KeptOption l{SOL_SOCKET, SO_LINGER, sizeof(::linger), {}};
  socklen_t len = sizeof l.value.l;
  if (real().getsockopt(listener, SOL_SOCKET, SO_LINGER, &l.value.l, &len) == 0 &&
      l.value.l.l_onoff)
    out.push_back(l);  // off, a new socket's default, needs nothing
  return out;
}

void set_kept_options(int fd, const std::vector<KeptOption>& options) {
  for (const KeptOption& o : options) real().setsockopt(fd, o.level, o.name, &o.value, o.len);
}

}  // namespace ss::vma::preload
