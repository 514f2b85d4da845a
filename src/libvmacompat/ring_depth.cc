#include "libvmacompat/ring_depth.h"

#include "libvmacompat/settings.h"

namespace ss::vma {
namespace {

constexpr uint32_t kMinEntries = 64;  // a receive burst (32) twice over; UdpTx keeps 64 spares
constexpr size_t kFrameSize = 2048;   // an Ethernet frame at MTU 1500 with XDP's headroom

uint64_t pow2_at_least(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

uint32_t entries(int64_t wre) {
  const uint64_t v = wre < kMinEntries ? kMinEntries : static_cast<uint64_t>(wre);
  return static_cast<uint32_t>(pow2_at_least(v));
}

}  // namespace

RingDepth ring_depth(int64_t rx_wre, int64_t tx_wre) {
  RingDepth d;
  d.fill = d.rx = entries(rx_wre);
  d.tx = d.completion = entries(tx_wre);
  d.frames = pow2_at_least(uint64_t{d.fill} + d.tx + d.fill / 2);
  d.frame_size = kFrameSize;
  return d;
}

RingDepth ring_depth() {
  return ring_depth(settings::get(settings::Id::kRxWre), settings::get(settings::Id::kTxWre));
}

}  // namespace ss::vma
