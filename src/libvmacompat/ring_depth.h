// The depth of the AF_XDP rings libvma.so puts on each receive queue of a
// netdev, and the UMEM behind them, from VMA_RX_WRE and VMA_TX_WRE (libvma's
// work requests per queue pair): AF_XDP wants powers of two, so
//   fill = rx       VMA_RX_WRE rounded up to a power of two (at least 64):
//                   libvma posts that many receive buffers, our fill ring
//                   holds that many, and the rx ring can take them all
//   tx = completion VMA_TX_WRE rounded the same way
//   frames          fill + tx + fill / 2 rounded up to a power of two (the
//                   pool's own rule): the half ring is the least the program
//                   may hold besides (frames unread, queued on sockets, lent
//                   by recvfrom_zcopy or socketXtreme, UdpTx's spares)
// each frame 2048 bytes, so a queue costs frames x 2048 bytes of locked
// memory (defaults 16000 and 2048: 32768 frames, 64 MiB).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/base/api.h"

namespace ss::vma {

struct RingDepth {
  uint32_t fill = 0, rx = 0, tx = 0, completion = 0;
  size_t frames = 0;
  size_t frame_size = 0;
  size_t bytes() const { return frames * frame_size; }
  // The frames beyond the fill and tx rings (the program's share).
  size_t spare_frames() const { return frames - fill - tx; }
};

// From the two values (each within the settings' range, 1..32768).
SS_API RingDepth ring_depth(int64_t rx_wre, int64_t tx_wre);
// From the settings in effect (VMA_RX_WRE, VMA_TX_WRE, VMA_SPEC, VMA_SOCKETXTREME).
SS_API RingDepth ring_depth();

}  // namespace ss::vma
