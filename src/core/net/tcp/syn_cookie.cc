#include "core/net/tcp/syn_cookie.h"

#include <algorithm>
#include <iterator>

namespace ss::net::tcp {

namespace {

constexpr uint64_t kSlotUs = 64'000'000;
constexpr uint32_t kLow24 = 0xffffff;
// The MSS a cookie can say (Ethernet, IPv6's minimum, tunnels, jumbo);
// the peer's is taken down to the nearest.
constexpr uint16_t kMssTable[] = {536, 1220, 1360, 1440, 1460, 8960};
constexpr uint32_t kTsBits = 6, kTsMask = (1u << kTsBits) - 1;
constexpr uint32_t kNoWscale = 0xf;  // in the 4 window-scale bits
constexpr uint32_t kTsFlag = 8;      // beside the MSS index: our SYN-ACK had timestamps

const SecretHash& process_key() {
  static const SecretHash* key = new SecretHash;  // outlives static destructors
  return *key;
}

}  // namespace

SynCookies::SynCookies() : hash_(process_key()) {}

uint32_t SynCookies::hash24(const FourTuple& t, uint32_t peer_isn, uint32_t slot) const {
  return static_cast<uint32_t>(hash_(t, uint64_t{peer_isn} | (uint64_t{slot} << 32))) & kLow24;
}

uint32_t SynCookies::make(const FourTuple& t, uint32_t peer_isn, const Options& syn,
                          uint64_t now_us, uint32_t ts_now, uint32_t* ts_val) const {
  const uint16_t mss = syn.has_mss ? syn.mss : kMssTable[0];
  uint32_t idx = 0;
  for (uint32_t i = 0; i < std::size(kMssTable); i++) {
    if (kMssTable[i] <= mss) idx = i;
  }
  const uint32_t slot = static_cast<uint32_t>(now_us / kSlotUs);
  if (syn.has_ts && ts_val) {
    idx |= kTsFlag;
    const uint32_t opts =
        ((syn.has_wscale ? syn.wscale : kNoWscale) << 1) | (syn.sack_permitted ? 1 : 0);
    uint32_t ts = (ts_now & ~kTsMask) | opts;
    if (ts > ts_now) ts -= kTsMask + 1;  // never ahead of our clock
    *ts_val = ts;
  }
  return ((slot & 0xff) << 24) | ((hash24(t, peer_isn, slot) + idx) & kLow24);
}

bool SynCookies::check(const FourTuple& t, uint32_t seq, uint32_t ack, const Options& opts,
                       uint64_t now_us, CookieState* out) const {
  const uint32_t cookie = ack - 1, peer_isn = seq - 1;
  const uint32_t now_slot = static_cast<uint32_t>(now_us / kSlotUs);
  for (uint32_t age = 0; age < 2 && age <= now_slot; age++) {
    const uint32_t slot = now_slot - age;
    if ((slot & 0xff) != cookie >> 24) continue;
    const uint32_t idx = ((cookie & kLow24) - hash24(t, peer_isn, slot)) & kLow24;
    const uint32_t mss_idx = idx & ~kTsFlag;
    if (idx > (kTsFlag | 7) || mss_idx >= std::size(kMssTable)) return false;
    // Timestamps, once in our SYN-ACK, must come back (RFC 7323 §3.2):
    // without the echo the options it carries are gone.
    const bool ts = idx & kTsFlag;
    if (ts != (opts.has_ts && opts.ts_ecr != 0)) return false;
    *out = CookieState{};
    out->mss = kMssTable[mss_idx];
    if (ts) {  // our SYN-ACK's timestamp, echoed
      out->ts = true;
      const uint32_t ws = (opts.ts_ecr >> 1) & 0xf;
      out->has_wscale = ws != kNoWscale;
      out->wscale = static_cast<uint8_t>(std::min<uint32_t>(ws, kMaxWscale));
      out->sack = opts.ts_ecr & 1;
    }
    return true;
  }
  return false;
}

}  // namespace ss::net::tcp
