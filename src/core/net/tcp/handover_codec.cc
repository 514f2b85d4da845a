#include "core/net/tcp/handover_codec.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace ss::net::tcp {
namespace {

constexpr uint32_t kMagic = 0x48414e31;  // "HAN1": this layout

// The fixed part, then sent, unsent and unread bytes in that order.
struct Fixed {
  uint32_t magic;
  uint16_t family, local_port, remote_port;
  uint8_t local[16], remote[16];
  uint32_t snd_una, rcv_nxt, snd_wl1, snd_wnd, max_snd_wnd, rcv_wnd, rcv_wup, peer_mss;
  uint32_t ts_val, ts_recent;
  uint8_t window_scaling, sack, timestamps, snd_wscale, rcv_wscale;
  uint8_t fin, fin_sent, fin_queued, fin_acked, ours_first;
  uint64_t sent, unsent, unread;
};
static_assert(std::is_trivially_copyable_v<Fixed>);

bool flag(uint8_t v, bool* out) {
  *out = v == 1;
  return v <= 1;
}

}  // namespace

std::vector<uint8_t> encode_handover(const FourTuple& t, const Handover& h) {
  Fixed f{};
  f.magic = kMagic;
  f.family = t.local.family;
  f.local_port = t.local_port;
  f.remote_port = t.remote_port;
  memcpy(f.local, t.local.bytes, sizeof f.local);
  memcpy(f.remote, t.remote.bytes, sizeof f.remote);
  f.snd_una = h.snd_una;
  f.rcv_nxt = h.rcv_nxt;
  f.snd_wl1 = h.snd_wl1;
  f.snd_wnd = h.snd_wnd;
  f.max_snd_wnd = h.max_snd_wnd;
  f.rcv_wnd = h.rcv_wnd;
  f.rcv_wup = h.rcv_wup;
  f.peer_mss = h.peer_mss;
  f.ts_val = h.ts_val;
  f.ts_recent = h.ts_recent;
  f.window_scaling = h.window_scaling;
  f.sack = h.sack;
  f.timestamps = h.timestamps;
  f.snd_wscale = h.snd_wscale;
  f.rcv_wscale = h.rcv_wscale;
  f.fin = h.fin;
  f.fin_sent = h.fin_sent;
  f.fin_queued = h.fin_queued;
  f.fin_acked = h.fin_acked;
  f.ours_first = h.ours_first;
  f.sent = h.sent.size();
  f.unsent = h.unsent.size();
  f.unread = h.unread.size();
  std::vector<uint8_t> out(sizeof f);
  memcpy(out.data(), &f, sizeof f);
  for (const auto* v : {&h.sent, &h.unsent, &h.unread}) out.insert(out.end(), v->begin(), v->end());
  return out;
}

int decode_handover(std::span<const uint8_t> bytes, FourTuple* t, Handover* h) {
  Fixed f;
  if (bytes.size() < sizeof f) return -EINVAL;
  memcpy(&f, bytes.data(), sizeof f);
  const size_t rest = bytes.size() - sizeof f;
  if (f.magic != kMagic || (f.family != AF_INET && f.family != AF_INET6) || f.snd_wscale > 14 ||
      f.rcv_wscale > 14 || f.sent > rest || f.unsent > rest - f.sent ||
      f.unread != rest - f.sent - f.unsent)
    return -EINVAL;
  Handover out;
  if (!flag(f.window_scaling, &out.window_scaling) || !flag(f.sack, &out.sack) ||
      !flag(f.timestamps, &out.timestamps) || !flag(f.fin, &out.fin) ||
      !flag(f.fin_sent, &out.fin_sent) || !flag(f.fin_queued, &out.fin_queued) ||
      !flag(f.fin_acked, &out.fin_acked) || !flag(f.ours_first, &out.ours_first))
    return -EINVAL;
  FourTuple tuple;
  const size_t alen = f.family == AF_INET ? 4 : 16;
  tuple.local = IpAddr::raw(f.family, f.local, alen);
  tuple.remote = IpAddr::raw(f.family, f.remote, alen);
  tuple.local_port = f.local_port;
  tuple.remote_port = f.remote_port;
  out.snd_una = f.snd_una;
  out.rcv_nxt = f.rcv_nxt;
  out.snd_wl1 = f.snd_wl1;
  out.snd_wnd = f.snd_wnd;
  out.max_snd_wnd = f.max_snd_wnd;
  out.rcv_wnd = f.rcv_wnd;
  out.rcv_wup = f.rcv_wup;
  out.peer_mss = f.peer_mss;
  out.ts_val = f.ts_val;
  out.ts_recent = f.ts_recent;
  out.snd_wscale = f.snd_wscale;
  out.rcv_wscale = f.rcv_wscale;
  const uint8_t* p = bytes.data() + sizeof f;
  out.sent.assign(p, p + f.sent);
  p += f.sent;
  out.unsent.assign(p, p + f.unsent);
  p += f.unsent;
  out.unread.assign(p, p + f.unread);
  *t = tuple;
  *h = std::move(out);
  return 0;
}

}  // namespace ss::net::tcp
